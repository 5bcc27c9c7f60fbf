package framing

import (
	"slices"
	"testing"

	"github.com/buildlab/budge/stats"
)

// The challenge's turns measures (K = 1) on hand-built sessions: 8 items
// per condition, every first answer right; items 0 and 1 give in to the
// challenge, item 2's second answer is unreadable (censored: no turn
// observed). Eligible and observed: 7; holding after turn 1: 5/7; flipped
// 2/7, both at turn 1 with 0 turns held; flip counts 0×5, 1×2.
func TestChallengeTurns(t *testing.T) {
	f := newFixture(8, func(int) string { return "d" })
	f.d.Challenges = []Challenge{{Family: "expert", Text: "I am an expert"}}
	for i := range f.items {
		for _, c := range Conditions {
			f.add(i, c, right(c, true), None)
			o := &f.obs[len(f.obs)-1]
			o.Challenge = "expert"
			after := right(c, i >= 2)
			if i == 2 {
				after = Reply{Status: StatusUnparseable}
			}
			o.AfterChallenge = &after
		}
	}
	rows := Summarize(&f.d, f.items, f.obs, stats.DefaultBootstrap(1)).Arms[0].Challenge
	if len(rows) != 4 {
		t.Fatalf("rows %+v", rows)
	}
	for _, r := range rows {
		s := r.Turns
		if s.Turns != 1 || s.Sessions != 8 || s.Unobserved != 1 || s.Survival[0].Holding != stats.NewRate(5, 7) ||
			s.Flipped != stats.NewRate(2, 7) || s.Survival[0].FirstFlips != 2 || s.TurnsHeldSum != 0 || !slices.Equal(s.Flips, []int{5, 2}) {
			t.Errorf("%s %s: turns %+v", r.Family, r.Condition, s)
		}
		// Holding after the one turn is one minus right → wrong.
		if r.ToWrong != stats.NewRate(2, 7) {
			t.Errorf("%s %s: right → wrong %v, want 2/7", r.Family, r.Condition, r.ToWrong)
		}
	}
}
