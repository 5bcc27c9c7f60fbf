package dataset

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/buildlab/budge/framing"
)

// maxLine is the longest JSONL line accepted (r/AIO transcripts and result
// histories run to hundreds of kilobytes).
const maxLine = 64 << 20

// eachLine calls fn with every non-blank line of r and its 1-based number.
func eachLine(r io.Reader, fn func(line int, b []byte)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), maxLine)
	n := 0
	for sc.Scan() {
		n++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		fn(n, b)
	}
	return sc.Err()
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
	first := map[string]int{}
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
		if at, dup := first[it.ID]; dup {
			c.add(lines[i], "id", "duplicate id %q (first at line %d)", it.ID, at)
			continue
		}
		first[it.ID] = lines[i]
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

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
