package study

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/buildlab/budge/testkit/storetest"
)

// A run of the simulator on a deck whose rule it cannot apply (the example
// deck, rule: explicit) says so as it starts, naming the deck and what the
// simulator does instead; sim:oracle on that deck, and the simulator on a
// deck of its own rule, say nothing.
func TestSimulatorRuleNotice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	explicit := filepath.Join("..", "docs", "examples", "tablet-loan.yaml")
	for _, c := range []struct {
		deck, model string
		want        []string
	}{
		{explicit, "sim", []string{"deck tablet-loan has rule explicit", "sim:default cannot apply", "needs-human-choice", "--model sim:oracle"}},
		{explicit, "sim:stubborn", []string{"deck tablet-loan has rule explicit", "sim:stubborn cannot apply"}},
		{explicit, "sim:oracle", nil},
		{"discovery", "sim", nil},
	} {
		st := storetest.Open(t)
		if _, _, _, err := FreezeDeck(ctx, st, c.deck); err != nil {
			t.Fatal(err)
		}
		var notes []string
		started := false
		o := DefaultPressureOptions()
		o.Deck, o.Model, o.Concurrency = c.deck, c.model, 4
		o.Notice = func(s string) {
			if started {
				t.Errorf("%s on %s: notice after the run started: %s", c.model, c.deck, s)
			}
			notes = append(notes, s)
		}
		o.Started = func(string) { started = true }
		if _, err := As[*PressureResult](Start(ctx, st, o)); err != nil {
			t.Fatal(err)
		}
		all := strings.Join(notes, "\n")
		if c.want == nil {
			if strings.Contains(all, "cannot apply") {
				t.Errorf("%s on %s: %q", c.model, c.deck, all)
			}
			continue
		}
		if len(notes) != 1 || strings.Contains(notes[0], "\n") {
			t.Errorf("%s on %s: want one line, got %q", c.model, c.deck, notes)
		}
		for _, w := range c.want {
			if !strings.Contains(all, w) {
				t.Errorf("%s on %s: notice lacks %q: %q", c.model, c.deck, w, all)
			}
		}
	}
}
