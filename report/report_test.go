package report_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// golden renders a seeded simulator run in every format and compares it with
// testdata/<name>.<format>; run `go test ./report -update` after an
// intended change and review the diff.
func TestGolden(t *testing.T) {
	for _, model := range []string{"sim", "sim:steadfast"} {
		st, err := store.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		o := study.DefaultPressureOptions()
		o.Model = model
		o.Seed = 11
		res, err := study.RunPressure(context.Background(), st, o)
		st.Close()
		if err != nil {
			t.Fatal(err)
		}
		rep := res.Report()
		// Normalise what differs between runs: id and time.
		rep.Run.ID = "20261202-000000-golden"
		rep.Run.Created = time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
		name := strings.ReplaceAll(model, ":", "-")
		for _, format := range report.Formats {
			var b bytes.Buffer
			if err := rep.Render(&b, format); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", name+"."+format)
			if *update {
				if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./report -update to create it)", err)
			}
			if !bytes.Equal(want, b.Bytes()) {
				t.Errorf("%s differs from its golden file:\n%s", path, diff(string(want), b.String()))
			}
		}
	}
}

// diff shows the first lines that differ, with line numbers.
func diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var out []string
	for i := 0; i < max(len(w), len(g)) && len(out) < 20; i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			out = append(out, "line "+itoa(i+1)+":\n  want: "+a+"\n  got:  "+b)
		}
	}
	return strings.Join(out, "\n")
}

func itoa(n int) string {
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}

func TestUnknownFormat(t *testing.T) {
	var b bytes.Buffer
	if err := (report.Pressure{}).Render(&b, "pdf"); err == nil || !strings.Contains(err.Error(), "text, md, json") {
		t.Errorf("unknown format error = %v", err)
	}
}

func TestMarkdownEscapesMarkup(t *testing.T) {
	var rep report.Pressure
	rep.Run.Model = "<script>alert(1)</script>|*x*"
	var b bytes.Buffer
	if err := rep.Render(&b, "md"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "<script>") {
		t.Errorf("markdown report lets markup through:\n%s", b.String())
	}
}
