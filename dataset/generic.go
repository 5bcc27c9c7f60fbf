package dataset

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/buildlab/budge/framing"
)

// Mapping says which column (CSV) or key (JSONL) holds each item field of a
// file in no known layout. Question, Correct and Incorrect are required.
// Without an ID column, ids are the file's base name and the row number;
// without a Domain column every item gets Domain (or the file's base name).
type Mapping struct {
	ID, Question, Context, Correct, Incorrect, DomainColumn, Split string
	Meta                                                           []string
	Domain                                                         string
}

// ParseMapping reads "question=Q,correct=A,incorrect=W[,id=..][,context=..]
// [,domain=..][,split=..][,meta=COL1|COL2]".
func ParseMapping(s string) (Mapping, error) {
	var m Mapping
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(part, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || v == "" {
			return m, fmt.Errorf("column mapping %q: %q is not FIELD=COLUMN", s, part)
		}
		fields := map[string]*string{"id": &m.ID, "question": &m.Question, "context": &m.Context, "correct": &m.Correct,
			"incorrect": &m.Incorrect, "domain": &m.DomainColumn, "split": &m.Split}
		switch f, known := fields[k]; {
		case known:
			*f = v
		case k == "meta":
			m.Meta = strings.Split(v, "|")
		default:
			return m, fmt.Errorf("column mapping %q: unknown field %q (id, question, context, correct, incorrect, domain, split, meta)", s, k)
		}
	}
	if m.Question == "" || m.Correct == "" || m.Incorrect == "" {
		return m, fmt.Errorf("column mapping %q: question, correct and incorrect are required", s)
	}
	return m, nil
}

func (m Mapping) columns() []string {
	cols := []string{m.Question, m.Correct, m.Incorrect}
	for _, c := range []string{m.ID, m.Context, m.DomainColumn, m.Split} {
		if c != "" {
			cols = append(cols, c)
		}
	}
	return append(cols, m.Meta...)
}

func (m Mapping) item(base string, row int, get func(string) []string) framing.Item {
	one := func(col string) string {
		if col == "" {
			return ""
		}
		return strings.TrimSpace(firstOf(get(col)))
	}
	it := framing.Item{ID: one(m.ID), Question: one(m.Question), Context: one(m.Context), Domain: one(m.DomainColumn), Split: one(m.Split)}
	if it.ID == "" && m.ID == "" {
		it.ID = base + "-" + itoa(row)
	}
	if it.Domain == "" && m.DomainColumn == "" {
		it.Domain = m.Domain
		if it.Domain == "" {
			it.Domain = base
		}
	}
	it.CorrectAnswers, it.IncorrectAnswers = get(m.Correct), get(m.Incorrect)
	it.Correct, it.Incorrect = strings.TrimSpace(firstOf(it.CorrectAnswers)), strings.TrimSpace(firstOf(it.IncorrectAnswers))
	for _, k := range m.Meta {
		if v := one(k); v != "" {
			if it.Meta == nil {
				it.Meta = map[string]any{}
			}
			it.Meta[k] = v
		}
	}
	return it
}

// ReadMappedCSV reads any CSV with a header through a column mapping.
func ReadMappedCSV(name string, r io.Reader, m Mapping) ([]framing.Item, error) {
	c := &collector{file: name}
	t := readCSV(c, r)
	if t == nil || !t.need(c, m.columns()...) {
		return nil, c.err()
	}
	var items []framing.Item
	for i, row := range t.rows {
		items = append(items, m.item(baseName(name), i+1, func(col string) []string { return []string{t.get(row, col)} }))
	}
	return finish(c, items, t.lines)
}

// ReadMappedJSONL reads any JSONL of objects through a key mapping. A key
// holding a list gives every element as a candidate and the first as the
// answer shown.
func ReadMappedJSONL(name string, r io.Reader, m Mapping) ([]framing.Item, error) {
	c := &collector{file: name}
	var items []framing.Item
	var lines []int
	row := 0
	eachLine(c, r, func(line int, b []byte) {
		row++
		var rec map[string]any
		if err := json.Unmarshal(b, &rec); err != nil {
			c.add(line, "", "%s", jsonError(err))
			return
		}
		for _, col := range m.columns() {
			if _, ok := rec[col]; !ok {
				c.add(line, col, "key missing")
				return
			}
		}
		items = append(items, m.item(baseName(name), row, func(col string) []string { return strs(rec[col]) }))
		lines = append(lines, line)
	})
	return finish(c, items, lines)
}

func baseName(path string) string {
	i := strings.LastIndexAny(path, `/\`)
	b := path[i+1:]
	if j := strings.IndexByte(b, '.'); j > 0 {
		b = b[:j]
	}
	return b
}
