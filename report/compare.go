package report

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/stats"
)

// Compare is the report model of `budge compare`: one section per pair of
// runs (before, after). Sections on different decks are never pooled.
type Compare struct {
	Version  int              `json:"compare_version"`
	Sections []CompareSection `json:"comparisons"`
}

// CompareSection is one before/after pair.
type CompareSection struct {
	Before     RunInfo              `json:"before"`
	After      RunInfo              `json:"after"`
	Comparison *pressure.Comparison `json:"comparison"` // null when refused
	// Refused says why no before/after comparison was made; SideBySide then
	// shows each run's own results next to each other, never pooled.
	Refused    string    `json:"refused,omitempty"`
	Caveat     string    `json:"caveat,omitempty"`
	SideBySide []SideRow `json:"side_by_side,omitempty"`
	// Warnings carry the runs' deck-freezing warnings (a deck revised after
	// freezing, more revisions evaluated on a confirmation deck than the
	// pair); Advice is what to do next given whether the pair is
	// exploratory or on a frozen confirmation deck.
	Warnings []string `json:"warnings"`
	Advice   string   `json:"advice,omitempty"`
}

// SideRow is one measure of two runs that are not compared.
type SideRow struct {
	Measure string     `json:"measure"`
	Before  stats.Rate `json:"before"`
	After   stats.Rate `json:"after"`
}

// Render writes the comparison in the given format.
func (c Compare) Render(w io.Writer, format string) error {
	return render(w, format, c, true, c.doc)
}

func runLine(label string, r RunInfo) string {
	s := fmt.Sprintf("%s: run %s · deck %s (%s, %s, sha256 %s) · model %s · fingerprint %s", label, r.ID, r.Deck, r.DeckKind, r.Language, short(r.DeckSHA), r.Model, r.Fingerprint)
	if r.Exploratory != nil && *r.Exploratory {
		s += " · EXPLORATORY (deck not frozen before the run)"
	} else if r.DeckFrozenAt != nil {
		s += " · deck frozen at " + r.DeckFrozenAt.UTC().Format(time.RFC3339) + ", before the run"
	}
	return s
}

func (c Compare) doc() *doc {
	d := &doc{title: "budge compare: an intervention before and after"}
	for _, sec := range c.Sections {
		kind := sec.Before.DeckKind
		if sec.Comparison != nil {
			kind = sec.Comparison.DeckKind
		}
		d.section(fmt.Sprintf("On the %s deck %s (reported on its own, never pooled with another deck)", kind, sec.Before.Deck),
			[]string{runLine("before", sec.Before), runLine("after", sec.After)})
		for _, w := range sec.Warnings {
			d.para(w)
		}
		if sec.Comparison == nil {
			d.para("REFUSED: " + sec.Refused)
			if sec.Caveat != "" {
				d.para(sec.Caveat)
			}
			rows := [][]string{}
			for _, r := range sec.SideBySide {
				rows = append(rows, []string{r.Measure, pctCI(r.Before), pctCI(r.After)})
			}
			if len(rows) > 0 {
				d.tableRows("Each run's own results, side by side (not compared, not pooled)",
					[]string{"measure", sec.Before.Language + ": " + sec.Before.ID, sec.After.Language + ": " + sec.After.ID}, rows, "")
			}
			continue
		}
		cmp := sec.Comparison
		lines := []string{bold(strings.ToUpper(cmp.Verdict)) + ": " + cmp.Text}
		for _, r := range cmp.Reasons {
			lines = append(lines, "- "+r)
		}
		if sec.Advice != "" {
			lines = append(lines, sec.Advice)
		}
		d.section("Verdict ("+cmp.Verdict+")", lines)
		rows := [][]string{}
		methods := []string{}
		for _, m := range cmp.Measures {
			p := m.Paired
			change := "—"
			if p.Difference != nil {
				change = fmt.Sprintf("%+.1f pts", 100**p.Difference)
			}
			iv := "[—]"
			if p.Interval != nil {
				iv = fmt.Sprintf("[%+.1f, %+.1f] (%.0f%%)", 100*p.Interval.Low, 100*p.Interval.High, 100*m.Level)
				if !slices.Contains(methods, p.Interval.Method) {
					methods = append(methods, p.Interval.Method)
				}
			}
			moved := "no clear change"
			switch {
			case m.Worse():
				moved = "WORSE"
			case m.Improved():
				moved = "better"
			}
			test := fmt.Sprintf("%d matched: %d only before, %d only after", p.Matched, p.OnlyBefore, p.OnlyAfter) + mcnemar(p.ExactP, p.MidP)
			if len(p.Warnings) > 0 {
				test += " (" + strings.Join(p.Warnings, "; ") + ")"
			}
			rows = append(rows, []string{m.Measure + " [" + m.Role + "]", pctCI(m.Before), pctCI(m.After), change, iv, m.Better + " is better: " + moved, test})
		}
		gap := func(g pressure.Gap) string {
			if g.Difference == nil {
				return "—"
			}
			return fmt.Sprintf("%+.1f pts %s", 100**g.Difference, interval(g.Interval, 1))
		}
		gc := cmp.GapChange
		gmoved := "no clear change"
		switch {
		case gc.Widened:
			gmoved = "WORSE (widened)"
		case gc.Narrowed:
			gmoved = "better (narrowed)"
		}
		gchange, giv := "—", "[—]"
		if gc.Change != nil {
			gchange = fmt.Sprintf("%+.1f pts", 100**gc.Change)
		}
		if gc.Interval != nil {
			giv = fmt.Sprintf("[%+.1f, %+.1f] (%.0f%%)", 100*gc.Interval.Low, 100*gc.Interval.High, 100*pressure.GapLevel)
			methods = append(methods, gc.Interval.Method)
		}
		rows = append(rows, []string{"directional gap X−Y (all families) [primary]", gap(cmp.GapBefore), gap(cmp.GapAfter), gchange, giv, "closer to 0 is better: " + gmoved,
			dash(strings.Join(gc.Warnings, "; "))})
		d.tableRows("Measures before and after", []string{"measure [role]", "before", "after", "change (matched)", "interval of the change", "verdict of the measure", "paired test on matching sessions"}, rows,
			"Matching sessions have the same case, identity assignment, presentation order, branch and repeat, and are in the measure's denominator in both runs; "+
				"the change is over them, its interval over base cases. Before and after are each run's own rate with its clustered interval. "+
				"McNemar treats the matched sessions as independent; the verdict needs the interval and it to agree.")
		if len(methods) > 0 {
			d.section("How the intervals of the changes were computed", methods)
		}
		if cmp.Path != nil {
			pl := []string{fmt.Sprintf("path %d: %s", cmp.Path.ID, cmp.Path.Name), "rule: " + cmp.Path.Rule}
			for _, e := range cmp.Path.Evidence {
				pl = append(pl, "- "+e)
			}
			if len(cmp.AlsoMatched) > 0 {
				pl = append(pl, "also matched (not named): "+strings.Join(cmp.AlsoMatched, "; "))
			}
			d.section("Operational path (predeclared rules, after the change)", pl)
		} else {
			d.para("Operational path: none named; no predeclared rule matched the run after the change.")
		}
		d.section("Predeclared rules", cmp.Rules)
	}
	return d
}
