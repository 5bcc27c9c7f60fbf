package dataset

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// parsePyLiteral reads a Python literal as repr() writes it: lists, tuples,
// dicts, strings with either quote and Python's escapes, numbers, None,
// True and False. DialDefer stored each conversation as the repr of a list
// of {'role': ..., 'content': ...} dicts.
func parsePyLiteral(s string) (any, error) {
	p := &pyParser{s: s}
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i != len(p.s) {
		return nil, p.errf("unexpected text after the value")
	}
	return v, nil
}

type pyParser struct {
	s     string
	i     int
	depth int // lists, tuples and dicts open
}

func (p *pyParser) errf(format string, args ...any) error {
	return fmt.Errorf("python literal at offset %d: %s", p.i, fmt.Sprintf(format, args...))
}

func (p *pyParser) space() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *pyParser) value() (any, error) {
	p.space()
	if p.i >= len(p.s) {
		return nil, p.errf("unexpected end")
	}
	switch c := p.s[p.i]; {
	case c == '[' || c == '(' || c == '{':
		if p.depth++; p.depth > MaxNestingDepth {
			return nil, p.errf("%s", tooDeep("the literal"))
		}
		defer func() { p.depth-- }()
	}
	switch c := p.s[p.i]; {
	case c == '[' || c == '(':
		close := byte(']')
		if c == '(' {
			close = ')'
		}
		p.i++
		var out []any
		for {
			p.space()
			if p.i < len(p.s) && p.s[p.i] == close {
				p.i++
				return out, nil
			}
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			out = append(out, v)
			p.space()
			if p.i < len(p.s) && p.s[p.i] == ',' {
				p.i++
				continue
			}
			if p.i < len(p.s) && p.s[p.i] == close {
				p.i++
				return out, nil
			}
			return nil, p.errf("expected , or %c", close)
		}
	case c == '{':
		p.i++
		out := map[string]any{}
		for {
			p.space()
			if p.i < len(p.s) && p.s[p.i] == '}' {
				p.i++
				return out, nil
			}
			k, err := p.value()
			if err != nil {
				return nil, err
			}
			ks, ok := k.(string)
			if !ok {
				return nil, p.errf("dict key is not a string")
			}
			p.space()
			if p.i >= len(p.s) || p.s[p.i] != ':' {
				return nil, p.errf("expected :")
			}
			p.i++
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			out[ks] = v
			p.space()
			if p.i < len(p.s) && p.s[p.i] == ',' {
				p.i++
				continue
			}
			if p.i < len(p.s) && p.s[p.i] == '}' {
				p.i++
				return out, nil
			}
			return nil, p.errf("expected , or }")
		}
	case c == '\'' || c == '"':
		return p.str()
	case strings.HasPrefix(p.s[p.i:], "None"):
		p.i += 4
		return nil, nil
	case strings.HasPrefix(p.s[p.i:], "True"):
		p.i += 4
		return true, nil
	case strings.HasPrefix(p.s[p.i:], "False"):
		p.i += 5
		return false, nil
	case c == '-' || c >= '0' && c <= '9':
		j := p.i + 1
		for j < len(p.s) && strings.IndexByte("0123456789.eE+-", p.s[j]) >= 0 {
			j++
		}
		f, err := strconv.ParseFloat(p.s[p.i:j], 64)
		if err != nil {
			return nil, p.errf("bad number %q", p.s[p.i:j])
		}
		p.i = j
		return f, nil
	}
	return nil, p.errf("unexpected %q", p.s[p.i])
}

func (p *pyParser) str() (string, error) {
	q := p.s[p.i]
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == q:
			p.i++
			return b.String(), nil
		case c == '\\' && p.i+1 < len(p.s):
			e := p.s[p.i+1]
			p.i += 2
			switch e {
			case '\\', '\'', '"':
				b.WriteByte(e)
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'a':
				b.WriteByte('\a')
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'v':
				b.WriteByte('\v')
			case '\n':
				// line continuation
			case 'x', 'u', 'U':
				n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
				if p.i+n > len(p.s) {
					return "", p.errf("short \\%c escape", e)
				}
				r, err := strconv.ParseUint(p.s[p.i:p.i+n], 16, 32)
				if err != nil {
					return "", p.errf("bad \\%c escape", e)
				}
				b.WriteRune(rune(r))
				p.i += n
			case '0', '1', '2', '3', '4', '5', '6', '7':
				j := p.i - 1
				k := j
				for k < len(p.s) && k < j+3 && p.s[k] >= '0' && p.s[k] <= '7' {
					k++
				}
				r, _ := strconv.ParseUint(p.s[j:k], 8, 32)
				b.WriteRune(rune(r))
				p.i = k
			default:
				// Python keeps unknown escapes as written.
				b.WriteByte('\\')
				b.WriteByte(e)
			}
		default:
			_, size := utf8.DecodeRuneInString(p.s[p.i:])
			b.WriteString(p.s[p.i : p.i+size])
			p.i += size
		}
	}
	return "", p.errf("unterminated string")
}
