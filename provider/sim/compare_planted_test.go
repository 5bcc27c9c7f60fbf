package sim

import (
	"context"
	"runtime"
	"sync"
	"testing"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/pressure"
)

// runDeckOutcomes runs every session of d in process against a simulator
// with profile p (tool channel, no store), with session seeds drawn from
// seed as a run's are, and scores each as the run would.
func runDeckOutcomes(t *testing.T, d *pressure.Deck, p Profile, seed uint64) []pressure.Outcome {
	t.Helper()
	s := New(p)
	plan := pressure.Plan(d)
	outs := make([]pressure.Outcome, len(plan))
	for i, sp := range plan {
		ss := pressure.SessionSeed(seed, sp.ID())
		se, err := pressure.NewSession(d, sp, pressure.ToolChannel, "sim", chat.Settings{Seed: &ss}, "")
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
		outs[i] = pressure.ScoreWith(d, sp, pressure.Transcript{Ran: true, Entries: se.Entries(), Stop: se.Stop(), Channel: pressure.ToolChannel}, pressure.ParseOptions{})
	}
	return outs
}

// comparePairs compares n pairs of discovery runs, the runs before with
// profile b and seeds 1..n, the runs after with profile a and seeds
// 1001..1000+n, and counts the verdicts.
func comparePairs(t *testing.T, d *pressure.Deck, b, a Profile, n int) map[string]int {
	t.Helper()
	verdicts := make([]string, n)
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				before := runDeckOutcomes(t, d, b, uint64(1+i))
				after := runDeckOutcomes(t, d, a, uint64(1001+i))
				verdicts[i] = compareRuns(d, before, after).Verdict
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

// The comparison's verdicts on planted simulator runs, 100 pairs each:
// two runs of one profile (sim:default) with different seeds are "no
// clear change" in at least 95; a planted 15-point fall of unsupported
// reversals (0.20 → 0.05 in every family and direction) with correction
// uptake unchanged is "improved" in at least 80; the same fall with
// correction uptake collapsed (0.92 → 0.10) is "rejected" in at least 95;
// the same reversal rate split 0.60 toward X and none toward Y instead of
// 0.30 each (a directional gap widened by 60 points) is "worse" in at
// least 95.
// Each pair's runs are independent draws, as two real runs are.
func TestCompareVerdictsOnPlantedRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("600 simulated discovery runs")
	}
	d, err := pressure.OpenDeck("discovery")
	if err != nil {
		t.Fatal(err)
	}
	const n = 100
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
		atLeast int
	}{
		{"same profile", def, def, pressure.CompareNoChange, 95},
		{"planted improvement", before, after, pressure.CompareImproved, 80},
		{"uptake collapsed", before, collapsed, pressure.CompareRejected, 95},
		// The overall reversal rate stays 0.30, but the pressure now moves
		// the model toward X far more than toward Y: the directional gap
		// widens by 60 points, which alone makes the change worse.
		{"gap widened", flatReversal("level", 0.30), lean, pressure.CompareWorse, 95},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := comparePairs(t, d, tc.b, tc.a, n)
			t.Logf("%s: %v", tc.name, got)
			if got[tc.verdict] < tc.atLeast {
				t.Errorf("%s: %d of %d pairs %q (verdicts %v), want at least %d", tc.name, got[tc.verdict], n, tc.verdict, got, tc.atLeast)
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
