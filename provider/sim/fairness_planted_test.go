package sim

import (
	"context"
	"fmt"
	"testing"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/pressure"
)

// runPlanted runs every session of d once in process against a simulator
// with profile p (no HTTP, no store), scoring and tallying each as a run
// would, with the replication's run seed.
func runPlanted(t *testing.T, d *pressure.Deck, p Profile, rep int) pressure.Summary {
	t.Helper()
	s := New(p)
	tally := pressure.NewTally(d)
	for _, sp := range pressure.Plan(d) {
		seed := pressure.SessionSeed(uint64(rep), sp.ID())
		se, err := pressure.NewSession(d, sp, pressure.ToolChannel, "sim", chat.Settings{Seed: &seed}, "")
		if err != nil {
			t.Fatal(err)
		}
		for req := se.Next(); req != nil; req = se.Next() {
			resp, err := s.Chat(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			se.Observe(resp)
		}
		o := pressure.ScoreWith(d, sp, pressure.Transcript{Ran: true, Entries: se.Entries(), Stop: se.Stop(), Channel: pressure.ToolChannel}, pressure.ParseOptions{})
		tally.Add(&o)
	}
	return tally.Summary()
}

// manyAmbiguous is the discovery deck's two ambiguous cases, each copied
// six times under new case ids (12 base cases, 96 sessions, one repeat).
func manyAmbiguous(t *testing.T) *pressure.Deck {
	d, err := pressure.OpenDeck("discovery")
	if err != nil {
		t.Fatal(err)
	}
	var cases []pressure.Case
	for _, c := range d.Cases {
		if c.Kind != pressure.Ambiguous {
			continue
		}
		for k := 0; k < 6; k++ {
			cc := c
			cc.ID = fmt.Sprintf("%s-%d", c.ID, k)
			cases = append(cases, cc)
		}
	}
	d.Cases, d.Repeats = cases, 1
	return d
}

// TestPlantedTieLean plants a tie lean in the simulator (an invented
// winner is the X profile with chance 0.7, whatever its position) and
// checks that the report's tie lean recovers it: the cluster interval
// holds 0.7 in at least 90 of 100 replications, and the mean estimate is
// near 0.7. A simulator without the knob (winners by position) gives a
// mean lean near 0.5, so the test can tell a lean from none.
func TestPlantedTieLean(t *testing.T) {
	if testing.Short() {
		t.Skip("100 replications")
	}
	d := manyAmbiguous(t)
	const reps, planted = 100, 0.7
	leaned := Profile{Name: "planted-tie", InventWinner: 0.5, TieLean: ptr(planted)}
	covered, sum, n := 0, 0.0, 0
	for rep := 1; rep <= reps; rep++ {
		l := runPlanted(t, d, leaned, rep).Fairness.TieLean
		if l.Lean == nil {
			continue
		}
		n++
		sum += *l.Lean
		if l.Interval != nil && l.Interval.Low <= planted && planted <= l.Interval.High {
			covered++
		}
	}
	t.Logf("tie lean %.2f planted: interval covers it in %d/%d replications, mean estimate %.3f over %d", planted, covered, reps, sum/float64(n), n)
	if covered < 90 {
		t.Errorf("the tie-lean interval held the planted %.2f in %d of %d replications, want at least 90", planted, covered, reps)
	}
	if m := sum / float64(n); m < planted-0.03 || m > planted+0.03 {
		t.Errorf("mean tie lean %.3f, planted %.2f", m, planted)
	}
	unleaned := leaned
	unleaned.TieLean = nil
	sum, n = 0, 0
	for rep := 1; rep <= 20; rep++ {
		if l := runPlanted(t, d, unleaned, rep).Fairness.TieLean; l.Lean != nil {
			sum += *l.Lean
			n++
		}
	}
	if m := sum / float64(n); m < 0.45 || m > 0.55 {
		t.Errorf("without a planted lean the mean tie lean is %.3f, want about 0.5", m)
	}
}

// TestPlantedClaimUptake plants uptake of a user's bare claim (0.5) beside
// uptake of the verified correction (0.9) and a reversal rate of 0.2 in
// every family, on the discovery deck's determinate cases with the
// user-claim arm, and checks over 100 replications that each interval
// holds its planted value in at least 90: claim uptake (Wilson), source
// discrimination 0.9 − 0.5 = 0.4 and selectivity 0.9 − 0.2 = 0.7 (both
// cluster bootstrap over the 8 base cases).
func TestPlantedClaimUptake(t *testing.T) {
	if testing.Short() {
		t.Skip("100 replications")
	}
	d, err := pressure.OpenDeck("discovery")
	if err != nil {
		t.Fatal(err)
	}
	var det []pressure.Case
	for _, c := range d.Cases {
		if c.Kind == pressure.Determinate {
			det = append(det, c)
		}
	}
	d.Cases, d.Repeats, d.Arms = det, 1, []string{pressure.ArmUserClaim}
	p := Profile{Name: "planted-claim", Reversal: rev(0.2, 0.2, 0.2, 0.2, 0.2, 0.2), CorrectionUptake: 0.9, ClaimUptake: 0.5, ClaimEscalate: 0.3}
	const reps = 100
	var claimIn, sourceIn, selIn int
	var claimSum, sourceSum float64
	verify, escalate := 0, 0
	for rep := 1; rep <= reps; rep++ {
		sel := runPlanted(t, d, p, rep).Fairness.Selectivity
		if iv := pressure.WilsonInterval(sel.Claim); iv != nil && iv.Low <= 0.5 && 0.5 <= iv.High {
			claimIn++
		}
		f, _ := sel.Claim.Fraction()
		claimSum += f
		if c := sel.Source; c != nil && c.Interval != nil && c.Interval.Low <= 0.4 && 0.4 <= c.Interval.High {
			sourceIn++
		}
		if sel.Source != nil && sel.Source.Difference != nil {
			sourceSum += *sel.Source.Difference
		}
		for _, c := range sel.Syco {
			if c.Family == "all" && c.Interval != nil && c.Interval.Low <= 0.7 && 0.7 <= c.Interval.High {
				selIn++
			}
		}
		verify += sel.Responses[pressure.ClaimVerify]
		escalate += sel.Responses[pressure.ClaimEscalated]
	}
	t.Logf("intervals holding the planted value: claim uptake %d/%d (mean %.3f), source discrimination %d/%d (mean %.3f), selectivity %d/%d; "+
		"non-uptake replies: %d asked to verify, %d escalated", claimIn, reps, claimSum/reps, sourceIn, reps, sourceSum/reps, selIn, reps, verify, escalate)
	for _, c := range []struct {
		name string
		in   int
	}{{"claim uptake", claimIn}, {"source discrimination", sourceIn}, {"selectivity", selIn}} {
		if c.in < 90 {
			t.Errorf("%s: the interval held the planted value in %d of %d replications, want at least 90", c.name, c.in, reps)
		}
	}
	if m := claimSum / reps; m < 0.47 || m > 0.53 {
		t.Errorf("mean claim uptake %.3f, planted 0.5", m)
	}
	// Of the claims not taken, 30% are escalated, the rest asked to verify.
	if share := float64(escalate) / float64(escalate+verify); share < 0.25 || share > 0.35 {
		t.Errorf("escalated share of non-uptake replies %.3f, planted 0.3", share)
	}
}

// TestPositionOnlyTieLean runs the built-in posbias profile (it invents a
// winner on every ambiguous case and always names the profile shown first)
// and a noisier position-only profile (the first-shown profile with chance
// 0.8) on the ambiguous cases: the tie lean by identity must be 0.5, within
// its interval, because the X profile's slot is averaged out. The lean
// averaged over presentation order instead (budge's former definition) is
// logged beside it.
func TestPositionOnlyTieLean(t *testing.T) {
	d := manyAmbiguous(t)
	pos, err := LookupProfile("posbias")
	if err != nil {
		t.Fatal(err)
	}
	l := runPlanted(t, d, pos, 1).Fairness.TieLean
	if l.Lean == nil || *l.Lean != 0.5 {
		t.Fatalf("posbias tie lean = %v, want exactly 0.5 (X shown first %d/%d, second %d/%d)", l.Lean, l.XFirst.Num, l.XFirst.Den, l.XSecond.Num, l.XSecond.Den)
	}
	if l.XFirst.Num != l.XFirst.Den || l.XSecond.Num != 0 {
		t.Errorf("posbias: X shown first %d/%d, shown second %d/%d; want all and none", l.XFirst.Num, l.XFirst.Den, l.XSecond.Num, l.XSecond.Den)
	}
	t.Logf("posbias: tie lean %.3f (X shown first %d/%d, second %d/%d)", *l.Lean, l.XFirst.Num, l.XFirst.Den, l.XSecond.Num, l.XSecond.Den)
	noisy := Profile{Name: "position-0.8", InventWinner: 0.7, InventFirst: ptr(0.8)}
	covered, reps := 0, 40
	if testing.Short() {
		reps = 10
	}
	for rep := 1; rep <= reps; rep++ {
		l := runPlanted(t, d, noisy, rep).Fairness.TieLean
		if l.Lean != nil && l.Interval != nil && l.Interval.Low <= 0.5 && 0.5 <= l.Interval.High {
			covered++
		}
	}
	t.Logf("position lean 0.8, no identity lean: the tie-lean interval holds 0.5 in %d/%d replications", covered, reps)
	if covered < reps*85/100 {
		t.Errorf("position-only model: tie-lean interval held 0.5 in %d of %d replications, want at least 85%%", covered, reps)
	}
}
