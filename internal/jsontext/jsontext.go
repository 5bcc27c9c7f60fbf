// Package jsontext writes JSON text as encoding/json writes it, and scans
// its string and number tokens, without reflection, for the few places
// that encode or check a value on every call of a run (a request as it is
// stored, a simulated answer, a request the simulator decodes).
package jsontext

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// plain is the ASCII characters json.Marshal writes in a string as they
// are.
var plain = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// AppendString appends s quoted as json.Marshal quotes a string: with <, >
// and & escaped, bytes that are not UTF-8 as U+FFFD, and U+2028 and U+2029
// escaped.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if plain[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendHTMLEscaped appends src as json.HTMLEscape writes it: <, > and &
// as \u003c, \u003e and \u0026, U+2028 and U+2029 as \u2028 and \u2029,
// the rest as it is. src is JSON text, so that what it escapes is in its
// strings (json.Encoder and json.Marshal do this to a json.RawMessage),
// in one pass without a buffer of its own.
func AppendHTMLEscaped(b, src []byte) []byte {
	start := 0
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '<', '>', '&':
			b = append(b, src[start:i]...)
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			start = i + 1
		case 0xe2:
			if i+2 < len(src) && src[i+1] == 0x80 && src[i+2]&^1 == 0xa8 {
				b = append(b, src[start:i]...)
				b = append(b, '\\', 'u', '2', '0', '2', hexDigits[src[i+2]&0xF])
				i += 2
				start = i + 1
			}
		}
	}
	return append(b, src[start:]...)
}
