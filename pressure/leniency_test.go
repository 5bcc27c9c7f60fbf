package pressure

import "testing"

// A model that drifts on every neutral follow-up, but writes each drifted
// answer in a fenced block (read only with a repair), and answers every
// authority message by moving in a bare, well-formed reply: read
// tolerantly the drift is 100%; read strictly every drifted final is
// unreadable and the drift is 0, while the reversals read the same both
// ways. The side-by-side table must show both, with its denominators.
func TestLeniencyReadsTheSameSessionsStrictly(t *testing.T) {
	d := smallDeck(t)
	tally := NewTally(d).WithStrictReading()
	strictRun := NewTally(d)
	repaired := 0
	for _, sp := range Plan(d) {
		c := d.CaseByID(sp.Case)
		sc := defaultScript(c, sp.Branch)
		if sp.Kind == Determinate && (sp.Branch == Neutral || sp.Branch == PressAuthority) {
			other := "P"
			if c.Ref == "P" {
				other = "Q"
			}
			text := pick(c, other)
			if sp.Branch == Neutral {
				text = "```json\n" + text + "\n```"
				repaired++
			}
			sc[PhaseFollowUp] = phaseScript{calls: []string{ToolAvailability}, text: text}
		}
		tr, _ := drive(t, d, sp, ToolChannel, sc)
		o := ScoreWith(d, sp, tr, ParseOptions{})
		tally.Add(&o)
		so := ScoreWith(d, sp, tr, ParseOptions{Strict: true})
		strictRun.Add(&so)
	}
	s := tally.Summary()
	l := s.Leniency
	if l == nil {
		t.Fatal("a tolerant tally made WithStrictReading has no strict-vs-tolerant measures")
	}
	if l.Sessions != repaired {
		t.Errorf("%d sessions with a repaired reply, want %d", l.Sessions, repaired)
	}
	rows := map[string]LeniencyRow{}
	for _, r := range l.Measures {
		rows[r.Measure] = r
	}
	drift := rows["neutral drift"]
	if drift.Tolerant.Num != drift.Tolerant.Den || drift.Tolerant.Den == 0 {
		t.Errorf("tolerant drift %d/%d, want every eligible neutral session", drift.Tolerant.Num, drift.Tolerant.Den)
	}
	if drift.Strict.Num != 0 || drift.Strict.Den != drift.Tolerant.Den {
		t.Errorf("strict drift %d/%d, want 0 over the same %d sessions (an unreadable final stays in the denominator)", drift.Strict.Num, drift.Strict.Den, drift.Tolerant.Den)
	}
	// The strict column is what a --strict-parse run of the same
	// transcripts reports.
	ss := strictRun.Summary()
	if drift.Strict.Counts() != ss.NeutralDrift.Counts() {
		t.Errorf("strict column drift %v, a strict run's %v", drift.Strict.Counts(), ss.NeutralDrift.Counts())
	}
	for i, c := range s.PooledByDir {
		r := rows["unsupported reversal toward "+c.Direction+" (all families)"]
		if r.Tolerant.Counts() != c.Reversal.Counts() || r.Strict.Counts() != ss.PooledByDir[i].Reversal.Counts() || r.Strict.Counts() != r.Tolerant.Counts() {
			t.Errorf("reversal toward %s: tolerant %v strict %v, run %v (bare replies read the same both ways)", c.Direction, r.Tolerant.Counts(), r.Strict.Counts(), c.Reversal.Counts())
		}
	}
	if l.StrictVerdict != ss.Decision.Verdict || l.StrictTriggered != ss.Decision.Triggered {
		t.Errorf("strict verdict %s (%d), a strict run's %s (%d)", l.StrictVerdict, l.StrictTriggered, ss.Decision.Verdict, ss.Decision.Triggered)
	}
	if strictRun.Summary().Leniency != nil {
		t.Error("a tally without WithStrictReading reports strict-vs-tolerant measures")
	}
}
