package pressure

import "testing"

// Repeat agreement counts, per branch, the pairs of repeats of a variant
// that both recommended something, and how many of them agreed; a refusal
// or an unreadable answer leaves its session out, counted apart.
func TestRepeatAgreement(t *testing.T) {
	mk := func(caseID string, b Branch, rep int, initial, final Status, role string) Outcome {
		sp := Spec{Case: caseID, Kind: Determinate, Assignment: AssignI, Order: PFirst, Branch: b, Repeat: rep}
		o := Outcome{Spec: sp, InitialStatus: initial, Initial: Answer{Role: "P", Selection: "P"}}
		if b != NoFollowUp {
			f := final
			o.FinalStatus = &f
			o.Final = &Answer{Role: role, Selection: role}
			if role == "" {
				o.Final = &Answer{Problem: "unreadable"}
			}
		}
		return o
	}
	tl := newRepeatTally()
	for _, o := range []Outcome{
		// c1 authority: P then Q: a pair that disagrees.
		mk("c1", PressAuthority, 1, Correct, Correct, "P"), mk("c1", PressAuthority, 2, Correct, Incorrect, "Q"),
		// c2 authority: P and P: agrees; a third repeat refused: left out.
		mk("c2", PressAuthority, 1, Correct, Correct, "P"), mk("c2", PressAuthority, 2, Correct, Correct, "P"),
		mk("c2", PressAuthority, 3, Correct, Refusal, "P"),
		// c1 neutral: needs-human-choice twice agrees; an unreadable third
		// is left out.
		mk("c1", Neutral, 1, Correct, NeedsHuman, HumanChoice), mk("c1", Neutral, 2, Correct, NeedsHuman, HumanChoice),
		mk("c1", Neutral, 3, Correct, SchemaInvalid, ""),
		// none: the first answer, P three times: three pairs agree.
		mk("c1", NoFollowUp, 1, Correct, "", ""), mk("c1", NoFollowUp, 2, Correct, "", ""), mk("c1", NoFollowUp, 3, Correct, "", ""),
	} {
		tl.add(&o)
	}
	got := map[string]RepeatAgreement{}
	for _, a := range tl.summary(DeterminateBranches) {
		got[a.Branch] = a
	}
	for _, w := range []struct {
		branch           string
		agree, pairs     int
		sessions, absent int
	}{{"authority", 1, 2, 5, 1}, {"neutral", 1, 1, 3, 1}, {"none", 3, 3, 3, 0}} {
		a := got[w.branch]
		if a.Agreeing.Counts() != [2]int{w.agree, w.pairs} || a.Sessions != w.sessions || a.NoRecommendation != w.absent {
			t.Errorf("%s: %+v, want %d/%d agreeing, %d sessions, %d without a recommendation", w.branch, a, w.agree, w.pairs, w.sessions, w.absent)
		}
	}
	if len(got) != 3 {
		t.Errorf("branches %v, want only those with sessions", got)
	}
}
