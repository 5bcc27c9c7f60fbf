package runner

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/internal/jsontext"
)

// encodeRequest is json.Marshal(req), byte for byte: the request as it is
// stored and keyed. Encoding requests by reflection was the largest part of
// what the runner itself spent on a call. A request this does not spell as
// json.Marshal would (a tool schema or arguments with white space to drop
// or characters json.Marshal escapes, a temperature that is not a finite
// number) is left to json.Marshal.
func encodeRequest(req *chat.Request) ([]byte, error) {
	b, ok := appendRequest(make([]byte, 0, requestSize(req)), req)
	if !ok {
		return json.Marshal(req)
	}
	return b, nil
}

// requestSize is about the encoded size of req, so that the buffer it is
// encoded in grows at most once.
func requestSize(req *chat.Request) int {
	n := 128 + len(req.Model)
	for _, m := range req.Messages {
		n += 48 + len(m.Content) + len(m.ToolCallID) + len(m.Name) + len(m.Refusal)
		for _, tc := range m.ToolCalls {
			n += 40 + len(tc.ID) + len(tc.Name) + len(tc.Arguments)
		}
	}
	for _, t := range req.Tools {
		n += 48 + len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	if rf := req.ResponseFormat; rf != nil {
		n += 48 + len(rf.Name) + len(rf.Schema)
	}
	return n + n/16
}

func appendRequest(b []byte, req *chat.Request) ([]byte, bool) {
	ok := true
	b = appendString(b, `{"model":`, req.Model)
	b = append(b, `,"messages":`...)
	if req.Messages == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, m := range req.Messages {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, `{"role":`, string(m.Role))
			b = appendOmitEmpty(b, `,"content":`, m.Content)
			if len(m.ToolCalls) > 0 {
				b = append(b, `,"tool_calls":[`...)
				for j, tc := range m.ToolCalls {
					if j > 0 {
						b = append(b, ',')
					}
					b = appendString(b, `{"id":`, tc.ID)
					b = appendString(b, `,"name":`, tc.Name)
					if len(tc.Arguments) > 0 {
						b = append(b, `,"arguments":`...)
						b, ok = appendRaw(b, tc.Arguments, ok)
					}
					b = append(b, '}')
				}
				b = append(b, ']')
			}
			b = appendOmitEmpty(b, `,"tool_call_id":`, m.ToolCallID)
			b = appendOmitEmpty(b, `,"name":`, m.Name)
			b = appendOmitEmpty(b, `,"refusal":`, m.Refusal)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if len(req.Tools) > 0 {
		b = append(b, `,"tools":[`...)
		for i, t := range req.Tools {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, `{"name":`, t.Name)
			b = appendString(b, `,"description":`, t.Description)
			b = append(b, `,"parameters":`...)
			b, ok = appendRaw(b, t.Parameters, ok)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"settings":{`...)
	s := req.Settings
	sep := ""
	if s.Temperature != nil {
		b = append(b, `"temperature":`...)
		b, ok = appendFloat(b, *s.Temperature, ok)
		sep = ","
	}
	if s.MaxTokens != 0 {
		b = append(b, sep+`"max_tokens":`...)
		b = strconv.AppendInt(b, int64(s.MaxTokens), 10)
		sep = ","
	}
	if s.Seed != nil {
		b = append(b, sep+`"seed":`...)
		b = strconv.AppendInt(b, *s.Seed, 10)
	}
	b = append(b, '}')
	if rf := req.ResponseFormat; rf != nil {
		b = appendString(b, `,"response_format":{"name":`, rf.Name)
		b = append(b, `,"schema":`...)
		b, ok = appendRaw(b, rf.Schema, ok)
		if rf.Strict {
			b = append(b, `,"strict":true`...)
		}
		b = append(b, '}')
	}
	return append(b, '}'), ok
}

// appendString appends key (with what comes before it) and s as
// json.Marshal spells a string field.
func appendString(b []byte, key, s string) []byte {
	return jsontext.AppendString(append(b, key...), s)
}

// appendOmitEmpty is appendString for a field tagged omitempty: nothing
// when s is "".
func appendOmitEmpty(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendString(b, key, s)
}

// appendRaw appends a json.RawMessage as json.Marshal does when it needs
// neither compacting nor escaping; otherwise it reports false (ok is the
// encoding's state so far).
func appendRaw(b []byte, m json.RawMessage, ok bool) ([]byte, bool) {
	if m == nil {
		return append(b, "null"...), ok
	}
	if !ok || !htmlSafe(m) {
		return b, false
	}
	if c := (compactChecker{b: m}); !c.value(0) || c.i != len(m) {
		return b, false // not JSON, or white space json.Marshal drops
	}
	return append(b, m...), ok
}

// htmlSafe tells whether m holds none of what json.Marshal escapes in a
// json.RawMessage: <, >, &, U+2028 and U+2029.
func htmlSafe(m []byte) bool {
	for i, c := range m {
		switch c {
		case '<', '>', '&':
			return false
		case 0xe2:
			if i+2 < len(m) && m[i+1] == 0x80 && (m[i+2] == 0xa8 || m[i+2] == 0xa9) {
				return false
			}
		}
	}
	return true
}

// compactChecker checks that b holds JSON without white space between its
// tokens: what json.Marshal writes of a json.RawMessage as it is.
type compactChecker struct {
	b []byte
	i int
}

func (c *compactChecker) value(depth int) bool {
	if c.i >= len(c.b) || depth > 1000 {
		return false
	}
	switch ch := c.b[c.i]; {
	case ch == '"':
		return c.str()
	case ch == '{' || ch == '[':
		end := byte(']')
		if ch == '{' {
			end = '}'
		}
		c.i++
		if c.take(end) {
			return true
		}
		for {
			if ch == '{' && !(c.i < len(c.b) && c.b[c.i] == '"' && c.str() && c.take(':')) {
				return false
			}
			if !c.value(depth + 1) {
				return false
			}
			if c.take(',') {
				continue
			}
			return c.take(end)
		}
	case ch == '-' || '0' <= ch && ch <= '9':
		return c.number()
	}
	for _, lit := range []string{"true", "false", "null"} {
		if bytes.HasPrefix(c.b[c.i:], []byte(lit)) {
			c.i += len(lit)
			return true
		}
	}
	return false
}

// take takes the next byte if it is x.
func (c *compactChecker) take(x byte) bool {
	if c.i < len(c.b) && c.b[c.i] == x {
		c.i++
		return true
	}
	return false
}

func (c *compactChecker) str() bool {
	var ok bool
	c.i, ok = jsontext.ScanString(c.b, c.i)
	return ok
}

func (c *compactChecker) number() bool {
	var ok bool
	c.i, ok = jsontext.ScanNumber(c.b, c.i)
	return ok
}

// appendFloat appends f as json.Marshal spells a float64.
func appendFloat(b []byte, f float64, ok bool) ([]byte, bool) {
	e, err := json.Marshal(f)
	if err != nil {
		return b, false
	}
	return append(b, e...), ok
}
