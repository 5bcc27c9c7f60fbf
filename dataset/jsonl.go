package dataset

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/textkey"
)

// eachLine calls fn with every non-blank line of r and its 1-based number.
// A line over MaxLineBytes ends the reading with a problem at its line; a
// line nested deeper than MaxNestingDepth is reported and skipped.
func eachLine(c *collector, r io.Reader, fn func(line int, b []byte)) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLineBytes)
	n := 0
	for sc.Scan() {
		n++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if jsonDepth(b, MaxNestingDepth) > MaxNestingDepth {
			c.add(n, "", "%s", tooDeep("the JSON"))
			continue
		}
		fn(n, b)
	}
	switch err := sc.Err(); {
	case errors.Is(err, bufio.ErrTooLong):
		c.add(n+1, "", "%s", lineTooLong("the line"))
	case err != nil:
		c.add(0, "", "reading: %v", err)
	}
}

// readJSONL reads JSONL whose every line is one record T (strict: unknown
// fields rejected) and turns each record into an item with item, which
// reports a record's problems to c and returns false to leave it out. The
// items are checked as finish does.
func readJSONL[T any](name string, r io.Reader, strict bool, item func(c *collector, line int, rec *T) (framing.Item, bool)) ([]framing.Item, error) {
	c := &collector{file: name}
	var items []framing.Item
	var lines []int
	eachLine(c, r, func(line int, b []byte) {
		var rec T
		var err error
		if strict {
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.DisallowUnknownFields()
			err = dec.Decode(&rec)
		} else {
			err = json.Unmarshal(b, &rec)
		}
		if err != nil {
			c.add(line, "", "%s", jsonError(err))
			return
		}
		if it, ok := item(c, line, &rec); ok {
			items = append(items, it)
			lines = append(lines, line)
		}
	})
	return finish(c, items, lines)
}

// jsonError turns a decoding error into a reason that says where in the
// line it went wrong.
func jsonError(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case asErr(err, &se):
		return fmt.Sprintf("invalid JSON at byte %d: %v", se.Offset, err)
	case asErr(err, &te):
		return fmt.Sprintf("field %q: expected %s, got JSON %s", te.Field, te.Type, te.Value)
	}
	return "invalid JSON: " + err.Error()
}

// finish checks the items read from a file (every item valid, no id twice)
// and returns them only when nothing is wrong.
func finish(c *collector, items []framing.Item, lines []int) ([]framing.Item, error) {
	type seen struct {
		line int
		id   string
	}
	first := map[string]seen{}
	for i := range items {
		it := &items[i]
		for _, p := range it.Validate() {
			field, reason, ok := strings.Cut(p, ": ")
			if !ok {
				field, reason = "", p
			}
			c.add(lines[i], field, "%s", reason)
		}
		if it.ID == "" {
			continue
		}
		k := textkey.Key(it.ID)
		if at, dup := first[k]; dup {
			if at.id == it.ID {
				c.add(lines[i], "id", "duplicate id %q (first at line %d)", it.ID, at.line)
			} else {
				c.add(lines[i], "id", "id %+q reads the same as %+q (line %d): they differ only in letter case, Unicode form or invisible characters", it.ID, at.id, at.line)
			}
			continue
		}
		first[k] = seen{lines[i], it.ID}
	}
	if err := c.err(); err != nil {
		return nil, err
	}
	return items, nil
}

func strs(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func firstOf(list []string) string {
	if len(list) == 0 {
		return ""
	}
	return list[0]
}
