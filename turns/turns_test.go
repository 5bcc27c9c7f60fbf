package turns

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/buildlab/budge/stats"
)

// Six hand-built sessions over K=3 turns (T holds the correct choice, F
// selects the other one):
//
//	A  T T T  held throughout: 0 changes
//	B  F F F  first flip at turn 1: 1 change
//	C  T F T  first flip at turn 2, then back: 2 changes
//	D  T      ended after turn 1 (censored at 1): 0 changes
//	E  T T F  first flip at turn 3: 1 change
//	F  (none) no observed turn: unobserved
//
// Turn 1: at risk A B C D E (5); B flips; holding A C D E = 4/5; KM 0.8.
// Turn 2: D has no answer (censored 1); at risk A C E (3); C flips;
// holding A E = 2 over 3 at risk + 1 flipped before (B) = 2/4;
// KM 0.8·(1-1/3) = 0.5333.
// Turn 3: at risk A E (2); E flips; holding A = 1/(2+2) = 1/4;
// KM 0.5333·(1-1/2) = 0.2667.
// Flipped B C E = 3 of the 5 observed; turns held before the first flip
// 0+1+2 = 3; change counts: 0 → A D, 1 → B E, 2 → C; total 1·2+2·1 = 4.
func TestHandBuilt(t *testing.T) {
	tl := New(3)
	T, F := true, false
	for _, seq := range [][]bool{{T, T, T}, {F, F, F}, {T, F, T}, {T}, {T, T, F}, nil} {
		tl.Add(seq)
	}
	s := tl.Summary()
	want := []struct {
		hold                  stats.Rate
		first, atRisk, censor int
		km                    float64
	}{
		{stats.NewRate(4, 5), 1, 5, 0, 0.8},
		{stats.NewRate(2, 4), 1, 3, 1, 0.8 * 2 / 3},
		{stats.NewRate(1, 4), 1, 2, 0, 0.8 * 2 / 3 / 2},
	}
	if len(s.Survival) != 3 {
		t.Fatalf("survival has %d points, want 3", len(s.Survival))
	}
	for i, w := range want {
		p := s.Survival[i]
		if p.Turn != i+1 || p.Holding != w.hold || p.FirstFlips != w.first || p.AtRisk != w.atRisk || p.Censored != w.censor || math.Abs(p.KaplanMeier-w.km) > 1e-12 {
			t.Errorf("turn %d: got %+v, want %+v", i+1, p, w)
		}
	}
	if s.Sessions != 6 || s.Unobserved != 1 || s.Flipped != stats.NewRate(3, 5) || s.HeldAll != stats.NewRate(1, 4) {
		t.Errorf("sessions %d unobserved %d flipped %v held all %v", s.Sessions, s.Unobserved, s.Flipped, s.HeldAll)
	}
	if m, ok := s.MeanTurnsHeld(); !ok || s.TurnsHeldSum != 3 || m != 1 {
		t.Errorf("turns held sum %d mean %v", s.TurnsHeldSum, m)
	}
	if !slices.Equal(s.Flips, []int{2, 2, 1, 0}) || s.FlipsTotal != 4 {
		t.Errorf("flip counts %v total %d, want [2 2 1 0] 4", s.Flips, s.FlipsTotal)
	}
}

// One turn is the single-message protocol: holding after turn 1 is one
// minus the reversal rate, and nothing is censored.
func TestOneTurn(t *testing.T) {
	tl := New(1)
	for i := range 10 {
		tl.Add([]bool{i%5 != 0, true}) // 2 of 10 flip; the extra turn is ignored
	}
	s := tl.Summary()
	if s.Survival[0].Holding != stats.NewRate(8, 10) || s.Flipped != stats.NewRate(2, 10) || s.FlipsTotal != 2 {
		t.Errorf("got %+v", s)
	}
}

// Planted effect: sessions that flip with probability p at each turn (and
// stay flipped) hold through turn t with probability (1-p)^t. The Wilson
// interval of every turn's estimate covers the truth in at least 90 of 100
// replications.
func TestPlantedSurvival(t *testing.T) {
	const k, n, p = 4, 200, 0.2
	rng := rand.New(rand.NewPCG(7, 17))
	covered := make([]int, k)
	for range 100 {
		tl := New(k)
		for range n {
			seq := make([]bool, k)
			held := true
			for i := range seq {
				if held && rng.Float64() < p {
					held = false
				}
				seq[i] = held
			}
			tl.Add(seq)
		}
		for i, pt := range tl.Summary().Survival {
			iv, _ := pt.Holding.Wilson()
			if iv.Contains(math.Pow(1-p, float64(i+1))) {
				covered[i]++
			}
		}
	}
	for i, c := range covered {
		if c < 90 {
			t.Errorf("turn %d: the interval covered the planted survival in %d of 100 replications", i+1, c)
		}
	}
}
