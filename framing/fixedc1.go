package framing

import (
	"fmt"
	"slices"
	"strings"
)

// FixedC1 records where a run's C1 answers come from when it asks only C2
// (Design.FixedC1): the other run, its model and fingerprint, and how many
// items were matched by content.
type FixedC1 struct {
	Run         string `json:"run"`
	Model       string `json:"model"`
	Fingerprint string `json:"fingerprint"`
	Items       int    `json:"items_matched"`
	// Sessions is the number of C1 observations taken from the run.
	Sessions int `json:"c1_sessions"`
	// Note says what changed since the run was recorded (its fingerprint),
	// or is empty.
	Note string `json:"note,omitempty"`
}

// Describe is the one-line account of a fixed C1 for reports.
func (f *FixedC1) Describe() string {
	s := fmt.Sprintf("C1 from run %s (model %s, fingerprint %s): %d C1 sessions on %d items matched by content; this run asked only C2 (--baseline-c1)",
		f.Run, f.Model, f.Fingerprint, f.Sessions, f.Items)
	if f.Note != "" {
		s += "; " + f.Note
	}
	return s
}

// Baseline is another run's side of a fixed-C1 pairing: its design, items
// and scored observations.
type Baseline struct {
	Run          string
	Design       *Design
	Items        []Item
	Observations []Observation
}

// PairC1 checks that base can give the C1 answers of a run of items under
// design d and returns them re-indexed to the run's items. It refuses,
// naming every difference, when the items differ by content, when the
// template sets, label sets, naturalistic roles, parsing or challenge
// families differ, when base takes its own C1 from another run, or when it
// lacks a C1 answer the run needs (an unfinished run).
func PairC1(d *Design, items []Item, base Baseline) ([]Observation, error) {
	bd := base.Design
	if bd.FixedC1 != "" {
		return nil, fmt.Errorf("run %s has no C1 answers of its own (it takes them from run %s): give that run", base.Run, bd.FixedC1)
	}
	var diffs []string
	if a, b := templateKeys(d), templateKeys(bd); !slices.Equal(a, b) {
		diffs = append(diffs, fmt.Sprintf("template sets: this run %s, run %s %s", strings.Join(a, ", "), base.Run, strings.Join(b, ", ")))
	}
	if a, b := labelKeys(d), labelKeys(bd); !slices.Equal(a, b) {
		diffs = append(diffs, fmt.Sprintf("label sets: this run %s, run %s %s", strings.Join(a, ", "), base.Run, strings.Join(b, ", ")))
	}
	if d.Reverse != bd.Reverse || d.InvertTruth != bd.InvertTruth {
		diffs = append(diffs, fmt.Sprintf("naturalistic roles: this run %q, run %s %q", d.Perspective(), base.Run, bd.Perspective()))
	}
	if d.Tolerant != bd.Tolerant {
		diffs = append(diffs, fmt.Sprintf("parsing: this run tolerant=%v, run %s tolerant=%v (--strict-parse)", d.Tolerant, base.Run, bd.Tolerant))
	}
	if a, b := challengeKeys(d), challengeKeys(bd); !slices.Equal(a, b) {
		diffs = append(diffs, fmt.Sprintf("challenge families: this run [%s], run %s [%s]", strings.Join(a, ", "), base.Run, strings.Join(b, ", ")))
	}
	at := map[string]int{}
	for i := range base.Items {
		at[ContentKey(base.Items[i])] = i
	}
	mine := map[string]bool{}
	var notInBase []string
	for i := range items {
		k := ContentKey(items[i])
		mine[k] = true
		if _, ok := at[k]; !ok {
			notInBase = append(notInBase, items[i].ID)
		}
	}
	var notHere []string
	for i := range base.Items {
		if !mine[ContentKey(base.Items[i])] {
			notHere = append(notHere, base.Items[i].ID)
		}
	}
	if len(notInBase) > 0 || len(notHere) > 0 {
		diffs = append(diffs, fmt.Sprintf("items (matched by content): %d of this run's %d are not in run %s%s, and %d of its %d are not in this run%s",
			len(notInBase), len(items), base.Run, eg(notInBase), len(notHere), len(base.Items), eg(notHere)))
	}
	if len(diffs) > 0 {
		return nil, fmt.Errorf("run %s cannot give this run's C1: %s", base.Run, strings.Join(diffs, "; "))
	}
	type key struct {
		template, item string
		cond           Condition
	}
	found := map[key]Observation{}
	for _, o := range base.Observations {
		if o.Condition.Dialogue() || o.Mitigation != None || o.Index < 0 || o.Index >= len(base.Items) || o.Status == StatusMissing {
			continue
		}
		found[key{o.Template, ContentKey(base.Items[o.Index]), o.Condition}] = o
	}
	var out []Observation
	var lacking []string
	for _, t := range d.Templates {
		for i := range items {
			it := &items[i]
			for _, c := range []Condition{C1True, C1False} {
				o, ok := found[key{t.Name, ContentKey(*it), c}]
				if !ok {
					lacking = append(lacking, it.ID+"/"+t.Name+"/"+string(c))
					continue
				}
				o.Index, o.Item, o.Domain, o.Stratum = i, it.ID, it.Domain, Stratum(it)
				out = append(out, o)
			}
		}
	}
	if len(lacking) > 0 {
		return nil, fmt.Errorf("run %s lacks %d of the %d unmitigated C1 answers this run needs%s: it is unfinished or ran no C1; finish it first (--resume %s)",
			base.Run, len(lacking), 2*len(items)*len(d.Templates), eg(lacking), base.Run)
	}
	return out, nil
}

func eg(ids []string) string {
	switch {
	case len(ids) == 0:
		return ""
	case len(ids) > 3:
		return " (e.g. " + strings.Join(ids[:3], ", ") + ")"
	}
	return " (" + strings.Join(ids, ", ") + ")"
}

// templateKeys names each template set with a hash of its text, sorted.
func templateKeys(d *Design) []string {
	var out []string
	for _, t := range d.Templates {
		out = append(out, fmt.Sprintf("%s (sha256 %s)", t.Name, t.Hash()[:12]))
	}
	slices.Sort(out)
	return out
}

func labelKeys(d *Design) []string {
	var out []string
	for _, l := range d.Labels {
		out = append(out, l.Name+" ("+l.Speaker1+" / "+l.Speaker2+")")
	}
	slices.Sort(out)
	return out
}

func challengeKeys(d *Design) []string {
	var out []string
	for _, c := range d.Challenges {
		out = append(out, c.Family)
	}
	slices.Sort(out)
	return out
}
