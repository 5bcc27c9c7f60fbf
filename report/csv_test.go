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

// CSV cells survive commas, quotes, newlines and markup, a null is an empty
// cell, and a cell a spreadsheet would run as a formula is defused.
func TestCSVQuotesAndDefuses(t *testing.T) {
	awkward := "a, \"quoted\"\nsecond line <b>&"
	formula := "=HYPERLINK(\"http://x\")"
	yes := true
	var b bytes.Buffer
	c, err := report.NewCSV[csvRow](&b)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []csvRow{
		{ID: "s1", Text: &awkward, Tags: []string{"x", "y,z"}, N: 3, OK: &yes, Other: csvInner{"k"}, csvInner: csvInner{"inner"}},
		{ID: "s2", Text: &formula},
	} {
		if err := c.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
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
