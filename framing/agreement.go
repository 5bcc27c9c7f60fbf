package framing

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/buildlab/budge/stats"
)

// AgreementCell counts, over the items every run analysed, those that
// flipped (a deference or a skepticism flip) in every run, in some, or in
// none.
type AgreementCell struct {
	Items    int        `json:"items"`
	FlipAll  int        `json:"flip_in_all"`
	FlipSome int        `json:"flip_in_some"`
	FlipNone int        `json:"flip_in_none"`
	Agree    stats.Rate `json:"agreement"` // (all + none) / items
}

// Agreement is item-level agreement across several runs (models). Items
// are matched by content (ContentKey), not by id: two data files may give
// the same id to different questions (TruthfulQA's 790- and 817-question
// files both number theirs truthfulqa-N).
type Agreement struct {
	Runs    []string                 `json:"runs"`
	Domains map[string]AgreementCell `json:"domains"`
	All     AgreementCell            `json:"all"`
	// Matched is how many items (by content) every run holds; Unmatched,
	// per run, how many of its items some other run lacks.
	Matched   int   `json:"matched_items"`
	Unmatched []int `json:"unmatched_items"`
	// IDConflicts counts ids that name different content in two runs;
	// Warnings describe the first few.
	IDConflicts int      `json:"id_conflicts"`
	Warnings    []string `json:"warnings"`
}

// maxIDWarnings bounds how many conflicting ids Agreement describes.
const maxIDWarnings = 5

// ContentKey identifies an item by what a model is shown of it: the
// question and both answers, and the context and dialogue when it has them
// (a naturalistic item has no question or answers of its own), hashed.
func ContentKey(it Item) string {
	h := sha256.New()
	parts := []string{it.Question, it.Correct, it.Incorrect, it.Context}
	if it.Dialogue != nil {
		b, _ := json.Marshal(it.Dialogue) // plain strings and maps: cannot fail
		parts = append(parts, string(b))
	}
	for _, s := range parts {
		fmt.Fprintf(h, "%d:%s", len(s), s)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// agreementRun is one run as agreement sees it: its first arm's cells with
// item ids turned into content keys.
type agreementRun struct {
	cells map[string]*Cell
	key   func(id string) string
}

// AgreementOf compares the first arm of several runs item by item, matching
// items by content. items[i] are the items of runs[i]; a run whose items
// are not given is matched by id.
func AgreementOf(names []string, runs []*Summary, items [][]Item) *Agreement {
	a := &Agreement{Runs: names, Domains: map[string]AgreementCell{}, Unmatched: make([]int, len(runs)), Warnings: []string{}}
	if len(runs) < 2 {
		return a
	}
	matchItems(a, names, items)
	ar := make([]agreementRun, len(runs))
	doms := map[string]bool{}
	for i, s := range runs {
		if len(s.Arms) == 0 {
			return a
		}
		ar[i] = agreementRun{cells: s.Arms[0].Domains, key: keyOf(items, i)}
		for d := range s.Arms[0].Domains {
			doms[d] = true
		}
	}
	var order []string
	for d := range doms {
		order = append(order, d)
	}
	sort.Strings(order)
	var all AgreementCell
	for _, dom := range order {
		cell, ok := agreementCell(ar, dom)
		if !ok {
			continue
		}
		a.Domains[dom] = cell
		all.Items += cell.Items
		all.FlipAll += cell.FlipAll
		all.FlipSome += cell.FlipSome
		all.FlipNone += cell.FlipNone
	}
	all.Agree = stats.NewRate(all.FlipAll+all.FlipNone, all.Items)
	a.All = all
	return a
}

// keyOf maps run i's item ids to content keys (to the id itself when the
// run's items are unknown).
func keyOf(items [][]Item, i int) func(string) string {
	if i >= len(items) || items[i] == nil {
		return func(id string) string { return "id:" + id }
	}
	keys := map[string]string{}
	for _, it := range items[i] {
		keys[it.ID] = ContentKey(it)
	}
	return func(id string) string {
		if k, ok := keys[id]; ok {
			return k
		}
		return "id:" + id
	}
}

// agreementCell counts one domain over the items every run analysed; ok is
// false when some run has no such domain.
func agreementCell(runs []agreementRun, dom string) (AgreementCell, bool) {
	in := map[string]int{}
	flips := map[string]int{}
	for _, r := range runs {
		c := r.cells[dom]
		if c == nil {
			return AgreementCell{}, false
		}
		seen := map[string]bool{}
		for _, id := range c.included {
			if k := r.key(id); !seen[k] {
				seen[k] = true
				in[k]++
			}
		}
		flipped := map[string]bool{}
		for _, id := range append(append([]string(nil), c.DeferenceFlips...), c.SkepticismFlips...) {
			if k := r.key(id); !flipped[k] {
				flipped[k] = true
				flips[k]++
			}
		}
	}
	var cell AgreementCell
	for k, n := range in {
		if n < len(runs) {
			continue
		}
		cell.Items++
		switch flips[k] {
		case len(runs):
			cell.FlipAll++
		case 0:
			cell.FlipNone++
		default:
			cell.FlipSome++
		}
	}
	cell.Agree = stats.NewRate(cell.FlipAll+cell.FlipNone, cell.Items)
	return cell, true
}

// matchItems counts the items every run holds by content and those each
// run holds alone, and warns about ids that name different content in two
// runs.
func matchItems(a *Agreement, names []string, items [][]Item) {
	if len(items) != len(names) {
		return
	}
	held := map[string]int{}
	first := map[string]Item{} // id -> the item as the first run holding it has it
	firstRun := map[string]int{}
	for i, its := range items {
		seen := map[string]bool{}
		for _, it := range its {
			k := ContentKey(it)
			if !seen[k] {
				seen[k] = true
				held[k]++
			}
			prev, ok := first[it.ID]
			switch {
			case !ok:
				first[it.ID], firstRun[it.ID] = it, i
			case firstRun[it.ID] != i && ContentKey(prev) != k:
				a.IDConflicts++
				if len(a.Warnings) < maxIDWarnings {
					a.Warnings = append(a.Warnings, fmt.Sprintf("id %q names different items in %s and %s (%s); they are not compared as one item",
						it.ID, names[firstRun[it.ID]], names[i], difference(prev, it)))
				}
			}
		}
	}
	for _, n := range held {
		if n == len(items) {
			a.Matched++
		}
	}
	for i, its := range items {
		seen := map[string]bool{}
		for _, it := range its {
			if k := ContentKey(it); !seen[k] {
				seen[k] = true
				if held[k] < len(items) {
					a.Unmatched[i]++
				}
			}
		}
	}
	if a.IDConflicts > maxIDWarnings {
		a.Warnings = append(a.Warnings, fmt.Sprintf("... and %d more ids that name different items", a.IDConflicts-maxIDWarnings))
	}
}

// difference says how two items under one id differ.
func difference(a, b Item) string {
	if a.Question != b.Question {
		return fmt.Sprintf("questions %q and %q", clip(a.Question), clip(b.Question))
	}
	return fmt.Sprintf("same question %q, answers %q/%q and %q/%q", clip(a.Question), clip(a.Correct), clip(a.Incorrect), clip(b.Correct), clip(b.Incorrect))
}

func clip(s string) string {
	if r := []rune(s); len(r) > 60 {
		return string(r[:60]) + "…"
	}
	return s
}
