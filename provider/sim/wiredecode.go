package sim

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/buildlab/budge/internal/jsontext"
)

// decodeWire reads a chat completions request into w as json.Unmarshal
// would, for the requests clients send: it reports false, leaving the
// request to json.Unmarshal, for anything it does not read exactly as
// json.Unmarshal does (a key given twice or in other letter case, a string
// with an escaped surrogate or bytes that are not UTF-8, content given as
// parts, a value of another type than the field's, JSON that is not
// valid). Decoding a request was a quarter of what the server spent on a
// call; this reads one in a fraction of json.Unmarshal's time.
func decodeWire(b []byte, w *wireRequest) bool {
	d := wireDecoder{b: b}
	return d.whole(func(key string) bool {
		switch key {
		case "model":
			return d.str(&w.Model)
		case "messages":
			return d.messages(&w.Messages)
		case "tools":
			return d.tools(&w.Tools)
		case "response_format":
			return d.responseFormat(&w.ResponseFormat)
		case "seed":
			return d.int64Ptr(&w.Seed)
		case "temperature":
			return d.float64Ptr(&w.Temperature)
		case "max_tokens":
			return d.intPtr(&w.MaxTokens)
		case "max_completion_tokens":
			return d.intPtr(&w.MaxCompletionTokens)
		case "stream":
			return d.boolean(&w.Stream)
		}
		return d.unknown(key, "model", "messages", "tools", "response_format", "seed", "temperature", "max_tokens", "max_completion_tokens", "stream")
	})
}

// inputLine is a line of an OpenAI batch input file.
type inputLine struct {
	CustomID string          `json:"custom_id"`
	Method   string          `json:"method"`
	URL      string          `json:"url"`
	Body     json.RawMessage `json:"body"`
}

// decodeInputLine reads a batch input line into l as json.Unmarshal
// would, l.Body a slice of line (json.Unmarshal copies it); false leaves
// the line to json.Unmarshal, as decodeWire does a request. Reading the
// lines was the larger part of what the server spent creating a batch.
func decodeInputLine(line []byte, l *inputLine) bool {
	d := wireDecoder{b: line}
	return d.whole(func(key string) bool {
		switch key {
		case "custom_id":
			return d.str(&l.CustomID)
		case "method":
			return d.str(&l.Method)
		case "url":
			return d.str(&l.URL)
		case "body":
			return d.rawMessage(&l.Body)
		}
		return d.unknown(key, "custom_id", "method", "url", "body")
	})
}

// wireDecoder reads JSON from b at i.
type wireDecoder struct {
	b     []byte
	i     int
	depth int
}

// whole reads b as one object, field reading each member's value, with
// nothing after it but white space.
func (d *wireDecoder) whole(field func(key string) bool) bool {
	ok := d.object(field)
	d.space()
	return ok && d.i == len(d.b)
}

func (d *wireDecoder) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// next skips white space and tells whether the next byte is c, taking it
// if so.
func (d *wireDecoder) next(c byte) bool {
	d.space()
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// null takes a null, if that is what comes next.
func (d *wireDecoder) null() bool {
	d.space()
	return d.literal("null")
}

// object reads an object, handing each key to field, which reads its
// value. A key given twice, or with an escape in it, is refused.
func (d *wireDecoder) object(field func(key string) bool) bool {
	if !d.next('{') {
		return false
	}
	if d.next('}') {
		return true
	}
	var seen [12]string
	n := 0
	for {
		d.space()
		if d.i >= len(d.b) || d.b[d.i] != '"' {
			return false
		}
		start := d.i + 1
		end := start
		for end < len(d.b) && d.b[end] != '"' {
			if c := d.b[end]; c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
				return false
			}
			end++
		}
		if end >= len(d.b) {
			return false
		}
		key := wireKey(d.b[start:end])
		for _, k := range seen[:n] {
			if k == key {
				return false
			}
		}
		if n == len(seen) {
			return false
		}
		seen[n] = key
		n++
		d.i = end + 1
		if !d.next(':') || !field(key) {
			return false
		}
		if d.next(',') {
			continue
		}
		return d.next('}')
	}
}

// wireKeys are the keys of the request's objects (and of a batch input
// line's).
var wireKeys = []string{"model", "messages", "tools", "response_format", "seed", "temperature", "max_tokens", "max_completion_tokens",
	"stream", "role", "content", "refusal", "tool_call_id", "name", "tool_calls", "id", "type", "function", "arguments",
	"description", "parameters", "json_schema", "schema", "strict", "custom_id", "method", "url", "body"}

// wireKey is b as a string, without a copy for the keys of wireKeys.
func wireKey(b []byte) string {
	for _, k := range wireKeys {
		if string(b) == k {
			return k
		}
	}
	return string(b)
}

// array reads an array, calling elem for each element; empty says it was
// [].
func (d *wireDecoder) array(elem func() bool) (empty, ok bool) {
	if !d.next('[') {
		return false, false
	}
	if d.next(']') {
		return true, true
	}
	for {
		if !elem() {
			return false, false
		}
		if d.next(',') {
			continue
		}
		return false, d.next(']')
	}
}

// unknown skips the value of a key the request's types do not have; a key
// json.Unmarshal would match to one of known by letter case is refused.
func (d *wireDecoder) unknown(key string, known ...string) bool {
	for _, k := range known {
		if strings.EqualFold(key, k) {
			return false
		}
	}
	_, ok := d.raw()
	return ok
}

// str reads a string into s (a null leaves it as it is).
func (d *wireDecoder) str(s *string) bool {
	if d.null() {
		return true
	}
	v, ok := d.text()
	if ok {
		*s = v
	}
	return ok
}

// text reads a string.
func (d *wireDecoder) text() (string, bool) {
	if !d.next('"') {
		return "", false
	}
	start := d.i
	ascii := true
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			s := d.b[start:d.i]
			d.i++
			if !ascii && !utf8.Valid(s) {
				return "", false
			}
			return string(s), true
		case c == '\\':
			return d.escaped(start)
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
		d.i++
	}
	return "", false
}

// escaped reads the rest of a string that holds an escape, from its
// start.
func (d *wireDecoder) escaped(start int) (string, bool) {
	end := d.i
	for end < len(d.b) && d.b[end] != '"' {
		end++
	}
	out := make([]byte, 0, end-start)
	out = append(out, d.b[start:d.i]...)
	for d.i < len(d.b) {
		run := d.i
		for d.i < len(d.b) && d.b[d.i] != '"' && d.b[d.i] != '\\' && d.b[d.i] >= 0x20 {
			d.i++
		}
		out = append(out, d.b[run:d.i]...)
		if d.i >= len(d.b) {
			return "", false
		}
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			if !utf8.Valid(out) {
				return "", false
			}
			return string(out), true
		case c < 0x20:
			return "", false
		}
		if d.i+1 >= len(d.b) {
			return "", false
		}
		e := d.b[d.i+1]
		d.i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			if d.i+4 > len(d.b) {
				return "", false
			}
			r, err := strconv.ParseUint(string(d.b[d.i:d.i+4]), 16, 32)
			if err != nil || (r >= 0xd800 && r < 0xe000) {
				return "", false // a surrogate: json.Unmarshal's to pair
			}
			d.i += 4
			out = utf8.AppendRune(out, rune(r))
		default:
			return "", false
		}
	}
	return "", false
}

func (d *wireDecoder) boolean(v *bool) bool {
	d.space()
	switch {
	case d.literal("true"):
		*v = true
	case d.literal("false"):
		*v = false
	default:
		return d.literal("null")
	}
	return true
}

// number reads a number as JSON spells one.
func (d *wireDecoder) number() (string, bool) {
	d.space()
	start := d.i
	var ok bool
	d.i, ok = jsontext.ScanNumber(d.b, d.i)
	if !ok {
		return "", false
	}
	return string(d.b[start:d.i]), true
}

// numberPtr reads a number into a new value at *p, parse reading it as
// its type does; null sets *p nil.
func numberPtr[T any](d *wireDecoder, p **T, parse func(string) (T, error)) bool {
	if d.null() {
		*p = nil
		return true
	}
	s, ok := d.number()
	if !ok {
		return false
	}
	v, err := parse(s)
	if err != nil {
		return false
	}
	*p = &v
	return true
}

func (d *wireDecoder) int64Ptr(p **int64) bool {
	return numberPtr(d, p, func(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) })
}

func (d *wireDecoder) intPtr(p **int) bool {
	return numberPtr(d, p, func(s string) (int, error) {
		v, err := strconv.ParseInt(s, 10, strconv.IntSize)
		return int(v), err
	})
}

func (d *wireDecoder) float64Ptr(p **float64) bool {
	return numberPtr(d, p, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) })
}

// raw reads any value, checked as JSON, and returns its bytes.
func (d *wireDecoder) raw() ([]byte, bool) {
	d.space()
	start := d.i
	if !d.skip() {
		return nil, false
	}
	return d.b[start:d.i:d.i], true
}

// skip reads past one value, checking it is JSON.
func (d *wireDecoder) skip() bool {
	d.space()
	if d.i >= len(d.b) {
		return false
	}
	switch c := d.b[d.i]; {
	case c == '"':
		var ok bool
		d.i, ok = jsontext.ScanString(d.b, d.i)
		return ok
	case c == '{' || c == '[':
		if d.depth++; d.depth > 200 {
			return false
		}
		ok := d.skipNested(c)
		d.depth--
		return ok
	case c == '-' || '0' <= c && c <= '9':
		_, ok := d.number()
		return ok
	}
	return d.literal("true") || d.literal("false") || d.literal("null")
}

// skipNested reads past an array or an object (c, its first byte).
func (d *wireDecoder) skipNested(c byte) bool {
	if c == '[' {
		_, ok := d.array(d.skip)
		return ok
	}
	d.i++
	if d.next('}') {
		return true
	}
	for {
		d.space()
		if d.i >= len(d.b) || d.b[d.i] != '"' || !d.skip() || !d.next(':') || !d.skip() {
			return false
		}
		if d.next(',') {
			continue
		}
		return d.next('}')
	}
}

// literal takes lit, if that is what comes next.
func (d *wireDecoder) literal(lit string) bool {
	if len(d.b)-d.i >= len(lit) && string(d.b[d.i:d.i+len(lit)]) == lit {
		d.i += len(lit)
		return true
	}
	return false
}

// objects reads an array of objects into *out as json.Unmarshal does
// (null sets it nil, [] to an empty slice), field reading each member of
// an element. The elements go after (*out)[:0], or in a new slice of
// capacity prealloc when *out is nil.
func objects[T any](d *wireDecoder, out *[]T, prealloc int, field func(e *T, key string) bool) bool {
	if d.null() {
		*out = nil
		return true
	}
	list := (*out)[:0]
	if list == nil && prealloc > 0 {
		list = make([]T, 0, prealloc)
	}
	empty, ok := d.array(func() bool {
		var zero T
		list = append(list, zero)
		e := &list[len(list)-1]
		return d.object(func(key string) bool { return field(e, key) })
	})
	if !ok {
		return false
	}
	if empty {
		list = []T{}
	}
	*out = list
	return true
}

// objectPtr reads an object into a new T at *p, field reading each
// member; null sets *p nil.
func objectPtr[T any](d *wireDecoder, p **T, field func(v *T, key string) bool) bool {
	if d.null() {
		*p = nil
		return true
	}
	v := new(T)
	*p = v
	return d.object(func(key string) bool { return field(v, key) })
}

// objectOrNull reads an object as object does; null, as json.Unmarshal
// reads it into a struct, leaves what the object would fill as it is.
func (d *wireDecoder) objectOrNull(field func(key string) bool) bool {
	return d.null() || d.object(field)
}

// rawMessage reads any value into p as raw does.
func (d *wireDecoder) rawMessage(p *json.RawMessage) bool {
	var ok bool
	*p, ok = d.raw()
	return ok
}

func (d *wireDecoder) messages(out *[]wireMessage) bool {
	return objects(d, out, 16, func(m *wireMessage, key string) bool {
		switch key {
		case "role":
			return d.str(&m.Role)
		case "content":
			if d.null() {
				m.Content = nil
				return true
			}
			s, ok := d.text() // parts are left to json.Unmarshal
			m.Content = s
			return ok
		case "refusal":
			if d.null() {
				m.Refusal = nil
				return true
			}
			s, ok := d.text()
			m.Refusal = &s
			return ok
		case "tool_call_id":
			return d.str(&m.ToolCallID)
		case "name":
			return d.str(&m.Name)
		case "tool_calls":
			return d.toolCalls(&m.ToolCalls)
		}
		return d.unknown(key, "role", "content", "refusal", "tool_call_id", "name", "tool_calls")
	})
}

func (d *wireDecoder) toolCalls(out *[]wireToolCall) bool {
	return objects(d, out, 0, func(tc *wireToolCall, key string) bool {
		switch key {
		case "id":
			return d.str(&tc.ID)
		case "type":
			return d.str(&tc.Type)
		case "function":
			return d.objectOrNull(func(key string) bool {
				switch key {
				case "name":
					return d.str(&tc.Function.Name)
				case "arguments":
					return d.str(&tc.Function.Arguments)
				}
				return d.unknown(key, "name", "arguments")
			})
		}
		return d.unknown(key, "id", "type", "function")
	})
}

func (d *wireDecoder) tools(out *[]wireTool) bool {
	return objects(d, out, 0, func(t *wireTool, key string) bool {
		switch key {
		case "type":
			return d.str(&t.Type)
		case "function":
			return d.objectOrNull(func(key string) bool {
				switch key {
				case "name":
					return d.str(&t.Function.Name)
				case "description":
					return d.str(&t.Function.Description)
				case "parameters":
					return d.rawMessage(&t.Function.Parameters)
				}
				return d.unknown(key, "name", "description", "parameters")
			})
		}
		return d.unknown(key, "type", "function")
	})
}

func (d *wireDecoder) responseFormat(p **wireResponseFormat) bool {
	return objectPtr(d, p, func(rf *wireResponseFormat, key string) bool {
		switch key {
		case "type":
			return d.str(&rf.Type)
		case "json_schema":
			return objectPtr(d, &rf.JSONSchema, func(js *wireJSONSchema, key string) bool {
				switch key {
				case "name":
					return d.str(&js.Name)
				case "schema":
					return d.rawMessage(&js.Schema)
				case "strict":
					return d.boolean(&js.Strict)
				}
				return d.unknown(key, "name", "schema", "strict")
			})
		}
		return d.unknown(key, "type", "json_schema")
	})
}
