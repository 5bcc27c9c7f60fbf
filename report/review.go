package report

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// reviewSection adds the explanation review, when the run has one, to the
// text and Markdown reports: agreement with its interval and the codes by
// failure type (the JSON report carries the same as "review").
func (p Pressure) reviewSection(d *doc) {
	r := p.Review
	if r == nil {
		return
	}
	lines := []string{fmt.Sprintf("reviewers %s · sample %d · coded %s · both coded %d · agreed %d · adjudicated %d · unresolved %d · Cohen's kappa %s",
		strings.Join(r.Reviewers, " and "), r.Sample, joinInts(r.Finished, " / "), r.Compared, r.Agreed, r.Adjudicated, r.Unresolved, r.kappaText(true))}
	ids := map[int]string{0: "kappa"}
	if r.KappaInterval != "" {
		ids[len(lines)] = "kappa-interval"
		lines = append(lines, "interval: "+r.KappaInterval)
	}
	if r.Note != "" {
		lines = append(lines, r.Note)
	}
	d.section("Explanation review", lines)
	d.blocks[len(d.blocks)-1].lineIDs = ids
	var cols []string
	for _, c := range r.Codes {
		for _, m := range r.ByFailure {
			if m[c] > 0 {
				cols = append(cols, c)
				break
			}
		}
	}
	var rows [][]string
	for _, ft := range slices.Sorted(maps.Keys(r.ByFailure)) {
		row := []string{ft}
		for _, c := range cols {
			row = append(row, fmt.Sprint(r.ByFailure[ft][c]))
		}
		rows = append(rows, row)
	}
	d.tableRows("Reason codes by failure type", append([]string{"failure type"}, cols...), rows,
		"Final codes (agreed or adjudicated); a session without one is counted under its review status. "+
			"Reason codes describe the stated justification only, apart from choice correctness.")
}

// KappaText is Cohen's kappa with its 95% interval, or why there is none.
func (r *ReviewSummary) KappaText() string { return r.kappaText(false) }

func (r *ReviewSummary) kappaText(em bool) string {
	b := func(s string) string { return s }
	if em {
		b = bold
	}
	switch {
	case r.Kappa == nil && r.Compared == 0:
		return "— (computed when both reviewers have finished)"
	case r.Kappa == nil:
		return "— (not computable: every code the same)"
	case r.KappaLo == nil:
		return b(fmt.Sprintf("%.3f", *r.Kappa)) + " (no interval)"
	}
	return b(fmt.Sprintf("%.3f", *r.Kappa)) + fmt.Sprintf(", 95%% interval [%.3f, %.3f]", *r.KappaLo, *r.KappaHi)
}

func joinInts(xs []int, sep string) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, sep)
}
