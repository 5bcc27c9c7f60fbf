package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A confirmation deck must be frozen before its first run; once it is,
// runs on it are not exploratory, and a second revision on it is warned about.
func TestConfirmationDeckMustBeFrozen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, _, errs := budge(t, "run", "--dir", dir, "--deck", "confirmation", "--quiet")
	if code != ExitInvalid || !strings.Contains(errs, "is not frozen") || !strings.Contains(errs, "budge deck freeze confirmation") {
		t.Fatalf("unfrozen confirmation run: exit %d, stderr %q; want exit 2 saying how to freeze it", code, errs)
	}
	if code, out, errs := budge(t, "deck", "freeze", "--dir", dir, "confirmation"); code != ExitOK || !strings.HasPrefix(out, "frozen: deck confirmation") {
		t.Fatalf("freeze: exit %d, %q %q", code, out, errs)
	}
	if code, out, _ := budge(t, "deck", "freeze", "--dir", dir, "confirmation"); code != ExitOK || !strings.Contains(out, "already frozen") {
		t.Errorf("second freeze: exit %d, %q", code, out)
	}
	code, out, errs := budge(t, "run", "--dir", dir, "--deck", "confirmation", "--quiet", "--concurrency", "16")
	if code != ExitOK || !strings.Contains(out, "deck frozen at") || strings.Contains(out, "EXPLORATORY") || strings.Contains(out, "revisions") {
		t.Fatalf("frozen confirmation run: exit %d\n%s\n%s", code, out, errs)
	}
	first := runLine.FindStringSubmatch(out)
	prompt := filepath.Join(t.TempDir(), "prompt.txt")
	if err := os.WriteFile(prompt, []byte("A revised application prompt: follow the availability records.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs = budge(t, "run", "--dir", dir, "--deck", "confirmation", "--quiet", "--concurrency", "16", "--prompt", prompt)
	if code != ExitOK || !strings.Contains(out, "WARNING: 2 revisions") {
		t.Fatalf("second revision on the confirmation deck: exit %d\n%s\n%s", code, out, errs)
	}
	// The two revisions compare session by session on the same deck.
	second := runLine.FindStringSubmatch(out)
	if first == nil || second == nil {
		t.Fatal("no run ids")
	}
	code, cmp, errs := budge(t, "compare", "--dir", dir, "--format", "md", first[1], second[1])
	if code != ExitOK || !strings.Contains(cmp, "## Verdict (") || !strings.Contains(cmp, "confirmation deck") || !strings.Contains(cmp, "McNemar") {
		t.Errorf("compare two revisions: exit %d %s\n%.800s", code, errs, cmp)
	}
	// The JSON report of a run on the frozen deck says it is not exploratory.
	if code, out, _ := budge(t, "report", "--dir", dir, "latest", "--format", "json"); code != ExitOK || !strings.Contains(out, `"exploratory": false`) {
		t.Errorf("report json: exit %d, exploratory flag missing:\n%.400s", code, out)
	}
}

func TestCalibrateCommand(t *testing.T) {
	t.Parallel()
	svg := filepath.Join(t.TempDir(), "cal.svg")
	code, out, errs := budge(t, "calibrate", "--replications", "40", "--resamples", "200", "--svg", svg)
	if code != ExitOK || !strings.Contains(out, "Simulated: ") || !strings.Contains(out, "gap 10 points") || !strings.Contains(out, "false positives") {
		t.Fatalf("calibrate: exit %d %s\n%s", code, errs, out)
	}
	if b, err := os.ReadFile(svg); err != nil || !strings.Contains(string(b), "<polyline") {
		t.Errorf("calibrate --svg wrote %d bytes (%v)", len(b), err)
	}
	if code, _, errs := budge(t, "calibrate", "--cases", "1"); code != ExitInvalid || !strings.Contains(errs, "at least 2") {
		t.Errorf("calibrate --cases 1: exit %d %s", code, errs)
	}
}
