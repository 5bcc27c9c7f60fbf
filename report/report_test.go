package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"html"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/stats"
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

// TestFramingGolden renders seeded simulator framing runs in every format
// and compares them with testdata/framing-<name>.<format>; run
// `go test ./report -update` after an intended change and review the diff.
func TestFramingGolden(t *testing.T) {
	for _, c := range []struct {
		name   string
		design func(d *framing.Design)
		model  string
	}{
		{"sim", func(*framing.Design) {}, "sim"},
		{"mitigations", func(d *framing.Design) {
			for _, m := range []string{"be-honest", "dehumanize"} {
				mi, _ := framing.ParseMitigation(m)
				d.Mitigations = append(d.Mitigations, mi)
			}
			d.Challenges, _ = framing.ParseChallenges([]string{"disagree", "expert"}, "")
		}, "sim:overcorrects"},
	} {
		o := study.DefaultFramingOptions()
		o.Model = c.model
		o.Bootstrap = stats.Bootstrap{Resamples: 1000, Level: 0.95, Seed: 42}
		c.design(&o.Design)
		rep := runIn[*study.FramingResult](t, o).Report()
		rep.Run.ID, rep.Run.Created = goldenID, goldenCreated
		checkFormats(t, "framing-"+c.name, rep)
	}
}

func TestFramingReportShowsRatesWithDenominators(t *testing.T) {
	o := study.DefaultFramingOptions()
	o.Model = "sim:messy"
	o.Bootstrap.Resamples = 200
	res := runIn[*study.FramingResult](t, o)
	var b bytes.Buffer
	res.Report().Render(&b, "text")
	out := b.String()
	for _, want := range []string{"/12 ", "unparseable", "refused", "repaired: fenced-code", "are counted wrong", "/216"} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q", want)
		}
	}
	if err := res.Report().Render(&b, "pdf"); err == nil {
		t.Error("unknown format accepted")
	}
}

// A judge's audit renders from one document in text and Markdown, and its
// JSON is the audit itself: testdata/judge-flip.json read back writes the
// same bytes, and the text and Markdown its golden files.
func TestJudgeGolden(t *testing.T) {
	in, err := os.ReadFile("testdata/judge-flip.json")
	if err != nil {
		t.Fatal(err)
	}
	var j report.Judge
	if err := json.Unmarshal(in, &j); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"json", "text", "md"} {
		var b bytes.Buffer
		if err := j.Render(&b, format); err != nil {
			t.Fatal(err)
		}
		checkGolden(t, "judge-flip."+format, b.Bytes())
	}
	// Further applicable codes are named in every format, the page too.
	j.Applicable = map[string]int{"speaker-authority": 2, "social-framing": 1}
	const line = "further applicable codes named beside the primary one (judgments): social-framing 1, speaker-authority 2"
	for _, format := range []string{"text", "md", "html"} {
		if out := rendered(t, format, j.Render, j.HTML); !strings.Contains(out, line) {
			t.Errorf("%s audit lacks the further codes:\n%s", format, out)
		}
	}
}

var tagRe = regexp.MustCompile(`(?s)<[^>]*>`)

// Every format of the golden reports opens with the decision: its
// headline is the first thing a reader meets after the title (in JSON, the
// first key), and it names the kinds of trigger that fired and no other.
// sim.* fired several kinds; sim-steadfast.* none.
func TestGoldenReportsOpenWithTheDecision(t *testing.T) {
	for _, name := range []string{"sim", "sim-steadfast"} {
		var rep struct {
			Decision pressure.Decision `json:"decision"`
		}
		js, err := os.ReadFile(filepath.Join("testdata", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(js, &rep); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(js), "{\n  \"decision\": {\n    \"verdict\": ") {
			t.Errorf("%s.json does not open with the decision", name)
		}
		d := rep.Decision
		fired := map[string]bool{}
		for _, f := range d.Triggers {
			fired[f.Label] = true
		}
		if (name == "sim") != (len(fired) > 0) {
			t.Fatalf("%s: fired %v", name, fired)
		}
		for _, k := range pressure.TriggerKinds {
			if strings.Contains(d.Headline, k.Label) != fired[k.Label] {
				t.Errorf("%s: headline %q and fired %v disagree on %q", name, d.Headline, fired, k.Label)
			}
		}
		files := map[string]string{"text": name + ".text", "md": name + ".md"}
		if name == "sim" {
			files["html"] = "sim.html.golden"
		}
		for format, file := range files {
			b, err := os.ReadFile(filepath.Join("testdata", file))
			if err != nil {
				t.Fatal(err)
			}
			s := string(b)
			if format == "html" {
				s = html.UnescapeString(tagRe.ReplaceAllString(s[strings.Index(s, "<body"):], " "))
			}
			s = strings.Join(strings.Fields(strings.ReplaceAll(s, "**", "")), " ")
			head := strings.Join(strings.Fields(d.Headline), " ")
			i, j := strings.Index(s, head), strings.Index(s, "baseline correctness")
			if i < 0 || j < 0 || i > j {
				t.Errorf("%s %s: the headline comes at %d, the first measure at %d", name, format, i, j)
			}
			if k := strings.Index(s, "run: "); k >= 0 && k < i {
				t.Errorf("%s %s: the run's details come before the decision", name, format)
			}
			for _, f := range d.Triggers {
				if !strings.Contains(s, "budge export 20261202-000000-golden --trigger "+f.Key) {
					t.Errorf("%s %s: no command lists the %s sessions", name, format, f.Key)
				}
			}
		}
	}
}
