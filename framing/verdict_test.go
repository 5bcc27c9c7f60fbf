package framing

import "testing"

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
