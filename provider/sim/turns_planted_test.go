package sim

import (
	"context"
	"math"
	"testing"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/pressure"
)

// runTurns runs the pressure sessions of d with k pressure turns in process
// against a simulator with profile p (message channel, no store), scoring
// and tallying each as a run of --turns k would.
func runTurns(t *testing.T, d *pressure.Deck, p Profile, k, rep int) *pressure.TurnsSummary {
	t.Helper()
	s := New(p)
	tally := pressure.NewTally(d).WithTurns(k)
	for _, sp := range pressure.Plan(d) {
		if _, ok := sp.Branch.Family(); !ok {
			continue
		}
		seed := pressure.SessionSeed(uint64(rep), sp.ID())
		se, err := pressure.NewSession(d, sp, pressure.MessageChannel, "sim", chat.Settings{Seed: &seed}, "")
		if err != nil {
			t.Fatal(err)
		}
		se.WithTurns(k)
		for req := se.Next(); req != nil; req = se.Next() {
			resp, err := s.Chat(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			se.Observe(resp)
		}
		o := pressure.ScoreWith(d, sp, pressure.Transcript{Ran: true, Entries: se.Entries(), Stop: se.Stop(), Channel: pressure.MessageChannel, Turns: k}, pressure.ParseOptions{})
		tally.Add(&o)
	}
	return tally.Summary().Turns
}

// TestPlantedSurvival plants a per-turn chance of giving in to pressure
// (the same in every family and direction, and nothing else that could
// make an answer wrong or unreadable) and checks the survival curve: the
// share still holding the correct profile after turn t is (1-p)^t for a
// constant chance p, and Π_{s≤t} (1 - p - (s-1)·g) when each turn adds g.
// In at least 90 of 100 replications the Wilson interval of every turn, in
// each direction pooled over families (96 eligible sessions), holds the
// planted value. A simulator that gave in only on turn 1 would hold 0.75
// after turns 2 and 3, well outside intervals about ±0.1 wide around 0.56
// and 0.42.
func TestPlantedSurvival(t *testing.T) {
	if testing.Short() {
		t.Skip("100 replications")
	}
	d, err := pressure.OpenDeck("discovery")
	if err != nil {
		t.Fatal(err)
	}
	const k, reps = 3, 100
	for _, tc := range []struct {
		name      string
		p, growth float64
	}{{"constant", 0.25, 0}, {"accumulating", 0.1, 0.15}} {
		t.Run(tc.name, func(t *testing.T) {
			prof := Profile{Name: "planted-turns", Reversal: rev(tc.p, tc.p, tc.p, tc.p, tc.p, tc.p), ReversalGrowth: tc.growth, CorrectionUptake: 1}
			truth := make([]float64, k)
			s := 1.0
			for i := range truth {
				s *= 1 - tc.p - float64(i)*tc.growth
				truth[i] = s
			}
			covered := map[string][]int{"X": make([]int, k), "Y": make([]int, k)}
			for rep := 1; rep <= reps; rep++ {
				for _, c := range runTurns(t, d, prof, k, rep).Cells {
					if c.Family != "all" {
						continue
					}
					if c.Turns.Sessions != 96 || c.Turns.Unobserved != 0 {
						t.Fatalf("rep %d %s: %d eligible sessions (%d unobserved), want 96 observed", rep, c.Direction, c.Turns.Sessions, c.Turns.Unobserved)
					}
					for i, pt := range c.Turns.Survival {
						iv, _ := pt.Holding.Wilson()
						if iv.Contains(truth[i]) {
							covered[c.Direction][i]++
						}
					}
				}
			}
			for dir, cov := range covered {
				for i, n := range cov {
					if n < 90 {
						t.Errorf("toward %s, turn %d: the interval held the planted %.3f in %d of %d replications", dir, i+1, truth[i], n, reps)
					}
				}
				t.Logf("toward %s: coverage by turn %v of %d (planted %v)", dir, cov, reps, roundAll(truth))
			}
		})
	}
}

func roundAll(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = math.Round(x*1000) / 1000
	}
	return out
}
