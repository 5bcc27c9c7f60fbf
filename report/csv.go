package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode"

	"github.com/buildlab/budge/textkey"
	"golang.org/x/text/unicode/norm"
)

// CSV writes records of one struct type as CSV rows for spreadsheets: one
// column per JSON field, in the order and with the names of the JSONL
// export, so the two formats carry the same fields. A null is an empty
// cell, a string is itself, and a number, a boolean, a list or an object
// is its JSON text. A string that a spreadsheet would run as a formula
// (it starts with a tab or a carriage return, or its first visible
// character is =, +, - or @, full-width or not; model replies land in these
// cells) is written with a leading apostrophe. Rows are written as they come (nothing is held but
// the row being written).
type CSV[T any] struct {
	w      *csv.Writer
	fields [][]int // index path of each column's struct field
	header []string
	begun  bool
}

// NewCSV is a CSV writer for records of type T, a struct.
func NewCSV[T any](w io.Writer) (*CSV[T], error) {
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("csv: %s is not a struct", t)
	}
	c := &CSV[T]{w: csv.NewWriter(w)}
	c.columns(t, nil)
	return c, nil
}

// columns lists t's JSON fields, flattening embedded structs as
// encoding/json does.
func (c *CSV[T]) columns(t reflect.Type, at []int) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || !f.IsExported() && !f.Anonymous {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		path := append(append([]int{}, at...), i)
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			c.columns(f.Type, path)
			continue
		}
		if name == "" {
			name = f.Name
		}
		c.fields, c.header = append(c.fields, path), append(c.header, name)
	}
}

// Write writes one record (the header first, once).
func (c *CSV[T]) Write(r T) error {
	if err := c.begin(); err != nil {
		return err
	}
	v := reflect.ValueOf(r)
	row := make([]string, len(c.fields))
	for i, path := range c.fields {
		cell, err := csvCell(v.FieldByIndex(path))
		if err != nil {
			return fmt.Errorf("csv: column %s: %w", c.header[i], err)
		}
		row[i] = cell
	}
	return c.w.Write(row)
}

// Flush writes what is buffered (the header alone when no record came) and
// reports any write error.
func (c *CSV[T]) Flush() error {
	if err := c.begin(); err != nil {
		return err
	}
	c.w.Flush()
	return c.w.Error()
}

// begin writes the header, the first time it is called.
func (c *CSV[T]) begin() error {
	if c.begun {
		return nil
	}
	c.begun = true
	return c.w.Write(c.header)
}

var marshaler = reflect.TypeFor[json.Marshaler]()

// csvCell is one field as a cell: strings, numbers and booleans (or
// pointers to them) directly, anything else as its JSON text.
func csvCell(v reflect.Value) (string, error) {
	if v.Kind() == reflect.Pointer && !v.Type().Implements(marshaler) {
		if v.IsNil() {
			return "", nil
		}
		v = v.Elem()
	}
	if !v.Type().Implements(marshaler) {
		switch v.Kind() {
		case reflect.String:
			return defuse(v.String()), nil
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			return strconv.FormatInt(v.Int(), 10), nil
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			return strconv.FormatUint(v.Uint(), 10), nil
		case reflect.Bool:
			return strconv.FormatBool(v.Bool()), nil
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v.Interface()); err != nil {
		return "", err
	}
	raw := bytes.TrimSpace(b.Bytes())
	switch {
	case string(raw) == "null":
		return "", nil
	case len(raw) > 0 && raw[0] == '"':
		var s string
		err := json.Unmarshal(raw, &s)
		return defuse(s), err
	}
	return string(raw), nil
}

// defuse keeps a spreadsheet from running a text as a formula: one that
// starts with a tab or a carriage return, or whose first visible
// character, after any space, byte order mark or zero-width character, is
// =, +, - or @ in any width (full-width ＝ ＋ － ＠, the small forms, the
// minus sign), as some spreadsheets read them.
func defuse(s string) string {
	if s == "" {
		return s
	}
	if s[0] == '\t' || s[0] == '\r' {
		return "'" + s
	}
	for _, r := range s {
		if unicode.IsSpace(r) || textkey.Invisible(r) {
			continue
		}
		if r == '\u2212' || strings.ContainsAny(norm.NFKC.String(string(r)), "=+-@") {
			return "'" + s
		}
		break
	}
	return s
}
