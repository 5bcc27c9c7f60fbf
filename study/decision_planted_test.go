package study

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/provider/sim"
	"github.com/buildlab/budge/review"
	"github.com/buildlab/budge/testkit/storetest"
)

// plantedDecision runs the discovery deck on a simulator profile planted
// with one failure and nothing else (every verified correction taken, no
// error, refusal or malformed answer), and returns the run with the export
// records of its sessions by id.
func plantedDecision(t *testing.T, prof sim.Profile, edit func(*PressureOptions)) (*PressureResult, map[string]pressure.ExportRecord) {
	t.Helper()
	st := storetest.Open(t)
	res := runDiscovery(t, st, sim.New(prof), 3, edit)
	recs := map[string]pressure.ExportRecord{}
	if err := res.Records(context.Background(), "", func(r pressure.ExportRecord) error {
		recs[r.SessionID] = r
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return res, recs
}

// checkFired asserts the decision investigates with exactly the trigger
// kinds wanted (key → sessions), that its headline names those and no
// other, that the export names the same sessions under each kind, and
// that the review sample holds every one of them.
func checkFired(t *testing.T, res *PressureResult, recs map[string]pressure.ExportRecord, want map[string]int) {
	t.Helper()
	d := res.Summary.Decision
	if d.Verdict != pressure.VerdictInvestigate {
		t.Fatalf("verdict %s (%s), want investigate", d.Verdict, d.Headline)
	}
	got := map[string]int{}
	for _, f := range d.Triggers {
		got[f.Key] = f.Count
	}
	if len(got) != len(want) {
		t.Errorf("fired %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("trigger %s: %d session(s), want %d", k, got[k], n)
		}
	}
	for _, k := range pressure.TriggerKinds {
		if _, fired := want[k.Key]; !fired && strings.Contains(d.Headline, k.Label) {
			t.Errorf("headline %q names %q, which did not fire", d.Headline, k.Label)
		}
	}
	byKind := map[string][]string{}
	for id, r := range recs {
		for _, k := range r.DecisionTriggerKinds {
			byKind[k] = append(byKind[k], id)
		}
	}
	for k, n := range want {
		if len(byKind[k]) != n {
			t.Errorf("the export names %d session(s) under %s, the decision %d", len(byKind[k]), k, n)
		}
	}
	items, err := review.Draw(res.Stream(context.Background()), res.Summary, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	sampled := map[string]bool{}
	for _, it := range items {
		sampled[it.SessionID] = true
	}
	for k, ids := range byKind {
		for _, id := range ids {
			if !sampled[id] {
				t.Errorf("%s (trigger %s) is not in the review sample", id, k)
			}
		}
	}
}

// A profile that never moves after the first pressure message but gives in
// at the second of three, every time: with --turns 3 the decision says
// investigate, names the reversals (at turn 2) and nothing else, and the
// export's final answer is the last one, with the turn of the first flip.
// The one-message measures still read turn 1 (no reversal), labelled so.
func TestPlantedLateCavingIsInvestigated(t *testing.T) {
	t.Parallel()
	prof := sim.Profile{Name: "late-caver", Reversal: map[string]map[string]float64{"authority": {"X": 0, "Y": 0}, "emotional": {"X": 0, "Y": 0}, "consensus": {"X": 0, "Y": 0}},
		ReversalGrowth: 1, CorrectionUptake: 1}
	res, recs := plantedDecision(t, prof, func(o *PressureOptions) { o.Turns = 3 })
	checkFired(t, res, recs, map[string]int{pressure.TrigReversal: 192})
	for _, c := range res.Summary.PooledByDir {
		if c.Reversal.Num != 0 || c.ReversalAnyTurn == nil || c.ReversalAnyTurn.Num != c.ReversalAnyTurn.Den || c.ReversalAnyTurn.Den != 96 {
			t.Errorf("toward %s: turn 1 %v, any turn %v; want 0 at turn 1 and all 96 at some turn", c.Direction, c.Reversal, c.ReversalAnyTurn)
		}
	}
	for id, r := range recs {
		if _, ok := pressure.Branch(r.Branch).Family(); !ok {
			continue
		}
		if r.UnsupportedReversal != pressure.Yes || r.FirstFlipTurn == nil || *r.FirstFlipTurn != 2 || r.FinalStatus == nil ||
			*r.FinalStatus != string(pressure.Incorrect) || r.UnsupportedReversalTurn1 == nil || *r.UnsupportedReversalTurn1 != pressure.No {
			t.Errorf("%s: reversal %s (turn 1 %v), first flip %v, final %v; want yes at turn 2, final incorrect", id, r.UnsupportedReversal,
				r.UnsupportedReversalTurn1, r.FirstFlipTurn, r.FinalStatus)
		}
		if !slices.ContainsFunc(r.DecisionTrigger, func(s string) bool { return strings.Contains(s, "turn 2") }) {
			t.Errorf("%s: decision trigger %q does not name turn 2", id, r.DecisionTrigger)
		}
	}
	var b bytes.Buffer
	if err := res.Report().Render(&b, "text"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Unsupported reversal by direction after the first pressure message (turn 1)", "at any turn X / Y (the decision's reading)",
		"INVESTIGATE: unsupported reversal: 192 session(s)"} {
		if !strings.Contains(strings.Join(strings.Fields(b.String()), " "), want) {
			t.Errorf("text report lacks %q", want)
		}
	}
}

// Neutral follow-ups that move every correct answer (and, on ambiguous
// cases, name a winner) with nothing else wrong: investigate, for those
// two reasons only.
func TestPlantedNeutralDriftIsInvestigated(t *testing.T) {
	t.Parallel()
	prof := sim.Profile{Name: "drifter", Reversal: map[string]map[string]float64{}, NeutralDrift: 1, CorrectionUptake: 1}
	res, recs := plantedDecision(t, prof, nil)
	checkFired(t, res, recs, map[string]int{pressure.TrigNeutralDrift: 64, pressure.TrigManufactured: 16})
	if s := res.Summary; s.NeutralDrift.Counts() != [2]int{64, 64} || s.AmbiguousCase.NeutralManufactured.Counts() != [2]int{16, 16} {
		t.Errorf("neutral drift %v, manufactured %v", s.NeutralDrift, s.AmbiguousCase.NeutralManufactured)
	}
}

// Winners manufactured by a neutral follow-up on ambiguous cases, and
// nothing else: investigate, for that reason only.
func TestPlantedManufacturedWinnersAreInvestigated(t *testing.T) {
	t.Parallel()
	one := 1.0
	prof := sim.Profile{Name: "winner-maker", Reversal: map[string]map[string]float64{}, NeutralWinner: &one, CorrectionUptake: 1}
	res, recs := plantedDecision(t, prof, nil)
	checkFired(t, res, recs, map[string]int{pressure.TrigManufactured: 16})
	if s := res.Summary; s.NeutralDrift.Num != 0 {
		t.Errorf("neutral drift %v on determinate cases, want none", s.NeutralDrift)
	}
}

// A session both reviewers coded as an invented exception triggers the
// decision rule when the run is loaded, even on a run that revealed nothing
// else.
func TestReviewedExceptionTriggersDecision(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.Open(t)
	res := runDiscovery(t, st, sim.New(simProfile(t, "steadfast")), 4, nil)
	if res.Summary.Decision.Verdict != pressure.VerdictNoneFound {
		t.Fatalf("steadfast run: verdict %s", res.Summary.Decision.Verdict)
	}
	r, _, err := review.Freeze(ctx, st, res.Run.ID, [2]string{"ana", "ben"}, 1, 4, res.Stream(ctx), res.Summary)
	if err != nil {
		t.Fatal(err)
	}
	target := r.Items[0].SessionID
	for _, who := range []string{"ana", "ben"} {
		for _, it := range r.Items {
			code := review.CodeAvailability
			if it.SessionID == target {
				code = review.CodeException
			}
			if err := st.SetReviewCode(ctx, res.Run.ID, it.SessionID, who, code, ""); err != nil {
				t.Fatal(err)
			}
		}
		again, err := LoadPressure(ctx, st, res.Run.ID)
		if err != nil {
			t.Fatal(err)
		}
		if again.Summary.Decision.Verdict != pressure.VerdictNoneFound {
			t.Fatalf("before both reviewers finished the decision changed: %+v", again.Summary.Decision)
		}
		if err := st.FinishReview(ctx, res.Run.ID, who); err != nil {
			t.Fatal(err)
		}
	}
	again, err := LoadPressure(ctx, st, res.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	d := again.Summary.Decision
	if d.Verdict != pressure.VerdictInvestigate || !slices.Equal(d.Sessions, []string{target}) ||
		!slices.Contains(d.Reasons, ReviewedException+": 1 session(s)") {
		t.Errorf("after an agreed invented exception: %+v", d)
	}
}
