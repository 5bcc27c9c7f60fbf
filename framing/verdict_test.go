package framing

import (
	"testing"

	"github.com/buildlab/budge/stats"
)

// A bound of floating-point noise around 0 (printed +0.0) is 0: the
// interval touches 0 and no reading or verdict may rest on it.
func TestNoiseBoundIsZero(t *testing.T) {
	noisy := Shift{Value: -4.3, CILo: f64(-8.7), CIHi: f64(-1e-14)}
	if got := reading(noisy); got != ReadingNone {
		t.Errorf("[-8.7, -1e-14] reads %q, want %q", got, ReadingNone)
	}
	if excludesZero(-8.7, -1e-14) || excludesZero(1e-14, 3) {
		t.Error("noise around 0 counted as excluding 0")
	}
	if !excludesZero(-8.7, -0.03) {
		t.Error("a real bound of -0.03 must exclude 0")
	}
	before := Shift{Value: 30, CILo: f64(20), CIHi: f64(40), ExcludesZero: true}
	after := Shift{Value: -10, CILo: f64(-20), CIHi: f64(-1e-14)}
	diff := Shift{Value: -40, CILo: f64(-50), CIHi: f64(-30), ExcludesZero: true}
	if got := comparisonOutcome(before, after, diff); got != OutcomeReduced {
		t.Errorf("after [-20, -1e-14]: %q, want %q (not over-correction)", got, OutcomeReduced)
	}
	after.CIHi = f64(-2)
	if got := comparisonOutcome(before, after, diff); got != OutcomeOverCorrection {
		t.Errorf("got %q, want over-correction", got)
	}
	diff.CIHi, diff.ExcludesZero = f64(1e-14), false
	if got := comparisonOutcome(before, after, diff); got != OutcomeNoClearChange {
		t.Errorf("a difference whose interval touches 0: %q, want %q", got, OutcomeNoClearChange)
	}
}

// A cell is measured only with at least half its items, and at least
// MinAnsweredItems of them, answered in all four conditions.
func TestMeasurabilityThresholds(t *testing.T) {
	for _, tc := range []struct {
		items, unreadable int
		want              string
	}{
		{20, 0, VerdictMeasurable},
		{20, 10, VerdictMeasurable},    // 50%: at the threshold
		{20, 11, VerdictNotMeasurable}, // 45%
		{6, 2, VerdictNotMeasurable},   // 67%, but 4 items
		{20, 20, VerdictNotMeasurable}, // a judge that refuses everything
	} {
		f := newFixture(tc.items, func(int) string { return "d" })
		f.answer(func(i int, c Condition) (Reply, bool) {
			if i < tc.unreadable && c == C2Incorrect {
				return Reply{Status: StatusRefused}, true
			}
			return right(c, i%2 == 0), true
		})
		s := Summarize(&f.d, f.items, f.obs, stats.Bootstrap{Resamples: 100, Level: 0.95, Seed: 1})
		cell := s.Arms[0].Domains["d"]
		if s.Measurability.Verdict != tc.want || (cell.Reading == ReadingNotMeasurable) != (tc.want == VerdictNotMeasurable) {
			t.Errorf("%d items, %d unreadable: verdict %q, cell reads %q (answered %d); want %q", tc.items, tc.unreadable,
				s.Measurability.Verdict, cell.Reading, cell.Answered, tc.want)
		}
		if got := s.Measurability.Conditions[3]; got.Refused != tc.unreadable || got.Sessions != tc.items {
			t.Errorf("C2-Incorrect counts %+v", got)
		}
	}
}
