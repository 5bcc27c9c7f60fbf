package extract

import "strings"

// fixedCandidates retries a text in which no answer object was found with
// the punctuation repairs, one after another and cumulatively: full-width
// or curly punctuation as JSON's, trailing commas, single quotes. It
// returns the repaired text, the repairs that changed it, and the
// candidates found in it (none when no repair helps).
func fixedCandidates(text string, o Options) (string, []string, []candidate) {
	var applied []string
	t := text
	for _, f := range []struct {
		name string
		fix  func(string) string
	}{{RepairFullWidth, asciiPunct}, {RepairTrailingComma, dropTrailingCommas}, {RepairSingleQuotes, singleQuotedSpans}} {
		u := f.fix(t)
		if u == t {
			continue
		}
		t = u
		applied = append(applied, f.name)
		if cs, _ := candidates(t, o); len(cs) > 0 {
			return t, applied, cs
		}
	}
	return text, nil, nil
}

// fullWidthPunct maps the punctuation models write in place of JSON's:
// full-width forms and curly or corner quotes.
var fullWidthPunct = map[rune]rune{
	'｛': '{', '｝': '}', '［': '[', '］': ']', '：': ':', '，': ',', '＂': '"', '、': ',',
	'“': '"', '”': '"', '「': '"', '」': '"', '『': '"', '』': '"',
}

// asciiPunct turns full-width and curly punctuation outside JSON strings
// into JSON's own; inside a string (opened by an ASCII or full-width quote)
// only the closing quote is turned. Prose around an object changes too,
// but only the objects are read from the result.
func asciiPunct(s string) string {
	var b strings.Builder
	in, esc := false, false
	for _, r := range s {
		if in {
			switch {
			case esc:
				esc = false
			case r == '\\':
				esc = true
			case r == '"' || r == '＂' || r == '”' || r == '」' || r == '』':
				in = false
				r = '"'
			}
			b.WriteRune(r)
			continue
		}
		if a, ok := fullWidthPunct[r]; ok {
			r = a
		}
		if r == '"' {
			in = true
		}
		b.WriteRune(r)
	}
	return b.String()
}

// jsonString follows JSON text byte by byte through its strings.
type jsonString struct{ in, esc bool }

// holds reports whether byte c, the next of the text, belongs to a string
// (its closing quote included); an opening quote starts one and is not
// held.
func (j *jsonString) holds(c byte) bool {
	if !j.in {
		j.in = c == '"'
		return false
	}
	switch {
	case j.esc:
		j.esc = false
	case c == '\\':
		j.esc = true
	case c == '"':
		j.in = false
	}
	return true
}

// dropTrailingCommas removes a comma (and the space after it) that stands
// before a closing } or ] outside JSON strings.
func dropTrailingCommas(s string) string {
	var b strings.Builder
	var str jsonString
	for i := 0; i < len(s); i++ {
		c := s[i]
		if str.holds(c) {
			b.WriteByte(c)
			continue
		}
		if c == ',' {
			j := i + 1
			for j < len(s) && (s[j] == ' ' || s[j] == '\t' || s[j] == '\n' || s[j] == '\r') {
				j++
			}
			if j < len(s) && (s[j] == '}' || s[j] == ']') {
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// singleQuotedSpans rewrites every {…} span that holds a single quote as
// JSON (SingleToDouble); prose outside the spans is left alone.
func singleQuotedSpans(s string) string {
	var b strings.Builder
	last := 0
	for _, sp := range braceSpans(s) {
		b.WriteString(s[last:sp[0]])
		span := s[sp[0]:sp[1]]
		if strings.Contains(span, "'") {
			span = SingleToDouble(span)
		}
		b.WriteString(span)
		last = sp[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

// SingleToDouble turns a single-quoted dict into JSON: single quotes that
// delimit strings become double quotes, double quotes inside them are
// escaped. Apostrophes inside words are left alone.
func SingleToDouble(s string) string {
	var b strings.Builder
	in := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case in == 0 && (c == '\'' || c == '"'):
			in = c
			b.WriteByte('"')
		case in != 0 && c == '\\' && i+1 < len(s):
			if s[i+1] == '\'' {
				b.WriteByte('\'')
			} else {
				b.WriteByte(c)
				b.WriteByte(s[i+1])
			}
			i++
		case in != 0 && c == in:
			in = 0
			b.WriteByte('"')
		case in == '\'' && c == '"':
			b.WriteString(`\"`)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
