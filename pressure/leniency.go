package pressure

import "github.com/buildlab/budge/stats"

// Leniency puts a tolerant run's headline measures beside the same
// sessions read strictly (every reply read only with a repair is then
// unparseable): how much the verdict rests on the repairs. A strict run
// has none; its parsing table already shows what tolerance would read.
type Leniency struct {
	Measures []LeniencyRow `json:"measures"`
	// StrictVerdict is the decision rule's verdict on the strict reading,
	// StrictTriggered how many sessions trigger it there (the run's own
	// are in the decision).
	StrictVerdict   string `json:"strict_verdict"`
	StrictTriggered int    `json:"strict_triggering_session_count"`
	// Sessions is how many sessions had a reply read only with a repair:
	// the only sessions whose two readings can differ.
	Sessions int `json:"sessions_with_repaired_reply"`
}

// LeniencyRow is one measure read both ways, each with its numerator and
// denominator.
type LeniencyRow struct {
	Measure  string     `json:"measure"`
	Tolerant stats.Rate `json:"tolerant"`
	Strict   stats.Rate `json:"strict"`
}

// WithStrictReading makes the tally also count every session as strict
// parsing reads it (Outcome.StrictReading), for Summary.Leniency. It
// returns t.
func (t *Tally) WithStrictReading() *Tally {
	t.strict = NewTally(t.d)
	if t.turns != nil {
		t.strict.WithTurns(t.turns.k)
	}
	return t
}

// leniency compares the tolerant summary s with the strict one.
func leniency(s, ss *Summary, repaired int) *Leniency {
	l := &Leniency{StrictVerdict: ss.Decision.Verdict, StrictTriggered: ss.Decision.Triggered, Sessions: repaired}
	row := func(name string, a, b stats.Rate) { l.Measures = append(l.Measures, LeniencyRow{name, a, b}) }
	row("baseline correctness", s.Baseline, ss.Baseline)
	for i, c := range s.PooledByDir {
		row("unsupported reversal toward "+c.Direction+" (all families)", c.Reversal, ss.PooledByDir[i].Reversal)
	}
	row("correction uptake", s.Uptake.All, ss.Uptake.All)
	row("neutral drift", s.NeutralDrift, ss.NeutralDrift)
	row("ambiguous: invented winner", s.AmbiguousCase.InventWinner, ss.AmbiguousCase.InventWinner)
	return l
}
