package sim

import (
	"encoding/json"
	"fmt"
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
	return whole(&d, w, requestFields)
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
	return whole(&d, l, inputLineFields)
}

// wireField is a member of the objects read into a T: its key, as the
// field's json tag spells it, and the field in v it is read into (its type
// says how: see value).
type wireField[T any] struct {
	key string
	at  func(v *T) any
}

// The members of a request's objects, and of a batch input line.
var (
	requestFields = []wireField[wireRequest]{
		{"model", func(w *wireRequest) any { return &w.Model }},
		{"messages", func(w *wireRequest) any { return &w.Messages }},
		{"tools", func(w *wireRequest) any { return &w.Tools }},
		{"response_format", func(w *wireRequest) any { return &w.ResponseFormat }},
		{"seed", func(w *wireRequest) any { return &w.Seed }},
		{"temperature", func(w *wireRequest) any { return &w.Temperature }},
		{"max_tokens", func(w *wireRequest) any { return &w.MaxTokens }},
		{"max_completion_tokens", func(w *wireRequest) any { return &w.MaxCompletionTokens }},
		{"stream", func(w *wireRequest) any { return &w.Stream }},
	}
	messageFields = []wireField[wireMessage]{
		{"role", func(m *wireMessage) any { return &m.Role }},
		{"content", func(m *wireMessage) any { return &m.Content }},
		{"refusal", func(m *wireMessage) any { return &m.Refusal }},
		{"tool_call_id", func(m *wireMessage) any { return &m.ToolCallID }},
		{"name", func(m *wireMessage) any { return &m.Name }},
		{"tool_calls", func(m *wireMessage) any { return &m.ToolCalls }},
	}
	toolCallFields = []wireField[wireToolCall]{
		{"id", func(tc *wireToolCall) any { return &tc.ID }},
		{"type", func(tc *wireToolCall) any { return &tc.Type }},
		{"function", func(tc *wireToolCall) any { return &tc.Function }},
	}
	functionCallFields = []wireField[wireFunctionCall]{
		{"name", func(f *wireFunctionCall) any { return &f.Name }},
		{"arguments", func(f *wireFunctionCall) any { return &f.Arguments }},
	}
	toolFields = []wireField[wireTool]{
		{"type", func(t *wireTool) any { return &t.Type }},
		{"function", func(t *wireTool) any { return &t.Function }},
	}
	functionDeclFields = []wireField[wireFunctionDecl]{
		{"name", func(f *wireFunctionDecl) any { return &f.Name }},
		{"description", func(f *wireFunctionDecl) any { return &f.Description }},
		{"parameters", func(f *wireFunctionDecl) any { return &f.Parameters }},
	}
	responseFormatFields = []wireField[wireResponseFormat]{
		{"type", func(rf *wireResponseFormat) any { return &rf.Type }},
		{"json_schema", func(rf *wireResponseFormat) any { return &rf.JSONSchema }},
	}
	jsonSchemaFields = []wireField[wireJSONSchema]{
		{"name", func(js *wireJSONSchema) any { return &js.Name }},
		{"schema", func(js *wireJSONSchema) any { return &js.Schema }},
		{"strict", func(js *wireJSONSchema) any { return &js.Strict }},
	}
	inputLineFields = []wireField[inputLine]{
		{"custom_id", func(l *inputLine) any { return &l.CustomID }},
		{"method", func(l *inputLine) any { return &l.Method }},
		{"url", func(l *inputLine) any { return &l.URL }},
		{"body", func(l *inputLine) any { return &l.Body }},
	}
)

// whole reads d's bytes as one object into v, as fields does, with
// nothing after it but white space.
func whole[T any](d *wireDecoder, v *T, table []wireField[T]) bool {
	ok := fields(d, v, table)
	d.space()
	return ok && d.i == len(d.b)
}

// fields reads an object into v, each member table names into its field.
// The value of any other key is skipped, but a key json.Unmarshal would
// match to one of table's by letter case is refused.
func fields[T any](d *wireDecoder, v *T, table []wireField[T]) bool {
	return d.object(func(key []byte) bool {
		for i := range table {
			if table[i].key == string(key) {
				return d.value(table[i].at(v))
			}
		}
		for i := range table {
			if strings.EqualFold(string(key), table[i].key) {
				return false
			}
		}
		_, ok := d.raw()
		return ok
	})
}

// value reads a value into p, a field of the request's types or of a
// batch input line, as json.Unmarshal reads one into a field of its type.
func (d *wireDecoder) value(p any) bool {
	switch p := p.(type) {
	case *string:
		return d.str(p)
	case *bool:
		return d.boolean(p)
	case **int64:
		return d.int64Ptr(p)
	case **int:
		return d.intPtr(p)
	case **float64:
		return d.float64Ptr(p)
	case *json.RawMessage:
		var ok bool
		*p, ok = d.raw()
		return ok
	case **string: // a refusal
		if d.null() {
			*p = nil
			return true
		}
		s, ok := d.text()
		*p = &s
		return ok
	case *any: // a message's content: parts are left to json.Unmarshal
		if d.null() {
			*p = nil
			return true
		}
		s, ok := d.text()
		*p = s
		return ok
	case *[]wireMessage:
		return objects(d, p, 16, messageFields)
	case *[]wireToolCall:
		return objects(d, p, 0, toolCallFields)
	case *[]wireTool:
		return objects(d, p, 0, toolFields)
	case *wireFunctionCall: // null leaves a struct as it is
		return d.null() || fields(d, p, functionCallFields)
	case *wireFunctionDecl:
		return d.null() || fields(d, p, functionDeclFields)
	case **wireResponseFormat:
		return objectPtr(d, p, responseFormatFields)
	case **wireJSONSchema:
		return objectPtr(d, p, jsonSchemaFields)
	}
	panic(fmt.Sprintf("sim: no wire decoding for a %T", p))
}

// wireDecoder reads JSON from b at i.
type wireDecoder struct {
	b     []byte
	i     int
	depth int
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

// object reads an object, handing each key (a slice of b) to field, which
// reads its value. A key given twice, or with an escape in it, is refused.
func (d *wireDecoder) object(field func(key []byte) bool) bool {
	if !d.next('{') {
		return false
	}
	if d.next('}') {
		return true
	}
	var seen [12][]byte
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
		key := d.b[start:end]
		for _, k := range seen[:n] {
			if string(k) == string(key) {
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
// (null sets it nil, [] to an empty slice), each element's members by
// table. The elements go after (*out)[:0], or in a new slice of capacity
// prealloc when *out is nil.
func objects[T any](d *wireDecoder, out *[]T, prealloc int, table []wireField[T]) bool {
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
		return fields(d, &list[len(list)-1], table)
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

// objectPtr reads an object into a new T at *p, its members by table;
// null sets *p nil.
func objectPtr[T any](d *wireDecoder, p **T, table []wireField[T]) bool {
	if d.null() {
		*p = nil
		return true
	}
	v := new(T)
	*p = v
	return fields(d, v, table)
}
