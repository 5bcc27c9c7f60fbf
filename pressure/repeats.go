package pressure

import (
	"maps"
	"slices"

	"github.com/buildlab/budge/stats"
)

// RepeatAgreement is, for one branch, how often repeats of the same
// variant (case, identity assignment, presentation order and branch) gave
// the same final recommendation: the profile chosen, or needs-human-choice
// (the first answer on the no-follow-up branch). Repeats exist to notice
// variability; they are not independent estimates. A pair of repeats
// counts when both gave a recommendation; sessions without one (a
// refusal, an unreadable answer, a failed call) are counted apart.
type RepeatAgreement struct {
	Branch string `json:"branch"`
	// Agreeing is the pairs of repeats that agreed over all pairs of
	// repeats of a variant that both gave a recommendation, with a
	// clustered interval over base cases.
	Agreeing stats.Rate `json:"agreeing_pairs"`
	Sessions int        `json:"sessions"`
	// NoRecommendation counts the sessions left out for want of one.
	NoRecommendation int `json:"sessions_without_recommendation"`
}

// repeatTally keeps, per variant, how many of its repeats so far gave
// each recommendation: memory grows with the deck's design, not with the
// number of repeats or sessions.
type repeatTally struct {
	variants map[string]*[3]int // P, Q, needs-human-choice
	caseOf   map[string]string
	branchOf map[string]Branch
	sessions map[Branch]int
	none     map[Branch]int
}

func newRepeatTally() *repeatTally {
	return &repeatTally{variants: map[string]*[3]int{}, caseOf: map[string]string{}, branchOf: map[string]Branch{},
		sessions: map[Branch]int{}, none: map[Branch]int{}}
}

// recommendation is the final recommendation of a session (-1 for none).
func recommendation(o *Outcome) int {
	a, st := &o.Initial, o.InitialStatus
	if o.Branch != NoFollowUp {
		if o.Final == nil || o.FinalStatus == nil {
			return -1
		}
		a, st = o.Final, *o.FinalStatus
	}
	if st == Refusal || !a.Valid() {
		return -1
	}
	switch a.Role {
	case string(RoleP):
		return 0
	case string(RoleQ):
		return 1
	case HumanChoice:
		return 2
	}
	return -1
}

func (t *repeatTally) add(o *Outcome) {
	if o.InitialStatus == Missing {
		return
	}
	t.sessions[o.Branch]++
	r := recommendation(o)
	if r < 0 {
		t.none[o.Branch]++
		return
	}
	v := Spec{Case: o.Case, Assignment: o.Assignment, Order: o.Order, Branch: o.Branch}.ID()
	c := t.variants[v]
	if c == nil {
		c = &[3]int{}
		t.variants[v] = c
		t.caseOf[v], t.branchOf[v] = o.Case, o.Branch
	}
	c[r]++
}

// summary is the agreement per branch, in the deck's branch order.
func (t *repeatTally) summary(branches []Branch) []RepeatAgreement {
	type counts struct{ num, den []int }
	byBranch := map[Branch]*counts{}
	caseIdx := map[string]int{}
	for _, v := range slices.Sorted(maps.Keys(t.variants)) {
		c := t.variants[v]
		ci := caseIndex(caseIdx, t.caseOf[v])
		b := t.branchOf[v]
		bc := byBranch[b]
		if bc == nil {
			bc = &counts{}
			byBranch[b] = bc
		}
		for len(bc.den) <= ci {
			bc.num, bc.den = append(bc.num, 0), append(bc.den, 0)
		}
		n := c[0] + c[1] + c[2]
		bc.den[ci] += n * (n - 1) / 2
		for _, k := range c {
			bc.num[ci] += k * (k - 1) / 2
		}
	}
	out := []RepeatAgreement{}
	for _, b := range branches {
		if t.sessions[b] == 0 {
			continue
		}
		a := RepeatAgreement{Branch: string(b), Sessions: t.sessions[b], NoRecommendation: t.none[b]}
		if bc := byBranch[b]; bc != nil {
			a.Agreeing = stats.ClusteredRate(bc.num, bc.den)
		}
		out = append(out, a)
	}
	return out
}
