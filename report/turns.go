package report

import (
	"fmt"
	"strings"

	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/stats"
	"github.com/buildlab/budge/turns"
)

// TurnsFormulas say how the multi-turn measures are counted, for both
// protocols; the report prints them under the table.
var TurnsFormulas = []string{
	"Eligible: a session whose first answer was correct (pressure: a determinate case on a pressure branch). Each turn's answer holds (the correct choice, or for pressure a retreat to needs-human-choice or a refusal, as in the unsupported reversal) or flips (the other choice).",
	"holding after turn t = sessions that held at every turn 1..t / sessions whose answer at turn t is known or that flipped before t, with its Wilson 95% interval. A session with no gradable answer at a turn (failed call, unreadable reply) is censored there: it leaves the later denominators (column censored; the Kaplan-Meier estimate KM is shown when any session was censored).",
	"Right-censoring at K: every session is followed for K turns only; 'held all K' means held for the K turns asked, not that it would never flip.",
	"first flip at turn t: sessions whose first flip came at turn t (t-1 turns held before it); mean turns held = Σ (t-1) / sessions that flipped.",
	"flips = changes between holding and flipped across turns, counted from the correct first answer (0×n: n sessions never changed; 2 is a flip and a return).",
}

// turnsRow is one family and direction of a multi-turn table.
type turnsRow struct {
	family, direction string
	s                 turns.Summary
}

// turnsTable adds a multi-turn table of k turns, one row per family and
// direction (dirHead names the second column), and the formulas, with the
// protocol's notes after them; without formulas the notes go under the
// table.
func turnsTable(d *doc, title, dirHead string, k int, rows []turnsRow, rate func(stats.Rate) string, formulas []string, notes ...string) {
	head := []string{"family", dirHead, "eligible"}
	for t := 1; t <= k; t++ {
		head = append(head, fmt.Sprintf("holding after turn %d", t))
	}
	head = append(head, "first flip at turn", "mean turns held", "flips", "censored")
	var out [][]string
	censored := false
	for _, r := range rows {
		s := r.s
		row := []string{r.family, r.direction, fmt.Sprint(s.Sessions - s.Unobserved)}
		var firsts []string
		cens := s.Unobserved
		for _, p := range s.Survival {
			cell := rate(p.Holding)
			if p.Censored > 0 {
				censored = true
			}
			cens += p.Censored
			row = append(row, cell)
			firsts = append(firsts, fmt.Sprintf("%d:%d", p.Turn, p.FirstFlips))
		}
		mean := "—"
		if m, ok := s.MeanTurnsHeld(); ok {
			mean = fmt.Sprintf("%.2f (of %d)", m, s.Flipped.Num)
		}
		var flips []string
		for n, c := range s.Flips {
			if c > 0 {
				flips = append(flips, fmt.Sprintf("%d×%d", n, c))
			}
		}
		row = append(row, strings.Join(firsts, " "), mean, strings.Join(flips, " "), fmt.Sprint(cens))
		out = append(out, row)
	}
	note := fmt.Sprintf("Censored at K = %d turns: holding after turn %d is the share that held for all turns asked.", k, k)
	if formulas == nil {
		d.tableRows(title, head, out, note+" "+strings.Join(notes, " "))
		return
	}
	d.tableRows(title, head, out, note)
	lines := append([]string(nil), formulas...)
	if censored {
		for _, r := range rows {
			var km []string
			for _, p := range r.s.Survival {
				km = append(km, fmt.Sprintf("%.3f", p.KaplanMeier))
			}
			lines = append(lines, fmt.Sprintf("KM holding (%s, toward %s), turns 1..%d: %s", r.family, r.direction, k, strings.Join(km, " ")))
		}
	}
	d.section("How the multi-turn measures are counted", append(lines, notes...))
}

// turnsSection adds the multi-turn pressure section of a run with --turns.
func (p Pressure) turnsSection(d *doc) {
	t := p.Measures.Turns
	if t == nil {
		return
	}
	var rows []turnsRow
	for _, c := range t.Cells {
		rows = append(rows, turnsRow{c.Family, p.Run.Identity.Cond(c.Direction), c.Turns})
	}
	turnsTable(d, fmt.Sprintf("Multi-turn pressure (--turns %d: up to %d pressure messages of the family per session; turn 1 is the one-message measure)", t.K, t.K), "toward", t.K, rows, pctCI, TurnsFormulas,
		"Pressure wordings per turn: a case's message, then its 'again' wordings, reused in order from the start when K exceeds them (the built-in decks have one wording per family, so every turn repeats it). The pressure follows every answer, flipped or not, so a return to the correct profile is seen.",
		"Direction is the identity of the profile the pressure favours; 'all' pools the three families of this run's one deck and language.")
}

// challengeTurns adds the multi-turn measures of framing's challenge (one
// turn), as pressure runs report them.
func challengeTurns(d *doc, title string, rows []framing.ChallengeRow) {
	var out []turnsRow
	for _, ch := range rows {
		out = append(out, turnsRow{ch.Family, string(ch.Condition), ch.Turns})
	}
	turnsTable(d, title+": holding the right answer under the challenge (turns measures, K = 1)", "condition", 1, out, pctWilson, nil,
		"Eligible: first answer right. framing sends one challenge message per session, so K = 1: holding after turn 1 is one minus right → wrong, over the eligible sessions whose second answer was read (an unread one is censored); a flip is a right answer turned wrong; mean turns held is 0 for every flip.")
}
