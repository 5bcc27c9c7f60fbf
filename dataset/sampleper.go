package dataset

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/buildlab/budge/framing"
)

// SampleSpec is a per-dataset sample (the paper's Table 8): N items of the
// data set (the items' domain) Dataset, stratified by Field when it is set
// and a simple random sample otherwise.
type SampleSpec struct {
	Dataset string `json:"dataset"`
	N       int    `json:"n"`
	Field   string `json:"stratify,omitempty"`
}

// String is the spec as --sample-per takes it.
func (s SampleSpec) String() string {
	if s.Field == "" {
		return fmt.Sprintf("%s=%d", s.Dataset, s.N)
	}
	return fmt.Sprintf("%s=%d:%s", s.Dataset, s.N, s.Field)
}

// ParseSampleSpec reads DATASET=N[:FIELD].
func ParseSampleSpec(s string) (SampleSpec, error) {
	name, rest, ok := strings.Cut(s, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return SampleSpec{}, fmt.Errorf("--sample-per %q: want DATASET=N or DATASET=N:FIELD, e.g. advisorqa=300:label", s)
	}
	num, field, _ := strings.Cut(rest, ":")
	n, err := strconv.Atoi(strings.TrimSpace(num))
	if err != nil || n < 1 {
		return SampleSpec{}, fmt.Errorf("--sample-per %q: the size %q is not a positive whole number", s, num)
	}
	return SampleSpec{Dataset: name, N: n, Field: strings.TrimSpace(field)}, nil
}

// Drawn records how one data set was sampled: how many items it had, how
// many were drawn and how (per-dataset spec, the global --sample, or all).
type Drawn struct {
	Dataset   string `json:"dataset"`
	Available int    `json:"available"`
	Drawn     int    `json:"drawn"`
	// Rule is "per-dataset" (--sample-per), "global" (--sample, drawn from
	// the pool of every data set without a --sample-per) or "all".
	Rule string `json:"rule"`
	// Requested is the size asked for: the spec's N, or --sample for the
	// pool the data set was drawn from.
	Requested int    `json:"requested,omitempty"`
	Field     string `json:"stratify,omitempty"`
	Seed      uint64 `json:"seed"`
}

// Sampling rules.
const (
	RulePerDataset = "per-dataset"
	RuleGlobal     = "global"
	RuleAll        = "all"
)

// String is one data set's line for a report.
func (d Drawn) String() string {
	how := "all items"
	switch d.Rule {
	case RulePerDataset, RuleGlobal:
		flag := "--sample-per"
		if d.Rule == RuleGlobal {
			flag = "--sample (pool of data sets without --sample-per)"
		}
		strat := "simple random"
		if d.Field != "" {
			strat = "stratified by " + d.Field
		}
		how = fmt.Sprintf("%s %d, %s, seed %d", flag, d.Requested, strat, d.Seed)
	}
	return fmt.Sprintf("%s %d of %d (%s)", d.Dataset, d.Drawn, d.Available, how)
}

// SamplePer draws each data set (domain) named in per by its own spec and
// the items of every other data set together as Sample(rest, n, field,
// seed) does, so that without per it is exactly Sample. Every draw uses
// seed; the result keeps the input order. A data set no item has, one named
// twice, or a field none of its items has is an error naming what exists.
// The record lists every data set, in the order the data first names it.
func SamplePer(items []framing.Item, per []SampleSpec, n int, field string, seed uint64) ([]framing.Item, []Drawn, error) {
	var order []string
	byDomain := map[string][]int{}
	for i := range items {
		d := items[i].Domain
		if _, ok := byDomain[d]; !ok {
			order = append(order, d)
		}
		byDomain[d] = append(byDomain[d], i)
	}
	spec := map[string]SampleSpec{}
	for _, s := range per {
		if _, ok := byDomain[s.Dataset]; !ok {
			return nil, nil, fmt.Errorf("--sample-per %s: no item belongs to data set %q; the data's data sets are: %s", s, s.Dataset, strings.Join(slices.Sorted(maps.Keys(byDomain)), ", "))
		}
		if _, dup := spec[s.Dataset]; dup {
			return nil, nil, fmt.Errorf("--sample-per: data set %q is given twice", s.Dataset)
		}
		spec[s.Dataset] = s
	}
	chosen := make([]bool, len(items))
	draw := func(idx []int, k int, f, flag string) error {
		sub := make([]framing.Item, len(idx))
		for j, i := range idx {
			sub[j] = items[i]
		}
		if err := checkField(sub, f, flag); err != nil {
			return err
		}
		out := Sample(sub, k, f, seed)
		// out is a subsequence of sub: walk both to mark what was drawn.
		for j, o := 0, 0; j < len(sub) && o < len(out); j++ {
			if sub[j].ID == out[o].ID {
				chosen[idx[j]] = true
				o++
			}
		}
		return nil
	}
	var rest []int
	for _, d := range order {
		s, ok := spec[d]
		if !ok {
			rest = append(rest, byDomain[d]...)
			continue
		}
		if err := draw(byDomain[d], s.N, s.Field, fmt.Sprintf("--sample-per %s", s)); err != nil {
			return nil, nil, err
		}
	}
	if err := draw(rest, n, field, fmt.Sprintf("--stratify %q", field)); err != nil {
		return nil, nil, err
	}
	var out []framing.Item
	drawn := map[string]int{}
	for i := range items {
		if chosen[i] {
			out = append(out, items[i])
			drawn[items[i].Domain]++
		}
	}
	var rec []Drawn
	for _, d := range order {
		r := Drawn{Dataset: d, Available: len(byDomain[d]), Drawn: drawn[d], Rule: RuleAll, Seed: seed}
		if s, ok := spec[d]; ok {
			r.Rule, r.Requested, r.Field = RulePerDataset, s.N, s.Field
		} else if n > 0 {
			r.Rule, r.Requested, r.Field = RuleGlobal, n, field
		}
		rec = append(rec, r)
	}
	return out, rec, nil
}
