package report

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/buildlab/budge/pressure"
)

// gapTable shows the directional gap of every family, then pooled, with its
// cluster-bootstrap interval and the matched-pair test, and neutral drift
// beside it so conversation instability is not read as a pressure effect.
func (p Pressure) gapTable(d *doc) {
	s := p.Measures
	if len(s.Gaps) == 0 {
		return
	}
	rows := [][]string{}
	var methods []string
	for _, g := range s.Gaps {
		name := g.Family
		if name == "all" {
			name = "all families (pooled)"
		}
		diff := points(g.Difference)
		pairs := fmt.Sprintf("%d pairs: %d only X, %d only Y", g.Pairs.Pairs, g.Pairs.OnlyX, g.Pairs.OnlyY) +
			mcnemar(g.Pairs.ExactP, g.Pairs.MidP)
		if sh := g.Pairs.TowardXShare; sh != nil {
			pairs += "; toward-X share of discordant pairs " + interval(sh, 1)
		}
		for _, m := range []struct {
			what string
			iv   *pressure.Interval
		}{{"gap interval", g.Interval}, {"independent-sessions interval", g.Independent}, {"toward-X share of discordant pairs", g.Pairs.TowardXShare}} {
			if m.iv == nil || m.iv.Method == "" {
				continue
			}
			line := m.what + ": " + m.iv.Method
			if !slices.Contains(methods, line) {
				methods = append(methods, line)
			}
		}
		warn := "—"
		if len(g.Warnings) > 0 {
			warn = strings.Join(g.Warnings, "; ")
		}
		rows = append(rows, []string{name, pctCI(g.TowardX), pctCI(g.TowardY), diff, interval(g.Interval, 1), interval(g.Independent, 1), pairs, warn})
	}
	rows = append(rows, []string{"neutral drift (no pressure)", pctCI(s.NeutralDrift), "", "", "", "", "", dash(strings.Join(s.NeutralDrift.Warnings(), "; "))})
	d.tableRows("Directional gap with uncertainty (95% intervals)",
		[]string{"family", "toward " + p.Run.Identity.Cond("X"), "toward " + p.Run.Identity.Cond("Y"), "gap X−Y", "gap interval (base cases resampled)", "independent-sessions interval", "matched pairs", "warnings"}, rows,
		"Rates carry clustered intervals (see the measures). The gap interval is a cluster bootstrap that resamples base cases, because sessions generated from one case are not independent; "+
			"the independent-sessions interval (Newcombe) ignores that and is shown only for comparison. Matched pairs test the discordant pairs (McNemar, and the Wilson interval of the "+
			"toward-X share): both treat the pairs as independent and do not account for clustering by base case. "+
			"Families are shown before the pooled row; neutral drift is the instability of the conversation without any pressure, to compare the gap and the reversal rates with.")
	if len(methods) > 0 {
		d.section("How the gap intervals were computed", methods)
	}
	if len(s.StatWarnings) > 0 {
		d.section("Statistical warnings", s.StatWarnings)
	}
}

// points prints a difference of proportions in percentage points, or —
// without one.
func points(d *float64) string {
	if d == nil {
		return "—"
	}
	return fmt.Sprintf("%+.1f pts", 100**d)
}

// mcnemar is the "; McNemar exact p …, mid-p …" note of a matched-pair
// test, or nothing when none was computed.
func mcnemar(exact, mid *float64) string {
	if exact == nil {
		return ""
	}
	return fmt.Sprintf("; McNemar exact p %.3g, mid-p %.3g (pairs as independent)", *exact, *mid)
}

// runLabels shows how the run stands with respect to deck freezing.
func (p Pressure) runLabels(d *doc) {
	r := p.Run
	switch {
	case r.Exploratory != nil && *r.Exploratory:
		d.warn(fmt.Sprintf("EXPLORATORY: deck %s was not frozen before this run (budge deck freeze records its hash and time); "+
			"its results are exploratory, not a confirmation.", r.Deck))
	case r.DeckFrozenAt != nil:
		d.para(fmt.Sprintf("deck frozen at %s, before this run", r.DeckFrozenAt.UTC().Format(time.RFC3339)))
	}
	if n := len(r.DeckRevisions); n > 1 && r.DeckKind == "confirmation" {
		d.warn(fmt.Sprintf("WARNING: %d revisions (fingerprints %s) have been evaluated on this confirmation deck. "+
			"Do not select the best revision with the confirmation answers: that turns the confirmation deck into discovery material.",
			n, strings.Join(r.DeckRevisions, ", ")))
	}
}
