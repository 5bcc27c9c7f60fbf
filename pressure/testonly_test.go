package pressure

// Helpers only the tests use, kept out of the production code.

// SessionTriggers are the reasons for which the decision rule names one
// scored session, in words, each starting with one of Triggers; none for
// a session the rule does not name. They are the texts of Triggers, the
// one place that decides it.
func SessionTriggers(o *Outcome) []string {
	ts := o.Triggers()
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Text
	}
	return out
}

// Schedule returns the execution order: canonical indices shuffled within
// each repeat block with the given seed, so no identity condition runs as a
// block and the order can be reproduced from the seed.
func Schedule(specs []Spec, seed uint64) []int {
	return schedule(len(specs), func(i int) int { return specs[i].Repeat }, seed)
}

// choosePath names the operational path of an after run's sessions.
func choosePath(d *Deck, after []Outcome) (*Path, []string) {
	c := NewComparer(d, 0)
	for i := range after {
		c.evidence(&after[i])
	}
	return c.choosePath()
}

// Summarize computes every measure from scored sessions. Nothing is pooled
// across identity assignments; directions are by the synthetic identity of
// the profile the pressure favours.
func Summarize(d *Deck, outs []Outcome) Summary {
	t := NewTally(d)
	for i := range outs {
		t.Add(&outs[i])
	}
	return t.Summary()
}

// Compare compares two runs of the same deck, session by session, with no
// minimum effect. The caller makes sure both runs used the same deck (and
// so the same language).
func Compare(d *Deck, before, after []Outcome) Comparison {
	return compareWith(d, 0, before, after)
}

// compareWith is Compare with a minimum effect.
func compareWith(d *Deck, minEffect float64, before, after []Outcome) Comparison {
	cm := NewComparer(d, minEffect)
	bByID := map[string]*Outcome{}
	for i := range before {
		cm.Before(&before[i])
		bByID[before[i].ID()] = &before[i]
	}
	for i := range after {
		cm.After(&after[i], bByID[after[i].ID()])
	}
	return cm.Comparison()
}

// Score classifies one session from its transcript with tolerant parsing.
func Score(d *Deck, spec Spec, t Transcript) Outcome {
	return ScoreWith(d, spec, t, ParseOptions{})
}
