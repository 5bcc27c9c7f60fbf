package framing

import (
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

// Agreement is item-level agreement across several runs (models).
type Agreement struct {
	Runs    []string                 `json:"runs"`
	Domains map[string]AgreementCell `json:"domains"`
	All     AgreementCell            `json:"all"`
}

// AgreementOf compares the first arm of several runs item by item.
func AgreementOf(names []string, runs []*Summary) *Agreement {
	a := &Agreement{Runs: names, Domains: map[string]AgreementCell{}}
	if len(runs) < 2 {
		return a
	}
	doms := map[string]bool{}
	for _, s := range runs {
		if len(s.Arms) == 0 {
			return a
		}
		for d := range s.Arms[0].Domains {
			doms[d] = true
		}
	}
	var names2 []string
	for d := range doms {
		names2 = append(names2, d)
	}
	sort.Strings(names2)
	var all AgreementCell
	for _, dom := range names2 {
		in := map[string]int{}
		flips := map[string]int{}
		present := 0
		for _, s := range runs {
			c := s.Arms[0].Domains[dom]
			if c == nil {
				continue
			}
			present++
			for _, id := range c.included {
				in[id]++
			}
			seen := map[string]bool{}
			for _, id := range append(append([]string(nil), c.DeferenceFlips...), c.SkepticismFlips...) {
				if !seen[id] {
					seen[id] = true
					flips[id]++
				}
			}
		}
		if present < len(runs) {
			continue
		}
		var cell AgreementCell
		for id, n := range in {
			if n < len(runs) {
				continue
			}
			cell.Items++
			switch flips[id] {
			case len(runs):
				cell.FlipAll++
			case 0:
				cell.FlipNone++
			default:
				cell.FlipSome++
			}
		}
		cell.Agree = stats.NewRate(cell.FlipAll+cell.FlipNone, cell.Items)
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
