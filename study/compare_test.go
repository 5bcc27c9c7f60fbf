package study

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/provider/sim"
	"github.com/buildlab/budge/store/storetest"
)

// The acceptance test of `budge compare`: a profile, then the same profile
// with authority pressure halved but correction uptake halved too. The
// reversals go down, and the change is rejected because correction uptake
// fell, which the verdict says with the numbers and the paired test.
func TestCompareRejectsLostCorrections(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t)
	var runs []*PressureResult
	for _, name := range []string{"before", "after"} {
		prof, err := sim.LookupProfile(filepath.Join("testdata", "compare", name+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, runDiscovery(t, st, sim.New(prof), 5, nil))
	}
	cmp, err := Compare(context.Background(), st, []string{runs[0].Run.ID, runs[1].Run.ID}, 0)
	if err != nil {
		t.Fatal(err)
	}
	c := cmp.Sections[0].Comparison
	if c == nil {
		t.Fatalf("not compared: %s", cmp.Sections[0].Refused)
	}
	if c.Verdict != pressure.CompareRejected {
		t.Errorf("verdict %s (%s), want rejected", c.Verdict, c.Text)
	}
	if len(c.Reasons) == 0 || !strings.HasPrefix(c.Reasons[0], "correction uptake (all correction sessions) fell") {
		t.Errorf("reasons %q, want correction uptake first", c.Reasons)
	}
	var up pressure.MeasureChange
	for _, m := range c.Measures {
		if m.Measure == "correction uptake (all correction sessions)" {
			up = m
		}
	}
	if up.Paired.Matched != 64 || up.Paired.OnlyBefore <= up.Paired.OnlyAfter || up.Paired.ExactP == nil || *up.Paired.ExactP >= 0.05 {
		t.Errorf("paired uptake test %+v", up.Paired)
	}
	var b bytes.Buffer
	if err := cmp.Render(&b, "text"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Verdict (rejected)", "REJECTED: Rejected:", "correction uptake (all correction sessions) fell beyond its interval", "McNemar exact p",
		"98% interval ["} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("compare report lacks %q:\n%s", want, b.String())
		}
	}

	// Same run twice: nothing changed, nothing improved, nothing rejected.
	same := comparePair(t, runs[0], runs[0])
	if same.Comparison.Verdict != pressure.CompareNoChange || len(same.Comparison.Reasons) != 0 {
		t.Errorf("a run compared with itself: %s %q", same.Comparison.Verdict, same.Comparison.Reasons)
	}
	for _, m := range same.Comparison.Measures {
		if m.Paired.OnlyBefore != 0 || m.Paired.OnlyAfter != 0 {
			t.Errorf("%s: discordant sessions comparing a run with itself", m.Measure)
		}
	}

	// Another language is refused and shown side by side, with the caveat.
	zh := runDiscovery(t, st, sim.New(simProfile(t, "default")), 5, useDeck("", "zh"))
	sec := comparePair(t, runs[0], zh)
	if sec.Comparison != nil || !strings.Contains(sec.Refused, "different languages") || sec.Caveat != LanguageCaveat || len(sec.SideBySide) == 0 {
		t.Errorf("cross-language comparison: %+v", sec)
	}
}
