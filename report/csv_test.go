package report_test

import (
	"bytes"
	"encoding/csv"
	"reflect"
	"testing"

	"github.com/buildlab/budge/report"
)

type csvInner struct {
	Kind string `json:"kind"`
}

type csvRow struct {
	ID    string   `json:"id"`
	Text  *string  `json:"text"`
	Tags  []string `json:"tags"`
	N     int      `json:"n"`
	OK    *bool    `json:"ok,omitempty"`
	Other csvInner `json:"other"`
	csvInner
	skip string
}

// csvRows writes rows through report.CSV and reads the file back.
func csvRows[T any](t *testing.T, rows ...T) [][]string {
	t.Helper()
	var b bytes.Buffer
	c, err := report.NewCSV[T](&b)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if err := c.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	out, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// CSV cells survive commas, quotes, newlines and markup, a null is an empty
// cell, and a cell a spreadsheet would run as a formula is defused.
func TestCSVQuotesAndDefuses(t *testing.T) {
	awkward := "a, \"quoted\"\nsecond line <b>&"
	formula := "=HYPERLINK(\"http://x\")"
	yes := true
	rows := csvRows(t,
		csvRow{ID: "s1", Text: &awkward, Tags: []string{"x", "y,z"}, N: 3, OK: &yes, Other: csvInner{"k"}, csvInner: csvInner{"inner"}},
		csvRow{ID: "s2", Text: &formula})
	want := [][]string{
		{"id", "text", "tags", "n", "ok", "other", "kind"},
		{"s1", awkward, `["x","y,z"]`, "3", "true", `{"kind":"k"}`, "inner"},
		{"s2", "'" + formula, "null", "0", "", `{"kind":""}`, ""},
	}
	// A nil list is JSON null: an empty cell.
	want[2][2] = ""
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("rows:\n%q\nwant\n%q", rows, want)
	}
}

// A formula hidden behind space, a byte order mark or a zero-width
// character, or written in full-width or small forms, is defused too; text
// that merely contains such characters is not touched.
func TestCSVDefusesHiddenFormulas(t *testing.T) {
	cells := map[string]bool{
		"=1+1":                    true,
		"+1":                      true,
		"-1":                      true,
		"@SUM(A1)":                true,
		"\t=1":                    true,
		"\r=1":                    true,
		"\tplain":                 true,
		" =1+1":                   true,
		"  \u00a0@x":              true,
		"\n=1":                    true,
		"\ufeff=HYPERLINK(\"x\")": true,
		"\u200b=1":                true,
		"\u200d\u2060+1":          true,
		"\u00ad-1":                true,
		"\uff1dHYPERLINK(\"x\")":  true,
		"\uff0b1":                 true,
		"\uff0d1":                 true,
		"\uff20x":                 true,
		"\ufe66x":                 true,
		"\u2212 1":                true,
		" \ufeff\u200b\uff1d1":    true,
		"plain":                   false,
		"a=1":                     false,
		" plain =1":               false,
		"\u200bword":              false,
		"José = José":             false,
		"100% \uff1d":             false,
		"":                        false,
	}
	type row struct {
		Text string `json:"text"`
	}
	for cell, defused := range cells {
		rows := csvRows(t, row{cell})
		want := cell
		if defused {
			want = "'" + cell
		}
		got := ""
		if len(rows) > 1 { // a row of one empty cell is an empty line
			got = rows[1][0]
		}
		if got != want {
			t.Errorf("%q written as %q, want %q", cell, got, want)
		}
	}
}
