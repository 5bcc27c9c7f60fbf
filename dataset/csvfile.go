package dataset

import (
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"strings"
)

// csvTable is a CSV file read whole: the header, the rows, and the line
// each row starts on (rows may span lines).
type csvTable struct {
	header []string
	col    map[string]int
	rows   [][]string
	lines  []int
}

func readCSV(c *collector, r io.Reader) *csvTable {
	data, err := readAtMost(r)
	if err != nil {
		c.add(0, "", "reading: %v", err)
		return nil
	}
	if len(data) > MaxDataFileBytes {
		c.probs = append(c.probs, tooLargeFile(c.file, -1))
		return nil
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // a UTF-8 byte order mark
	cr := csv.NewReader(bytes.NewReader(data))
	cr.FieldsPerRecord = -1
	t := &csvTable{col: map[string]int{}}
	for {
		start := cr.InputOffset()
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				c.add(pe.StartLine, "", "invalid CSV: %v", pe.Err)
			} else {
				c.add(0, "", "invalid CSV: %v", err)
			}
			return nil
		}
		line, _ := cr.FieldPos(0)
		if cr.InputOffset()-start > MaxLineBytes {
			c.add(line, "", "%s", lineTooLong("the CSV record"))
			return nil
		}
		if t.header == nil {
			t.header = rec
			for i, h := range rec {
				t.col[strings.TrimSpace(h)] = i
			}
			continue
		}
		if len(rec) != len(t.header) {
			c.add(line, "", "row has %d fields, the header has %d", len(rec), len(t.header))
			continue
		}
		t.rows = append(t.rows, rec)
		t.lines = append(t.lines, line)
	}
	if t.header == nil {
		c.add(0, "", "empty file: no header row")
		return nil
	}
	return t
}

// need reports the columns missing from the header.
func (t *csvTable) need(c *collector, cols ...string) bool {
	ok := true
	for _, name := range cols {
		if _, has := t.col[name]; !has {
			c.add(1, name, "column missing (the header has: %s)", strings.Join(t.header, ", "))
			ok = false
		}
	}
	return ok
}

func (t *csvTable) get(row []string, name string) string {
	if i, ok := t.col[name]; ok && i < len(row) {
		return strings.TrimSpace(row[i])
	}
	return ""
}

func (t *csvTable) has(name string) bool {
	_, ok := t.col[name]
	return ok
}
