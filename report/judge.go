package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/buildlab/budge/judge"
)

// Judge is a judge run's audit as a report: the run it coded, the codes
// its tasks got, and how far the codes hold (order swaps, repeats,
// agreement with reviewers).
type Judge struct {
	Run    string `json:"run_id"`     // the judge's own run
	Source string `json:"source_run"` // the run whose texts were coded
	Judge  string `json:"judge"`      // the judge model
	// Blinding says what the judge was shown of identity labels.
	Blinding string `json:"blinding"`
	// Budge is the version that wrote the run (the HTML footer).
	Budge string `json:"-"`
	judge.Audit
}

// Render writes the audit as text, md or json.
func (j Judge) Render(w io.Writer, format string) error {
	return render(w, format, j, false, j.doc)
}

// HTML writes the audit as one self-contained page, from the document
// the text and Markdown audits are rendered from.
func (j Judge) HTML(w io.Writer) error { return j.doc().html(w, footer(j.Budge)) }

// doc is the audit as a compact document: lines rather than paragraphs,
// the codes table one row a line in text.
func (j Judge) doc() *doc {
	a := j.Audit
	d := &doc{title: fmt.Sprintf("judge run %s on run %s", j.Run, j.Source), compact: true,
		mdTitle: fmt.Sprintf("Judge %s on run %s", j.Run, j.Source)}
	head := []string{
		fmt.Sprintf("judge model: %s; codebook %s; %s", j.Judge, a.Codebook, j.Blinding),
		fmt.Sprintf("tasks: %d %s; %d repeat(s); %d judgments: %d read, %d repaired, %d unreadable, %d failed",
			a.Tasks, a.Kind, a.Repeats, a.Calls, a.Read, a.Repaired, a.Unreadable, a.Failed),
		fmt.Sprintf("tasks with a code: %s", a.Coded),
	}
	if len(a.Applicable) > 0 {
		var parts []string
		for _, c := range slices.Sorted(maps.Keys(a.Applicable)) {
			parts = append(parts, fmt.Sprintf("%s %d", c, a.Applicable[c]))
		}
		head = append(head, "further applicable codes named beside the primary one (judgments): "+strings.Join(parts, ", "))
	}
	d.section("", head)

	groups := map[string]bool{}
	for _, c := range a.Counts {
		for g := range c.ByGroup {
			groups[g] = true
		}
	}
	gs := make([]string, 0, len(groups))
	for g := range groups {
		gs = append(gs, g)
	}
	sort.Strings(gs)
	total := map[string]int{}
	for _, t := range a.PerTask {
		total[t.Group]++
	}
	var rows [][]string
	for _, c := range a.Counts {
		r := []string{c.Code, fmt.Sprintf("%d/%d", c.Total, a.Tasks)}
		for _, g := range gs {
			r = append(r, fmt.Sprintf("%d/%d", c.ByGroup[g], total[g]))
		}
		rows = append(rows, r)
	}
	d.tableRows("Codes (primary code per task)", append([]string{"code", "all"}, gs...), rows, "")

	var audit []string
	if a.OrderSwap.Den > 0 {
		audit = append(audit, fmt.Sprintf("order-swap agreement: %s (same code with either text first, per task and repeat)", a.OrderSwap))
	} else {
		audit = append(audit, "order-swap agreement: not applicable (no task has two texts to swap)")
	}
	audit = append(audit, fmt.Sprintf("repeat stability: %s (every repeat the same code, per task and order)", a.Stability))
	if len(a.Agreement) == 0 {
		audit = append(audit, "agreement with reviewers: none (the run has no finished review)")
	}
	for _, ag := range a.Agreement {
		k := "undefined"
		if ag.Kappa != nil {
			k = fmt.Sprintf("%.2f [%.2f, %.2f]", *ag.Kappa, *ag.KappaLo, *ag.KappaHi)
		}
		audit = append(audit, fmt.Sprintf("vs reviewer %s: same code %s; Cohen's kappa %s; %d excluded", ag.Rater, ag.Same, k, ag.Excluded))
	}
	d.section("Audit", audit)
	if len(a.Warnings) > 0 {
		d.section("Warnings", a.Warnings)
	}

	var tasks []string
	for _, t := range a.PerTask {
		code := t.Code
		if code == "" {
			code = "(no code)"
		}
		all := make([]string, len(t.All))
		for i, c := range t.All {
			all[i] = c
			if c == "" {
				all[i] = "-"
			}
		}
		tasks = append(tasks, fmt.Sprintf("%s [%s]: %s (%s of read judgments; all: %s)", t.Task, t.Group, code, t.Votes, strings.Join(all, " ")))
	}
	d.section("Per task", tasks)
	return d
}
