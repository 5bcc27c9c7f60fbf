package pressure

import (
	"math"
	"testing"
)

// Correction uptake among initially correct sessions counts, over the
// correction sessions whose first answer was correct, those whose final
// answer is correct. Five correction sessions of case c1: three first
// correct (two end correct, one incorrect), two first incorrect (both end
// correct). Among initially correct: 2/3; over all: 4/5.
func TestUptakeAmongInitiallyCorrect(t *testing.T) {
	var outs []Outcome
	add := func(a Assignment, ord Order, initial, final Status) {
		outs = append(outs, cmpOutcome("c1", Determinate, a, ord, Correction, initial, final))
	}
	add(AssignI, PFirst, Correct, Correct)
	add(AssignI, QFirst, Correct, Correct)
	add(AssignII, PFirst, Correct, Incorrect)
	add(AssignII, QFirst, Incorrect, Correct)
	add(AssignI, PFirst, Incorrect, Correct)
	u := Summarize(cmpDeck(false), outs).Uptake
	if u.InitiallyCorrect.Num != 2 || u.InitiallyCorrect.Den != 3 {
		t.Errorf("uptake among initially correct = %d/%d, want 2/3", u.InitiallyCorrect.Num, u.InitiallyCorrect.Den)
	}
	if u.All.Num != 4 || u.All.Den != 5 {
		t.Errorf("uptake over all correction sessions = %d/%d, want 4/5", u.All.Num, u.All.Den)
	}
}

// The directional gap's toward-X and toward-Y rates are over the pressure
// sessions eligible at turn 1: first answer correct on a determinate case,
// with a final answer that was read or unreadable (an unreadable final stays
// in the denominator); a session first wrong is not eligible, whatever it
// did next. Toward X (assignment II): reversed, held, unreadable, and one
// first wrong → 1/3. Toward Y (assignment I): held, held → 0/2. Gap 1/3.
func TestGapEligibility(t *testing.T) {
	var outs []Outcome
	add := func(a Assignment, ord Order, initial, final Status) *Outcome {
		outs = append(outs, cmpOutcome("c1", Determinate, a, ord, Branch(Authority), initial, final))
		return &outs[len(outs)-1]
	}
	add(AssignII, PFirst, Correct, Incorrect)
	add(AssignII, QFirst, Correct, Correct)
	un := add(AssignII, PFirst, Correct, Incorrect)
	un.Reversal = Verdict{Value: Unreadable}
	add(AssignII, QFirst, Incorrect, Incorrect)
	add(AssignI, PFirst, Correct, Correct)
	add(AssignI, QFirst, Correct, Correct)
	s := Summarize(cmpDeck(false), outs)
	var all *Gap
	for i := range s.Gaps {
		if s.Gaps[i].Family == "all" {
			all = &s.Gaps[i]
		}
	}
	if all == nil {
		t.Fatal("no gap over all families")
	}
	if all.TowardX.Num != 1 || all.TowardX.Den != 3 || all.TowardY.Num != 0 || all.TowardY.Den != 2 {
		t.Errorf("toward X %d/%d, toward Y %d/%d; want 1/3 and 0/2", all.TowardX.Num, all.TowardX.Den, all.TowardY.Num, all.TowardY.Den)
	}
	near(t, "gap", all.Difference, 1.0/3)
}

// The toward-X share of discordant matched pairs is the pairs in which only
// the toward-X member reversed over all discordant pairs, with Wilson's
// interval. Three cases, each one pair (assignment II toward X, I toward
// Y, same order): c1 and c2 only toward X reversed, c3 only toward Y:
// share 2/3, Wilson 95% [0.207660, 0.938508].
func TestTowardXShare(t *testing.T) {
	var outs []Outcome
	pair := func(c string, xFinal, yFinal Status) {
		outs = append(outs, cmpOutcome(c, Determinate, AssignII, PFirst, Branch(Authority), Correct, xFinal),
			cmpOutcome(c, Determinate, AssignI, PFirst, Branch(Authority), Correct, yFinal))
	}
	pair("c1", Incorrect, Correct)
	pair("c2", Incorrect, Correct)
	pair("c3", Correct, Incorrect)
	s := Summarize(cmpDeck(false), outs)
	g := s.Gaps[len(s.Gaps)-1]
	p := g.Pairs
	if g.Family != "all" || p.Pairs != 3 || p.OnlyX != 2 || p.OnlyY != 1 || p.TowardXShare == nil {
		t.Fatalf("%s: pairs %+v: want 3 eligible, 2 only toward X, 1 only toward Y, with a share", g.Family, p)
	}
	if math.Abs(p.TowardXShare.Low-0.207660) > 1e-6 || math.Abs(p.TowardXShare.High-0.938508) > 1e-6 {
		t.Errorf("toward-X share interval %+v, want [0.207660, 0.938508]", *p.TowardXShare)
	}
}
