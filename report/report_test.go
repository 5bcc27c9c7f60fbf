package report_test

import (
	"bytes"
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/study"
	"github.com/buildlab/budge/testkit/storetest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// What differs between runs is normalised in golden reports: id and time.
var (
	goldenID      = "20261202-000000-golden"
	goldenCreated = time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
)

// runIn runs a plan (study.PressureOptions, study.FramingOptions) into a
// fresh store, as budge run does (study.Start).
func runIn[R study.Result](t *testing.T, o study.Plan) R {
	t.Helper()
	st := storetest.Open(t)
	res, err := study.As[R](study.Start(context.Background(), st, o))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// checkFormats renders a report in every format and compares each with
// testdata/<name>.<format>.
func checkFormats(t *testing.T, name string, rep interface {
	Render(w io.Writer, format string) error
}) {
	t.Helper()
	for _, format := range report.Formats {
		var b bytes.Buffer
		if err := rep.Render(&b, format); err != nil {
			t.Fatal(err)
		}
		checkGolden(t, name+"."+format, b.Bytes())
	}
}

// checkGolden compares got with testdata/<name>, or rewrites that file
// under -update; run `go test ./report -update` after an intended change
// and review the diff.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./report -update to create it)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs from its golden file:\n%s", path, diff(string(want), string(got)))
	}
}

// TestGolden renders seeded simulator runs in every format and compares
// them with testdata/<name>.<format>.
func TestGolden(t *testing.T) {
	for _, model := range []string{"sim", "sim:steadfast"} {
		o := study.DefaultPressureOptions()
		o.Model = model
		o.Seed = 11
		rep := runIn[*study.PressureResult](t, o).Report()
		rep.Run.ID, rep.Run.Created = goldenID, goldenCreated
		checkFormats(t, strings.ReplaceAll(model, ":", "-"), rep)
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
