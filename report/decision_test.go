package report_test

import (
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/buildlab/budge/pressure"
)

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
