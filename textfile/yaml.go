package textfile

import (
	"errors"
	"fmt"
	"strings"

	"github.com/goccy/go-yaml"
)

// YAMLError is err, a YAML parser's error of the file path holding text,
// as "path:line: problem" in plain words when it is a syntax error
// (YAMLSyntax), and nil when it is not one: the caller reports that as it
// does. The file's lines are never quoted (a config's may hold secrets).
func YAMLError(path, text string, err error) error {
	se, ok := errors.AsType[*yaml.SyntaxError](err)
	if !ok {
		return nil
	}
	line := 0
	if se.Token != nil && se.Token.Position != nil {
		line = se.Token.Position.Line
	}
	line, msg := YAMLSyntax(text, line, se.GetMessage())
	return &Error{File: path, Line: line, Reason: msg}
}

// YAMLSyntax turns a YAML parser's syntax error (the line it gave up on
// and its message) into the line where the problem starts and a message
// in plain words. A parser often notices a quote left open only lines
// later, where the next quote closes it: the problem is then put at the
// line that opened the quote. Messages it does not know are kept, with the
// line the parser gave.
func YAMLSyntax(text string, line int, msg string) (int, string) {
	if open, quote := openQuote(text, line); open > 0 {
		return open, fmt.Sprintf("the %s opened on this line is not closed on it (the YAML parser read on to line %d and gave up there): close it, or put a value holding quotes in the other kind of quotes", quote, line)
	}
	lines := strings.Split(text, "\n")
	if line >= 1 && line <= len(lines) {
		l := lines[line-1]
		if indent := l[:len(l)-len(strings.TrimLeft(l, " \t"))]; strings.Contains(indent, "\t") {
			return line, "a tab indents this line: YAML indents with spaces only"
		}
	}
	low := strings.ToLower(msg)
	switch {
	case strings.Contains(low, "cannot start any token") && strings.Contains(msg, "\t"):
		return line, "a tab character where YAML expects spaces: indent with spaces only"
	case strings.Contains(low, "mapping value is not allowed") && line >= 1 && line < len(lines) && deeper(lines[line-1], lines[line]):
		return line + 1, fmt.Sprintf("this key is indented deeper than the line before it (line %d): line it up with its neighbours", line)
	case strings.Contains(low, "mapping value is not allowed") && line >= 1 && line <= len(lines) && twoColons(lines[line-1]):
		return line, `this value holds a colon followed by a space, which YAML reads as another key: put the value in quotes ("...")`
	case strings.Contains(low, "mapping value is not allowed"):
		return line, `a colon followed by a space inside a value, or a key indented deeper than the one before it: put the value in quotes ("..."), or line the key up with its neighbours`
	case strings.Contains(msg, "']' must be specified"), strings.Contains(msg, "'}' must be specified"):
		open, what := "[", "list"
		if strings.Contains(msg, "'}'") {
			open, what = "{", "mapping"
		}
		for i := min(line, len(lines)); i >= 1; i-- {
			if strings.Count(lines[i-1], open) > strings.Count(lines[i-1], map[string]string{"[": "]", "{": "}"}[open]) {
				return i, fmt.Sprintf("the %s opened with %s on this line is not closed with %s on it", what, open, map[string]string{"[": "]", "{": "}"}[open])
			}
		}
		return line, fmt.Sprintf("a %s opened with %s is not closed", what, open)
	case strings.Contains(low, "map key-value is pre-defined"), strings.Contains(low, "value is not allowed in this context"):
		return line, "a value where none can go: this line's indentation, or the line before it, is off (a key already given its value, or a value continued without quotes)"
	case strings.Contains(low, "could not find end character of double-quoted"), strings.Contains(low, "unclosed") && strings.Contains(low, "double"):
		return line, "a double quote opened here is never closed"
	case strings.Contains(low, "could not find end character of single-quoted"):
		return line, "a single quote opened here is never closed (inside single quotes, write '' for one quote)"
	case strings.Contains(low, "duplicate key") || strings.Contains(low, "already defined"):
		return line, "this key is given twice in the same mapping: " + msg
	case strings.Contains(low, "sequence was used where mapping is expected"):
		return line, "a list item (- ...) where the key's value should be a mapping (key: value lines): " + msg
	}
	return line, msg
}

// openQuote finds a quoted value that opens on a line before (or at) line
// and is still open at the end of its line and at line: the line it opens
// on and the kind of quote, or 0 when there is none. Quotes count only
// where a YAML value may start (after "key: ", "- ", "[", "{" or ", ");
// comments are skipped.
func openQuote(text string, line int) (int, string) {
	lines := strings.Split(text, "\n")
	var inQuote byte
	openedAt := 0
	for i := 0; i < len(lines) && i < line; i++ {
		l := lines[i]
		for j := 0; j < len(l); j++ {
			c := l[j]
			if inQuote != 0 {
				switch {
				case inQuote == '"' && c == '\\':
					j++
				case inQuote == '\'' && c == '\'' && j+1 < len(l) && l[j+1] == '\'':
					j++
				case c == inQuote:
					inQuote = 0
					if i+1 >= line && openedAt < i+1 {
						// It closed on the parser's line, having opened
						// on an earlier one: that is where the problem is.
						return openedAt, quoteName(c)
					}
				}
				continue
			}
			if c == '#' && (j == 0 || l[j-1] == ' ' || l[j-1] == '\t') {
				break
			}
			if (c == '"' || c == '\'') && valueStart(l[:j]) {
				inQuote, openedAt = c, i+1
			}
		}
	}
	if inQuote != 0 && openedAt < line {
		return openedAt, quoteName(inQuote)
	}
	return 0, ""
}

// deeper says next is a "key: value" line indented deeper than line, a
// plain "key: value" line itself.
func deeper(line, next string) bool {
	ind := func(s string) int { return len(s) - len(strings.TrimLeft(s, " ")) }
	t := strings.TrimSpace(next)
	return strings.TrimSpace(line) != "" && t != "" && !strings.HasPrefix(t, "#") && !strings.HasPrefix(t, "-") &&
		ind(next) > ind(line) && strings.Contains(t, ": ") && !strings.HasSuffix(strings.TrimSpace(line), ":")
}

// twoColons says the line's value holds another colon followed by a space.
func twoColons(line string) bool {
	_, v, ok := strings.Cut(line, ": ")
	return ok && (strings.Contains(v, ": ") || strings.HasSuffix(strings.TrimSpace(v), ":"))
}

// valueStart says a quote after before begins a YAML value.
func valueStart(before string) bool {
	t := strings.TrimRight(before, " ")
	if t == "" || strings.HasSuffix(t, "[") || strings.HasSuffix(t, "{") || strings.HasSuffix(t, ",") {
		return true
	}
	if len(t) == len(before) {
		return false // no space between the key's colon (or the dash) and the quote
	}
	return strings.HasSuffix(t, ":") || strings.HasSuffix(t, "-") || strings.HasSuffix(t, "?")
}

func quoteName(c byte) string {
	if c == '"' {
		return `double quote (")`
	}
	return "single quote (')"
}
