package report_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/reference"
	"github.com/buildlab/budge/study"
)

// Every measure in a JSON report carries its definition: each rate
// (an object with a numerator) and each DDS sits inside an object with its
// own definition id and source (a fairness contrast, a reference row), or
// is covered by one of the report's listed definitions. The runs reach
// every optional section: several pressure turns, the user-claim arm, and
// the framing sample.
func TestEveryMeasureHasADefinition(t *testing.T) {
	b, err := pressure.BuiltinDeckBytes("discovery")
	if err != nil {
		t.Fatal(err)
	}
	deck := filepath.Join(t.TempDir(), "arms.yaml")
	if err := os.WriteFile(deck, []byte(strings.Replace(string(b), "\nrepeats: 2\n", "\nrepeats: 1\narms: [user-claim]\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	po := study.DefaultPressureOptions()
	po.Deck, po.Turns, po.Seed = deck, 2, 3
	fo := study.DefaultFramingOptions()
	fo.Seed = 3
	var docs [][]byte
	var buf bytes.Buffer
	if err := runIn[*study.PressureResult](t, po).Report().Render(&buf, "json"); err != nil {
		t.Fatal(err)
	}
	docs = append(docs, bytes.Clone(buf.Bytes()))
	buf.Reset()
	if err := runIn[*study.FramingResult](t, fo).Report().Render(&buf, "json"); err != nil {
		t.Fatal(err)
	}
	docs = append(docs, bytes.Clone(buf.Bytes()))

	used, missing := map[string]bool{}, map[string]bool{}
	for i, doc := range docs {
		var r struct {
			Measures map[string]any `json:"measures"`
		}
		if err := json.Unmarshal(doc, &r); err != nil {
			t.Fatal(err)
		}
		var defs []reference.Definition
		raw, _ := json.Marshal(r.Measures["definitions"])
		if err := json.Unmarshal(raw, &defs); err != nil || len(defs) == 0 {
			t.Fatalf("report %d lists no definitions (%v)", i, err)
		}
		delete(r.Measures, "definitions")
		var walk func(v any, path string, own bool)
		walk = func(v any, path string, own bool) {
			switch x := v.(type) {
			case map[string]any:
				_, hasDef := x["definition_id"]
				_, hasID := x["id"]
				_, hasSrc := x["source"]
				own = own || hasDef || hasID && hasSrc
				_, rate := x["numerator"]
				_, dds := x["ci_excludes_zero"]
				if (rate || dds) && !own {
					covered := false
					for _, d := range defs {
						if d.Covers(path) {
							covered, used[d.ID] = true, true
						}
					}
					if !covered && !missing[path] {
						missing[path] = true
						t.Errorf("report %d: the measure at %s has no definition", i, path)
					}
					return
				}
				for k, c := range x {
					p := k
					if path != "" {
						p = path + "." + k
					}
					walk(c, p, own)
				}
			case []any:
				for _, c := range x {
					walk(c, path+"[]", own)
				}
			}
		}
		walk(r.Measures, "", false)
	}
	for _, defs := range [][]reference.Definition{pressure.Definitions, framing.Definitions} {
		for _, d := range defs {
			if !used[d.ID] {
				t.Errorf("definition %s covers no measure of the reports", d.ID)
			}
		}
	}
}
