package study

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/provider/sim"
	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/testkit/storetest"
)

// runModel runs a deck on a model (the discovery deck on sim without
// edits) and returns its id.
func runModel(t *testing.T, st *store.Store, model string, edit ...func(*PressureOptions)) string {
	t.Helper()
	o := DefaultPressureOptions()
	o.Model, o.Concurrency = model, 16
	for _, e := range edit {
		e(&o)
	}
	res, err := As[*PressureResult](Start(context.Background(), st, o))
	if err != nil {
		t.Fatalf("run %s: %v", model, err)
	}
	return res.Run.ID
}

// compareRuns compares the runs ids names in pairs.
func compareRuns(t *testing.T, st *store.Store, ids ...string) report.Compare {
	t.Helper()
	cmp, err := Compare(context.Background(), st, ids, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, refused := cmp.Refused(); refused {
		t.Fatalf("compare %q refused: %+v", ids, cmp.Sections)
	}
	return cmp
}

// withPrompt runs with the application prompt text, from a file.
func withPrompt(t *testing.T, text string) func(*PressureOptions) {
	p := filepath.Join(t.TempDir(), "prompt.txt")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return func(o *PressureOptions) { o.PromptFile = p }
}

// The verdicts a gate on compare stands on: a simulator far more moved by
// pressure than the default is worse (unsupported reversals rose, first),
// the default against another run of itself is no clear change, steadfast
// after pushover is improved, and stubborn after pushover (as few
// reversals, but no correction taken) is an apparent improvement,
// rejected. Over several pairs, Rejected names only the pairs that reject.
func TestCompareVerdictsOfProfiles(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("five runs of the discovery deck")
	}
	st := storetest.Open(t)
	base, same := runModel(t, st, "sim"), runModel(t, st, "sim")
	worse := runModel(t, st, "sim:pushover")
	steady, stubborn := runModel(t, st, "sim:steadfast"), runModel(t, st, "sim:stubborn")
	verdict := func(b, a string) *pressure.Comparison {
		return compareRuns(t, st, b, a).Sections[0].Comparison
	}
	if v := verdict(base, same); v.Verdict != pressure.CompareNoChange {
		t.Errorf("equal pair: verdict %q, want no clear change", v.Verdict)
	}
	v := verdict(base, worse)
	if v.Verdict != pressure.CompareWorse || len(v.Reasons) == 0 || !strings.HasPrefix(v.Reasons[0], "unsupported reversals rose: ") {
		t.Errorf("pushover after default: verdict %q, reasons %q; want worse, the rise in unsupported reversals first", v.Verdict, v.Reasons)
	}
	if v := verdict(worse, steady); v.Verdict != pressure.CompareImproved {
		t.Errorf("steadfast after pushover: verdict %q, want improved", v.Verdict)
	}
	if v := verdict(worse, stubborn); v.Verdict != pressure.CompareRejected {
		t.Errorf("stubborn after pushover: verdict %q, want rejected", v.Verdict)
	}
	got := compareRuns(t, st, base, same, base, worse).Rejected()
	if want := []string{base + " → " + worse + ": " + pressure.CompareWorse}; !reflect.DeepEqual(got, want) {
		t.Errorf("two pairs, one worse: rejected %q, want %q", got, want)
	}
}

// compareText is the comparison of before and after in every format:
// text, md and the html diff page, with white space folded.
func compareText(t *testing.T, st *store.Store, cmp report.Compare) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range []string{"text", "md", "html"} {
		var b bytes.Buffer
		var err error
		if f == "html" {
			err = report.WriteDiff(&b, "budge compare: run diff", DiffSections(context.Background(), st, cmp))
		} else {
			err = cmp.Render(&b, f)
		}
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[f] = strings.Join(strings.Fields(b.String()), " ")
	}
	return out
}

// The advice depends on how the pair stands: a pair on the discovery deck
// is told to confirm an improvement on a frozen confirmation deck; a pair on
// the frozen confirmation deck is told it is the confirmation, and warned in
// every format when more revisions were evaluated on that deck.
func TestCompareConfirmationAdvice(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("seven runs")
	}
	ctx := context.Background()
	st := storetest.Open(t)
	before, after := runModel(t, st, "sim"), runModel(t, st, "sim:steadfast")
	s := compareRuns(t, st, before, after).Sections[0]
	if s.Comparison.Verdict != pressure.CompareImproved || !strings.Contains(s.Advice, "EXPLORATORY") ||
		!strings.Contains(s.Advice, "Confirm the improvement on a separately written confirmation deck, frozen before") {
		t.Errorf("discovery pair: verdict %q, advice %q", s.Comparison.Verdict, s.Advice)
	}

	if _, _, _, err := FreezeDeck(ctx, st, "confirmation"); err != nil {
		t.Fatal(err)
	}
	conf := func(o *PressureOptions) { o.Deck = "confirmation" }
	cb := runModel(t, st, "sim", conf)
	ca := runModel(t, st, "sim", conf, withPrompt(t, "A revised prompt: the availability record decides.\n"))
	s = compareRuns(t, st, cb, ca).Sections[0]
	if !strings.HasPrefix(s.Advice, "Confirmation: both runs are on the confirmation deck confirmation, frozen at ") ||
		strings.Contains(s.Advice, "Confirm the improvement") || len(s.Warnings) != 1 ||
		!strings.HasPrefix(s.Warnings[0], "2 revisions") || !strings.Contains(s.Warnings[0], "this pair's before and after, no other") {
		t.Errorf("frozen confirmation pair: advice %q, warnings %q; want the confirmation advice and the revisions count, no warning", s.Advice, s.Warnings)
	}

	// A third revision on the confirmation deck: comparing the first two
	// now warns, in every format.
	runModel(t, st, "sim", conf, withPrompt(t, "Another revision, tried on the confirmation deck.\n"))
	cmp := compareRuns(t, st, cb, ca)
	if w := cmp.Sections[0].Warnings; len(w) != 1 || !strings.HasPrefix(w[0], "WARNING: 3 revisions") || !strings.Contains(w[0], "1 of them besides this pair") {
		t.Errorf("warnings %q; want the revisions warning", w)
	}
	for f, text := range compareText(t, st, cmp) {
		for _, want := range []string{"WARNING: 3 revisions", "1 of them besides this pair", "Confirmation: both runs are on the confirmation deck"} {
			if !strings.Contains(text, want) {
				t.Errorf("compare --format %s lacks %q", f, want)
			}
		}
	}

	// Discovery and confirmation pairs in one compare: a confirmation pair
	// of the same revisions is pointed to from the discovery pair; one of
	// other revisions is warned about.
	cs := runModel(t, st, "sim:steadfast", conf)
	secs := compareRuns(t, st, before, after, cb, cs).Sections
	if adv := secs[0].Advice; !strings.Contains(adv, "The confirmation pair "+cb+" → "+cs+" in this comparison evaluates the same revisions") {
		t.Errorf("discovery advice with its confirmation pair: %q", adv)
	}
	for _, w := range secs[1].Warnings {
		if strings.Contains(w, "does not evaluate the same revisions") {
			t.Errorf("a matching confirmation pair is warned about: %q", w)
		}
	}
	secs = compareRuns(t, st, before, after, cb, ca).Sections
	if w := strings.Join(secs[1].Warnings, "\n"); !strings.Contains(w, "does not evaluate the same revisions as the discovery pair "+before+" → "+after) {
		t.Errorf("a confirmation pair of other revisions: warnings %q", w)
	}
	if strings.Contains(secs[0].Advice, "The confirmation pair") {
		t.Errorf("discovery advice points to a confirmation pair of other revisions: %q", secs[0].Advice)
	}
}

// A deck revised after it was frozen (the same name, frozen again with
// other content) is named in the comparison of runs on the new version.
func TestCompareDeckRevisedAfterFreezing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.Open(t)
	src, err := os.ReadFile(filepath.Join("..", "pressure", "decks", "confirmation.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	deck := filepath.Join(t.TempDir(), "conf.yaml")
	if err := os.WriteFile(deck, src, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := FreezeDeck(ctx, st, deck); err != nil {
		t.Fatal(err)
	}
	revised := strings.Replace(string(src), "title: Demo lab early-session allocation (confirmation deck)",
		"title: Demo lab early-session allocation (confirmation deck, revised)", 1)
	if revised == string(src) {
		t.Fatal("the deck's title line changed; update the test")
	}
	if err := os.WriteFile(deck, []byte(revised), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := FreezeDeck(ctx, st, deck); err != nil {
		t.Fatal(err)
	}
	onDeck := func(o *PressureOptions) { o.Deck = deck }
	b, a := runModel(t, st, "sim", onDeck), runModel(t, st, "sim:steadfast", onDeck)
	cmp := compareRuns(t, st, b, a)
	if w := cmp.Sections[0].Warnings; len(w) != 2 || !strings.Contains(w[0], "deck confirmation was revised after freezing") ||
		!strings.Contains(w[0], "1 other version(s) of it were frozen") || !strings.HasPrefix(w[1], "2 revisions") {
		t.Errorf("warnings %q; want the deck revised after freezing", w)
	}
	if text := compareText(t, st, cmp)["text"]; !strings.Contains(text, "was revised after freezing") {
		t.Errorf("text: no revision warning:\n%.600s", text)
	}
}

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
