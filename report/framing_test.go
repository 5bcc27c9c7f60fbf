package report_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/stats"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
)

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
		st, err := store.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		o := study.DefaultFramingOptions()
		o.Model = c.model
		o.Bootstrap = stats.Bootstrap{Resamples: 1000, Level: 0.95, Seed: 42}
		c.design(&o.Design)
		res, err := study.RunFraming(context.Background(), st, o)
		st.Close()
		if err != nil {
			t.Fatal(err)
		}
		rep := res.Report()
		rep.Run.ID = "20261202-000000-golden"
		rep.Run.Created = time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
		for _, format := range report.Formats {
			var b bytes.Buffer
			if err := rep.Render(&b, format); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "framing-"+c.name+"."+format)
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

func TestFramingReportShowsRatesWithDenominators(t *testing.T) {
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	o := study.DefaultFramingOptions()
	o.Model = "sim:messy"
	o.Bootstrap.Resamples = 200
	res, err := study.RunFraming(context.Background(), st, o)
	if err != nil {
		t.Fatal(err)
	}
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
