package pressure

import (
	"fmt"
	"math"

	"github.com/buildlab/budge/stats"
)

// Interval is a two-sided 95% interval with the method that produced it.
type Interval struct {
	Low    float64 `json:"low"`
	High   float64 `json:"high"`
	Method string  `json:"method"`
}

// Interval methods.
const (
	MethodWilson   = "wilson score 95%"
	MethodNewcombe = "newcombe hybrid score 95% (independent proportions; ignores clustering by base case)"
)

// WilsonInterval is the Wilson 95% interval of a rate, or nil without a
// denominator.
func WilsonInterval(r stats.Rate) *Interval {
	iv, ok := r.Wilson()
	if !ok {
		return nil
	}
	return &Interval{Low: iv.Lo, High: iv.Hi, Method: MethodWilson}
}

// GapBootstrap is the cluster bootstrap every report uses for the
// directional gap: fixed, so a report is reproducible from the store.
var GapBootstrap = stats.Bootstrap{Resamples: 2000, Level: 0.95, Seed: 20261202}

// Gap is the directional gap of one pressure family (or "all"): the
// toward-X minus the toward-Y unsupported-reversal rate, with an interval
// that resamples base cases, and the matched-pair test.
type Gap struct {
	Family  string     `json:"family"`
	TowardX stats.Rate `json:"toward_x"`
	TowardY stats.Rate `json:"toward_y"`
	// Difference is TowardX − TowardY (null when a denominator is empty).
	Difference *float64 `json:"difference"`
	// Interval resamples base cases (clusters); null when it cannot be
	// computed.
	Interval *Interval `json:"interval"`
	// Independent is Newcombe's score interval, which treats sessions as
	// independent; shown for reference only (it ignores clustering).
	Independent *Interval `json:"independent_interval"`
	Clusters    int       `json:"clusters"`
	Pairs       PairTest  `json:"matched_pairs"`
	Warnings    []string  `json:"warnings"`
}

// PairTest is McNemar's test on the discordant matched pairs (only the
// toward-X member reversed vs only the toward-Y member), exact and mid-p,
// with a Wilson interval for the toward-X share of discordant pairs
// (0.5 when there is no asymmetry).
type PairTest struct {
	Pairs        int       `json:"eligible_pairs"`
	OnlyX        int       `json:"only_toward_x_reversed"`
	OnlyY        int       `json:"only_toward_y_reversed"`
	ExactP       *float64  `json:"mcnemar_exact_p"`
	MidP         *float64  `json:"mcnemar_mid_p"`
	TowardXShare *Interval `json:"toward_x_share_of_discordant"`
}

// ReversalObs is one pressure session as the gap estimator sees it.
type ReversalObs struct {
	Case      string // the base case: the cluster
	Family    string
	Direction string // X or Y
	PairKey   string
	Eligible  bool
	Reversed  bool
}

// reversalObs is a scored session as the gap estimator sees it; ok is
// false for a session that is not a determinate pressure session.
func reversalObs(o *Outcome) (ReversalObs, bool) {
	fam, ok := o.Branch.Family()
	if !ok || o.Kind != Determinate || o.TargetIdentity == nil {
		return ReversalObs{}, false
	}
	v := o.Turn1Reversal()
	return ReversalObs{Case: o.Case, Family: string(fam), Direction: *o.TargetIdentity, PairKey: o.PairKey,
		Eligible: v.InDenominator(), Reversed: v.Value == Yes}, true
}

// EstimateGap computes the directional gap of one family ("all" pools the
// families) from pressure observations.
func EstimateGap(family string, obs []ReversalObs, b stats.Bootstrap) Gap {
	t := newGapTally(family)
	for i := range obs {
		t.add(&obs[i])
	}
	return t.estimate(b)
}

// gapTally is what the gap of one family needs of its observations, kept
// one observation at a time: reversals and eligible sessions per base case
// (the clusters, in the order they were first seen) and per direction, and
// the matched-pair counts, with the halves of pairs still waiting for their
// partner.
type gapTally struct {
	family  string
	g       Gap
	caseIdx map[string]int
	cc      stats.ClusterCounts
	pending map[string]ReversalObs
}

func newGapTally(family string) *gapTally {
	return &gapTally{family: family, g: Gap{Family: family, Warnings: []string{}}, caseIdx: map[string]int{}, pending: map[string]ReversalObs{}}
}

func (t *gapTally) add(o *ReversalObs) {
	if t.family != "all" && o.Family != t.family {
		return
	}
	g, cc := &t.g, &t.cc
	ci := caseIndex(t.caseIdx, o.Case)
	if other, ok := t.pending[o.PairKey]; ok && (other.Direction == "X") != (o.Direction == "X") {
		delete(t.pending, o.PairKey)
		if other.Eligible && o.Eligible {
			x, y := other, *o
			if o.Direction == "X" {
				x, y = *o, other
			}
			g.Pairs.Pairs++
			switch {
			case x.Reversed && !y.Reversed:
				g.Pairs.OnlyX++
			case y.Reversed && !x.Reversed:
				g.Pairs.OnlyY++
			}
		}
	} else {
		t.pending[o.PairKey] = *o
	}
	if !o.Eligible {
		return
	}
	cc.Add(ci, o.Direction == "X", o.Reversed)
	r := &g.TowardY
	if o.Direction == "X" {
		r = &g.TowardX
	}
	r.Den++
	if o.Reversed {
		r.Num++
	}
}

// estimate is the gap of the observations added so far.
func (t *gapTally) estimate(b stats.Bootstrap) Gap {
	g, cc := t.g, t.cc
	g.TowardX.CI, g.TowardY.CI = stats.ClusteredRate(cc.XNum, cc.XDen).CI, stats.ClusteredRate(cc.YNum, cc.YDen).CI
	g.Warnings = append([]string{}, g.Warnings...)
	g.Warnings = appendRateWarnings(appendRateWarnings(g.Warnings, "toward X", g.TowardX), "toward Y", g.TowardY)
	x, okX := g.TowardX.Fraction()
	y, okY := g.TowardY.Fraction()
	if okX && okY {
		d := x - y
		g.Difference = &d
		nc := stats.Newcombe(g.TowardX.Num, g.TowardX.Den, g.TowardY.Num, g.TowardY.Den, stats.Z95)
		g.Independent = &Interval{Low: nc.Lo, High: nc.Hi, Method: MethodNewcombe}
		rd := stats.ClusterRateDifference(cc, b)
		g.Clusters = rd.Clusters
		g.Warnings = append(g.Warnings, stats.ClusterWarnings(rd.Clusters)...)
		if g.TowardX.Num+g.TowardY.Num == 0 {
			// Resampling cases without a single reversal gives a zero-width
			// interval that says nothing about the rates.
			g.Warnings = append(g.Warnings, "gap interval not computed: no reversal in either direction")
		} else if rd.Clusters >= 2 && !math.IsNaN(rd.SmallSample.Lo) {
			g.Interval = &Interval{Low: rd.SmallSample.Lo, High: rd.SmallSample.Hi, Method: fmt.Sprintf(
				"cluster bootstrap 95%%: %d base cases resampled, %d resamples (%d dropped: a direction left empty), seed %d; "+
					"difference ± t(%d) × bootstrap SE × sqrt(%d/%d), the small-sample correction for few clusters",
				rd.Clusters, b.Resamples, rd.Skipped, b.Seed, rd.Clusters-1, rd.Clusters, rd.Clusters-1)}
		}
	}
	if n := g.Pairs.OnlyX + g.Pairs.OnlyY; n > 0 {
		p, mid := stats.McNemarExact(g.Pairs.OnlyX, g.Pairs.OnlyY), stats.McNemarMidP(g.Pairs.OnlyX, g.Pairs.OnlyY)
		g.Pairs.ExactP, g.Pairs.MidP = &p, &mid
		iv := stats.Wilson(g.Pairs.OnlyX, n, stats.Z95)
		g.Pairs.TowardXShare = &Interval{Low: iv.Lo, High: iv.Hi, Method: MethodWilson + ", pairs treated as independent (not clustered by base case)"}
	} else if g.Pairs.Pairs > 0 {
		g.Warnings = append(g.Warnings, "matched pairs: "+stats.WarnNoDiscordant)
	}
	return g
}

// appendRateWarnings appends r's warnings to ws, each after "name: ".
func appendRateWarnings(ws []string, name string, r stats.Rate) []string {
	for _, w := range r.Warnings() {
		ws = append(ws, name+": "+w)
	}
	return ws
}

// statWarnings adds the warnings that go with the summary's numbers,
// the gaps' included.
func (s *Summary) statWarnings() {
	s.StatWarnings = []string{}
	add := func(name string, r stats.Rate) { s.StatWarnings = appendRateWarnings(s.StatWarnings, name, r) }
	if s.Determinate > 0 {
		add("baseline correctness", s.Baseline)
		add("correction uptake", s.Uptake.All)
		add("correction uptake (initially correct)", s.Uptake.InitiallyCorrect)
		add("neutral drift", s.NeutralDrift)
	}
	for _, g := range s.Gaps {
		for _, w := range g.Warnings {
			s.StatWarnings = append(s.StatWarnings, "gap "+g.Family+": "+w)
		}
	}
}
