package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// budge run of the simulator on a deck whose rule it cannot apply says so
// on stderr before the run's id, in one line naming the deck.
func TestRunSaysTheSimulatorCannotApplyTheRule(t *testing.T) {
	t.Parallel()
	deck := filepath.Join("..", "..", "docs", "examples", "tablet-loan.yaml")
	code, out, errs := budge(t, "run", "--deck", deck, "--dir", t.TempDir(), "--quiet", "--format", "json")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	i, j := strings.Index(errs, "note: deck tablet-loan has rule explicit, which sim:default cannot apply"), strings.Index(errs, "run: ")
	if i < 0 || j < i {
		t.Fatalf("stderr lacks the notice before the run id:\n%s", errs)
	}
	if strings.Contains(out, "cannot apply") {
		t.Errorf("the notice reached stdout (the JSON report)")
	}
}
