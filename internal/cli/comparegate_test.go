package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runID runs budge run with args in dir and returns the run id.
func runID(t *testing.T, dir string, args ...string) string {
	t.Helper()
	code, out, errs := budge(t, append([]string{"run", "--dir", dir, "--quiet", "--concurrency", "16"}, args...)...)
	m := runLine.FindStringSubmatch(out)
	if code != ExitOK || m == nil {
		t.Fatalf("run %q: exit %d\n%.600s\n%s", args, code, out, errs)
	}
	return m[1]
}

// compareJSON is the verdict, warnings and advice of each pair.
type compareJSON struct {
	Comparisons []struct {
		Comparison *struct {
			Verdict string   `json:"verdict"`
			Reasons []string `json:"reasons"`
		} `json:"comparison"`
		Warnings []string `json:"warnings"`
		Advice   string   `json:"advice"`
	} `json:"comparisons"`
}

func compareAsJSON(t *testing.T, dir string, args ...string) (int, compareJSON, string) {
	t.Helper()
	code, out, errs := budge(t, append([]string{"compare", "--dir", dir, "--format", "json"}, args...)...)
	var c compareJSON
	if err := json.Unmarshal([]byte(out), &c); err != nil || len(c.Comparisons) == 0 || c.Comparisons[0].Comparison == nil {
		t.Fatalf("compare %q json: exit %d, %v\n%.400s\n%s", args, code, err, out, errs)
	}
	return code, c, errs
}

// compare --fail-on-reject is a gate: a simulator far more moved by
// pressure than the default exits 7 naming the verdict, the default
// against itself (same seed, another run) exits 0, and without the flag a
// worse change still exits 0.
func TestCompareFailOnReject(t *testing.T) {
	dir := t.TempDir()
	base := runID(t, dir)
	same := runID(t, dir)
	worse := runID(t, dir, "--model", "sim:pushover")
	steady := runID(t, dir, "--model", "sim:steadfast")
	stubborn := runID(t, dir, "--model", "sim:stubborn")

	code, c, errs := compareAsJSON(t, dir, "--fail-on-reject", base, same)
	if code != ExitOK || c.Comparisons[0].Comparison.Verdict != "no clear change" {
		t.Errorf("equal pair: exit %d, verdict %q, stderr %q; want 0, no clear change", code, c.Comparisons[0].Comparison.Verdict, errs)
	}

	code, c, errs = compareAsJSON(t, dir, "--fail-on-reject", base, worse)
	v := c.Comparisons[0].Comparison
	if code != ExitRejected || v.Verdict != "worse" || !strings.Contains(errs, "rejected") || !strings.Contains(errs, worse) {
		t.Errorf("pushover after default: exit %d, verdict %q, stderr %q; want 7, worse, naming the pair", code, v.Verdict, errs)
	}
	if len(v.Reasons) == 0 || !strings.HasPrefix(v.Reasons[0], "unsupported reversals rose: ") {
		t.Errorf("reasons %q; want the rise in unsupported reversals first", v.Reasons)
	}
	if code, _, _ := budge(t, "compare", "--dir", dir, base, worse); code != ExitOK {
		t.Errorf("without --fail-on-reject: exit %d, want 0", code)
	}
	// Several pairs: one rejected pair fails the gate.
	if code, _, errs := budge(t, "compare", "--dir", dir, "--fail-on-reject", base, same, base, worse); code != ExitRejected || strings.Contains(errs, same+" →") {
		t.Errorf("two pairs, one worse: exit %d, stderr %q; want 7 naming only the worse pair", code, errs)
	}
	// Pushover → steadfast is an improvement: exit 0. Pushover →
	// stubborn has as few reversals but takes no correction: an apparent
	// improvement, rejected: exit 7.
	if code, c, _ := compareAsJSON(t, dir, "--fail-on-reject", worse, steady); code != ExitOK || c.Comparisons[0].Comparison.Verdict != "improved" {
		t.Errorf("steadfast after pushover: exit %d, verdict %q; want 0, improved", code, c.Comparisons[0].Comparison.Verdict)
	}
	if code, c, _ := compareAsJSON(t, dir, "--fail-on-reject", worse, stubborn); code != ExitRejected || c.Comparisons[0].Comparison.Verdict != "rejected" {
		t.Errorf("stubborn after pushover: exit %d, verdict %q; want 7, rejected", code, c.Comparisons[0].Comparison.Verdict)
	}
}

// A run compared with itself is refused, by id or through two arguments
// that name the same run.
func TestCompareRefusesSameRun(t *testing.T) {
	dir := t.TempDir()
	runID(t, dir)
	id := runID(t, dir)
	for _, args := range [][]string{{id, id}, {"latest", "latest"}, {"latest", id}} {
		code, out, errs := budge(t, append([]string{"compare", "--dir", dir, "--fail-on-reject"}, args...)...)
		if code != ExitInvalid || !strings.Contains(errs, "run "+id+" is compared with itself") || out != "" {
			t.Errorf("compare %q: exit %d, stdout %.100q, stderr %q; want exit 2 and a clear error", args, code, out, errs)
		}
	}
}

// The advice depends on how the pair stands: a pair on the discovery deck
// is told to confirm an improvement on a frozen confirmation deck; a pair on
// the frozen confirmation deck is told it is the confirmation, and warned in
// every format when more revisions were evaluated on that deck.
func TestCompareConfirmationAdvice(t *testing.T) {
	dir := t.TempDir()
	before := runID(t, dir)
	after := runID(t, dir, "--model", "sim:steadfast")
	_, c, _ := compareAsJSON(t, dir, before, after)
	s := c.Comparisons[0]
	if s.Comparison.Verdict != "improved" || !strings.Contains(s.Advice, "EXPLORATORY") ||
		!strings.Contains(s.Advice, "Confirm the improvement on a separately written confirmation deck, frozen before") {
		t.Errorf("discovery pair: verdict %q, advice %q", s.Comparison.Verdict, s.Advice)
	}

	if code, _, errs := budge(t, "deck", "freeze", "--dir", dir, "confirmation"); code != ExitOK {
		t.Fatalf("freeze: exit %d %s", code, errs)
	}
	prompt := func(text string) string {
		p := filepath.Join(t.TempDir(), "prompt.txt")
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cb := runID(t, dir, "--deck", "confirmation")
	ca := runID(t, dir, "--deck", "confirmation", "--prompt", prompt("A revised prompt: the availability record decides.\n"))
	_, c, _ = compareAsJSON(t, dir, cb, ca)
	s = c.Comparisons[0]
	if !strings.HasPrefix(s.Advice, "Confirmation: both runs are on the confirmation deck confirmation, frozen at ") ||
		strings.Contains(s.Advice, "Confirm the improvement") || len(s.Warnings) != 1 ||
		!strings.HasPrefix(s.Warnings[0], "2 revisions") || !strings.Contains(s.Warnings[0], "this pair's before and after, no other") {
		t.Errorf("frozen confirmation pair: advice %q, warnings %q; want the confirmation advice and the revisions count, no warning", s.Advice, s.Warnings)
	}

	// A third revision on the confirmation deck: comparing the first two
	// now warns, in every format.
	runID(t, dir, "--deck", "confirmation", "--prompt", prompt("Another revision, tried on the confirmation deck.\n"))
	_, c, _ = compareAsJSON(t, dir, cb, ca)
	if w := c.Comparisons[0].Warnings; len(w) != 1 || !strings.HasPrefix(w[0], "WARNING: 3 revisions") || !strings.Contains(w[0], "1 of them besides this pair") {
		t.Errorf("json warnings %q; want the revisions warning", w)
	}
	for _, f := range []string{"text", "md", "html"} {
		file := filepath.Join(t.TempDir(), "cmp."+f)
		if code, _, errs := budge(t, "compare", "--dir", dir, "--format", f, "-o", file, cb, ca); code != ExitOK {
			t.Fatalf("compare --format %s: exit %d %s", f, code, errs)
		}
		b, _ := os.ReadFile(file)
		for _, want := range []string{"WARNING: 3 revisions", "1 of them besides this pair", "Confirmation: both runs are on the confirmation deck"} {
			if !strings.Contains(unwrapped(string(b)), want) {
				t.Errorf("compare --format %s lacks %q", f, want)
			}
		}
	}

	// Discovery and confirmation pairs in one compare: a confirmation pair
	// of the same revisions is pointed to from the discovery pair; one of
	// other revisions is warned about.
	cs := runID(t, dir, "--deck", "confirmation", "--model", "sim:steadfast")
	_, c, _ = compareAsJSON(t, dir, before, after, cb, cs)
	if adv := c.Comparisons[0].Advice; !strings.Contains(adv, "The confirmation pair "+cb+" → "+cs+" in this comparison evaluates the same revisions") {
		t.Errorf("discovery advice with its confirmation pair: %q", adv)
	}
	for _, w := range c.Comparisons[1].Warnings {
		if strings.Contains(w, "does not evaluate the same revisions") {
			t.Errorf("a matching confirmation pair is warned about: %q", w)
		}
	}
	_, c, _ = compareAsJSON(t, dir, before, after, cb, ca)
	if w := strings.Join(c.Comparisons[1].Warnings, "\n"); !strings.Contains(w, "does not evaluate the same revisions as the discovery pair "+before+" → "+after) {
		t.Errorf("a confirmation pair of other revisions: warnings %q", w)
	}
	if strings.Contains(c.Comparisons[0].Advice, "The confirmation pair") {
		t.Errorf("discovery advice points to a confirmation pair of other revisions: %q", c.Comparisons[0].Advice)
	}
}

// A deck revised after it was frozen (the same name, frozen again with
// other content) is named in the comparison of runs on the new version.
func TestCompareDeckRevisedAfterFreezing(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("..", "..", "pressure", "decks", "confirmation.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	deck := filepath.Join(t.TempDir(), "conf.yaml")
	if err := os.WriteFile(deck, src, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := budge(t, "deck", "freeze", "--dir", dir, deck); code != ExitOK {
		t.Fatalf("freeze: exit %d %s", code, errs)
	}
	revised := strings.Replace(string(src), "title: Demo lab early-session allocation (confirmation deck)",
		"title: Demo lab early-session allocation (confirmation deck, revised)", 1)
	if revised == string(src) {
		t.Fatal("the deck's title line changed; update the test")
	}
	if err := os.WriteFile(deck, []byte(revised), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := budge(t, "deck", "freeze", "--dir", dir, deck); code != ExitOK {
		t.Fatalf("second freeze: exit %d %s", code, errs)
	}
	b := runID(t, dir, "--deck", deck)
	a := runID(t, dir, "--deck", deck, "--model", "sim:steadfast")
	_, c, _ := compareAsJSON(t, dir, b, a)
	if w := c.Comparisons[0].Warnings; len(w) != 2 || !strings.Contains(w[0], "deck confirmation was revised after freezing") ||
		!strings.Contains(w[0], "1 other version(s) of it were frozen") || !strings.HasPrefix(w[1], "2 revisions") {
		t.Errorf("warnings %q; want the deck revised after freezing", w)
	}
	code, out, _ := budge(t, "compare", "--dir", dir, b, a)
	if code != ExitOK || !strings.Contains(out, "was revised after freezing") {
		t.Errorf("text: exit %d, no revision warning:\n%.600s", code, out)
	}
}

// Exit code 7 is documented where a user looks: compare --help and the
// exit-code table of docs/operations.md, next to every other code.
func TestExitCodesDocumented(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(readme), "## Exit codes")
	if i < 0 {
		t.Fatal("docs/operations.md has no exit-code section")
	}
	table := string(readme[i:])
	for _, code := range []int{ExitOK, ExitError, ExitInvalid, ExitIncomplete, ExitBlocked, ExitSelfTest, ExitUnmeasured, ExitRejected} {
		if !strings.Contains(table, fmt.Sprintf("\n| %d | ", code)) {
			t.Errorf("the exit-code table of docs/operations.md has no row for %d", code)
		}
	}
	if !strings.Contains(table, "| 7 | `budge compare --fail-on-reject`") {
		t.Error("the exit-code row for 7 does not name compare --fail-on-reject")
	}
	_, help, _ := budge(t, "compare", "--help")
	if !strings.Contains(help, "7 --fail-on-reject") || !strings.Contains(help, "-fail-on-reject") {
		t.Errorf("compare --help does not document exit 7:\n%s", help)
	}
}
