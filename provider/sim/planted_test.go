package sim

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"testing"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/pressure"
)

// runSession runs the session sp of d in process against s on channel ch
// with the given session seed and k pressure turns (0: the deck's one),
// and scores it as a run would.
func runSession(t *testing.T, s *Sim, d *pressure.Deck, sp pressure.Spec, ch pressure.Channel, seed int64, k int) pressure.Outcome {
	t.Helper()
	se, err := pressure.NewSession(d, sp, ch, "sim", chat.Settings{Seed: &seed}, "")
	if err != nil {
		t.Fatal(err)
	}
	if k > 0 {
		se.WithTurns(k)
	}
	for req := se.Next(); req != nil; req = se.Next() {
		resp, err := s.Chat(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		se.Observe(resp)
	}
	return pressure.ScoreWith(d, sp, pressure.Transcript{Ran: true, Entries: se.Entries(), Stop: se.Stop(), Channel: ch, Turns: k}, pressure.ParseOptions{})
}

// runDeckOutcomes runs every session of d in process against a simulator
// with profile p (tool channel, no store), with session seeds drawn from
// seed as a run's are, and scores each as the run would.
func runDeckOutcomes(t *testing.T, d *pressure.Deck, p Profile, seed uint64) []pressure.Outcome {
	t.Helper()
	s := New(p)
	plan := pressure.Plan(d)
	outs := make([]pressure.Outcome, len(plan))
	for i, sp := range plan {
		outs[i] = runSession(t, s, d, sp, pressure.ToolChannel, pressure.SessionSeed(seed, sp.ID()), 0)
	}
	return outs
}

// deckRuns memoizes runDeckOutcomes by profile name and seed (a run is a
// function of both): cases that compare against the same runs before share
// them.
type deckRuns struct {
	d    *pressure.Deck
	mu   sync.Mutex
	runs map[string][]pressure.Outcome
}

func (r *deckRuns) get(t *testing.T, p Profile, seed uint64) []pressure.Outcome {
	key := fmt.Sprintf("%s/%d", p.Name, seed)
	r.mu.Lock()
	outs, ok := r.runs[key]
	r.mu.Unlock()
	if !ok {
		outs = runDeckOutcomes(t, r.d, p, seed)
		r.mu.Lock()
		r.runs[key] = outs
		r.mu.Unlock()
	}
	return outs
}

// comparePairs compares n pairs of discovery runs, the runs before with
// profile b and seeds 1..n, the runs after with profile a and seeds
// 1001..1000+n, and counts the verdicts.
func comparePairs(t *testing.T, runs *deckRuns, b, a Profile, n int) map[string]int {
	t.Helper()
	verdicts := make([]string, n)
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				before := runs.get(t, b, uint64(1+i))
				after := runs.get(t, a, uint64(1001+i))
				verdicts[i] = compareRuns(runs.d, before, after).Verdict
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	count := map[string]int{}
	for _, v := range verdicts {
		count[v]++
	}
	return count
}

// flatReversal is a profile with the same reversal rate in every family
// and direction, taking every verified correction it reads (0.92), and
// the default profile's small rates of error, refusal and malformed
// answers.
func flatReversal(name string, r float64) Profile {
	p := profiles["default"].clone()
	p.Name = name
	p.Reversal = rev(r, r, r, r, r, r)
	return p
}

// The comparison's verdicts on planted simulator runs: two runs of one
// profile (sim:default) with different seeds are "no clear change" in at
// least 48 of 50 pairs; a planted 15-point fall of unsupported reversals
// (0.20 → 0.05 in every family and direction) with correction uptake
// unchanged is "improved" in at least 40 of 50; the same fall with
// correction uptake collapsed (0.92 → 0.10) is "rejected" in at least 24
// of 25; the same reversal rate split 0.60 toward X and none toward Y
// instead of 0.30 each (a directional gap widened by 60 points) is
// "worse" in at least 24 of 25. The first two are rates a correct
// comparer only nearly always gets right (false alarms, power), so they
// take 50 pairs; the last two are verdicts a wrong comparer gets wrong in
// nearly every pair (one that ignored uptake would call the collapse
// "improved", one that pooled the directions would call the widened gap
// "no clear change"), and 25 pairs tell either apart from a correct one
// with as wide a margin at half the cost (each pair is two runs of the
// discovery deck).
// Each pair's runs are independent draws, as two real runs are; the
// planted improvement and the collapse are compared with the same runs
// before.
func TestCompareVerdictsOnPlantedRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("275 simulated discovery runs")
	}
	d := openDeck(t, "discovery")
	runs := &deckRuns{d: d, runs: map[string][]pressure.Outcome{}}
	def := profiles["default"].clone()
	before, after := flatReversal("before", 0.20), flatReversal("after", 0.05)
	collapsed := after.clone()
	collapsed.Name, collapsed.CorrectionUptake = "collapsed", 0.10
	lean := flatReversal("lean", 0)
	lean.Reversal = rev(0.60, 0, 0.60, 0, 0.60, 0)
	for _, tc := range []struct {
		name    string
		b, a    Profile
		verdict string
		n       int // pairs
		atLeast int
	}{
		{"same profile", def, def, pressure.CompareNoChange, 50, 48},
		{"planted improvement", before, after, pressure.CompareImproved, 50, 40},
		{"uptake collapsed", before, collapsed, pressure.CompareRejected, 25, 24},
		// The overall reversal rate stays 0.30, but the pressure now moves
		// the model toward X far more than toward Y: the directional gap
		// widens by 60 points, which alone makes the change worse.
		{"gap widened", flatReversal("level", 0.30), lean, pressure.CompareWorse, 25, 24},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := comparePairs(t, runs, tc.b, tc.a, tc.n)
			t.Logf("%s: %v", tc.name, got)
			if got[tc.verdict] < tc.atLeast {
				t.Errorf("%s: %d of %d pairs %q (verdicts %v), want at least %d", tc.name, got[tc.verdict], tc.n, tc.verdict, got, tc.atLeast)
			}
		})
	}
}

// compareRuns compares two runs' scored sessions, session by session, with
// no minimum effect (pressure.Comparer, as budge compare does).
func compareRuns(d *pressure.Deck, before, after []pressure.Outcome) pressure.Comparison {
	cm := pressure.NewComparer(d, 0)
	byID := map[string]*pressure.Outcome{}
	for i := range before {
		cm.Before(&before[i])
		byID[before[i].ID()] = &before[i]
	}
	for i := range after {
		cm.After(&after[i], byID[after[i].ID()])
	}
	return cm.Comparison()
}

// runPlanted runs every session of d once in process against a simulator
// with profile p (no HTTP, no store), scoring and tallying each as a run
// would, with the replication's run seed.
func runPlanted(t *testing.T, d *pressure.Deck, p Profile, rep int) pressure.Summary {
	t.Helper()
	s := New(p)
	tally := pressure.NewTally(d)
	for _, sp := range pressure.Plan(d) {
		o := runSession(t, s, d, sp, pressure.ToolChannel, pressure.SessionSeed(uint64(rep), sp.ID()), 0)
		tally.Add(&o)
	}
	return tally.Summary()
}

// manyAmbiguous is the discovery deck's two ambiguous cases, each copied
// six times under new case ids (12 base cases, 96 sessions, one repeat).
func manyAmbiguous(t *testing.T) *pressure.Deck {
	d := openDeck(t, "discovery")
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
	t.Parallel()
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
	t.Parallel()
	if testing.Short() {
		t.Skip("100 replications")
	}
	d := openDeck(t, "discovery")
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
		o := runSession(t, s, d, sp, pressure.MessageChannel, pressure.SessionSeed(uint64(rep), sp.ID()), k)
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
	d := openDeck(t, "discovery")
	const k, reps = 3, 100
	for _, tc := range []struct {
		name      string
		p, growth float64
	}{{"constant", 0.25, 0}, {"accumulating", 0.1, 0.15}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // the two plants share nothing but the deck, which runs only read
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
