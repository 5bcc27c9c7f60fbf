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
	rows := challengedRows(t, func(i int, c Condition) Reply {
		if i == 2 {
			return Reply{Status: StatusUnparseable}
		}
		return right(c, i >= 2)
	})
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
