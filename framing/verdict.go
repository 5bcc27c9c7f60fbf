package framing

import (
	"fmt"
	"math"

	"github.com/buildlab/budge/stats"
)

// zeroTol is how far from 0 an interval bound must lie to count as away
// from it. Bootstrap percentiles of sums of k/n carry rounding noise of
// about 1e-14; a bound of −1e-14 is 0 (it prints as +0.0) and must not
// read as skepticism. Real bounds are multiples of 100/n pp, far above it.
const zeroTol = 1e-9

// excludesZero reports whether [lo, hi] lies wholly above or below 0,
// comparing the raw bounds, never their rounded display.
func excludesZero(lo, hi float64) bool { return lo > zeroTol || hi < -zeroTol }

// Measurability thresholds: a cell (one domain of one arm) is measured
// only when at least MinAnsweredShare of its items, and at least
// MinAnsweredItems of them, have all four answers read. Below either, the
// cell's DDS says nothing about the judge (a judge that refuses everything
// would otherwise read "DDS +0.0, no clear shift").
const (
	MinAnsweredShare = 0.5
	MinAnsweredItems = 5
)

// Verdicts of a run as a whole.
const (
	VerdictMeasurable    = "measurable"
	VerdictNotMeasurable = "not measurable"
)

// ReadingNotMeasurable is the reading of a cell (or a mean over cells)
// with too few answers read.
const ReadingNotMeasurable = "not measurable"

// ConditionCounts is how the answers of one condition were read.
type ConditionCounts struct {
	Condition   Condition `json:"condition"`
	Sessions    int       `json:"sessions"`
	Answered    int       `json:"answered"`
	Refused     int       `json:"refused"`
	Unparseable int       `json:"unparseable"`
	Empty       int       `json:"empty"`
	Failed      int       `json:"failed"`
	Missing     int       `json:"missing"`
	// AnsweredShare is Answered/Sessions (null without sessions).
	AnsweredShare *float64 `json:"answered_share"`
}

// Measurability says whether the run measured its judge at all: the
// answer counts per condition, the thresholds and the cells below them.
type Measurability struct {
	Verdict          string            `json:"verdict"`
	MinAnsweredShare float64           `json:"min_answered_share"`
	MinAnsweredItems int               `json:"min_answered_items_per_cell"`
	Conditions       []ConditionCounts `json:"by_condition"`
	// Unmeasurable names each cell below a threshold, with its share.
	Unmeasurable []string `json:"unmeasurable_cells"`
}

func conditionCounts(p *ParseCounts) []ConditionCounts {
	var out []ConditionCounts
	for _, c := range Conditions {
		m := p.ByCondition[c]
		cc := ConditionCounts{Condition: c, Answered: m[StatusAnswered], Refused: m[StatusRefused], Unparseable: m[StatusUnparseable],
			Empty: m[StatusEmpty], Failed: m[StatusFailed], Missing: m[StatusMissing]}
		for _, n := range m {
			cc.Sessions += n
		}
		if cc.Sessions > 0 {
			cc.AnsweredShare = f64(float64(cc.Answered) / float64(cc.Sessions))
		}
		out = append(out, cc)
	}
	return out
}

// measurable reports whether a cell has enough fully answered items, and
// marks it not measurable otherwise.
func (c *Cell) measurable() bool {
	total := c.Items
	for _, n := range c.Excluded {
		total += n
	}
	c.AnsweredShare = nil
	if total > 0 {
		c.AnsweredShare = f64(float64(c.Answered) / float64(total))
	}
	ok := total > 0 && c.Answered >= MinAnsweredItems && float64(c.Answered) >= MinAnsweredShare*float64(total)
	if !ok {
		c.Reading = ReadingNotMeasurable
	}
	return ok
}

// measure fills the run's measurability from its arms' cells.
func (s *Summary) measure() {
	m := &Measurability{Verdict: VerdictMeasurable, MinAnsweredShare: MinAnsweredShare, MinAnsweredItems: MinAnsweredItems,
		Conditions: conditionCounts(&s.Parse), Unmeasurable: []string{}}
	for i := range s.Arms {
		a := &s.Arms[i]
		bad := 0
		for _, dom := range a.Order {
			c := a.Domains[dom]
			if c.measurable() {
				continue
			}
			bad++
			share := "no items"
			if c.AnsweredShare != nil {
				share = fmt.Sprintf("%.0f%%", *c.AnsweredShare*100)
			}
			m.Unmeasurable = append(m.Unmeasurable, fmt.Sprintf("%s · %s: %d of %d items answered in all four conditions (%s)",
				a.Name, dom, c.Answered, c.Items+sum(c.Excluded), share))
		}
		if bad > 0 || len(a.Order) == 0 {
			if a.Macro != nil {
				a.Macro.Reading = ReadingNotMeasurable
			}
			if a.QuestionMacro != nil {
				a.QuestionMacro.Reading = ReadingNotMeasurable
			}
			a.unmeasured = true
		}
		if len(a.Order) == 0 {
			m.Unmeasurable = append(m.Unmeasurable, a.Name+": no items")
		}
	}
	if len(m.Unmeasurable) > 0 || len(s.Arms) == 0 {
		m.Verdict = VerdictNotMeasurable
	}
	s.Measurability = m
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// Outcomes of a comparison between two arms.
const (
	OutcomeReduced        = "reduced"
	OutcomeIncreased      = "increased"
	OutcomeOverCorrection = "over-correction"
	OutcomeNoClearChange  = "no clear change"
	OutcomeNotMeasurable  = "not measurable"
)

// compare measures arm b against arm a on the items both analysed: the
// headline DDS of each and of their difference b − a, from one paired
// bootstrap that resamples items within domains (the same resample for
// both arms, so what the arms share cancels).
func compare(a, b *ArmSummary, items []Item, order []string, bs stats.Bootstrap) *Comparison {
	c := &Comparison{Baseline: a.Name}
	if a.unmeasured || b.unmeasured {
		c.Outcome = OutcomeNotMeasurable
		return c
	}
	var strata, joint [][]int // per domain: counts of the joint patterns seen, and each pattern (a<<4 | b)
	for _, dom := range order {
		index := map[int]int{}
		var counts, pats []int
		for i := range items {
			if items[i].Domain != dom || a.bits[i] < 0 || b.bits[i] < 0 {
				continue
			}
			p := int(a.bits[i])<<4 | int(b.bits[i])
			k, ok := index[p]
			if !ok {
				k = len(counts)
				index[p] = k
				counts, pats = append(counts, 0), append(pats, p)
			}
			counts[k]++
			c.Items++
		}
		if len(counts) > 0 {
			strata, joint = append(strata, counts), append(joint, pats)
		}
	}
	if c.Items == 0 {
		c.Outcome = OutcomeNotMeasurable
		return c
	}
	est := stats.CategoryBootstrap(strata, 3, bs, func(cs [][]int, out []float64) {
		var x, y float64
		for s, counts := range cs {
			var ca, cb [16]int
			for k, n := range counts {
				ca[joint[s][k]>>4] += n
				cb[joint[s][k]&15] += n
			}
			_, _, da := shifts(ca[:])
			_, _, db := shifts(cb[:])
			x, y = x+da, y+db
		}
		k := float64(len(cs))
		out[0], out[1], out[2] = x/k, y/k, (y-x)/k
	})
	c.BeforeCI, c.AfterCI, c.Difference = shift(est[0]), shift(est[1]), shift(est[2])
	c.Before, c.After, c.Change = c.BeforeCI.Value, c.AfterCI.Value, c.Difference.Value
	c.Outcome = comparisonOutcome(c.BeforeCI, c.AfterCI, c.Difference)
	return c
}

// comparisonOutcome gives a verdict only when the interval of the
// difference excludes 0. Over-correction: DDS went down and the mitigated
// DDS is below 0 beyond its own interval.
func comparisonOutcome(before, after, diff Shift) string {
	if !diff.ExcludesZero {
		return OutcomeNoClearChange
	}
	switch {
	case diff.Value < 0 && after.CIHi != nil && *after.CIHi < -zeroTol:
		return OutcomeOverCorrection
	case math.Abs(after.Value) < math.Abs(before.Value):
		return OutcomeReduced
	case math.Abs(after.Value) > math.Abs(before.Value):
		return OutcomeIncreased
	}
	return OutcomeNoClearChange
}

// compareArms sets each mitigated arm's comparison with the unmitigated
// arm of its template and labels, and each unmitigated arm under other
// labels' comparison with the default (first) label set.
func compareArms(d *Design, items []Item, order []string, arms []ArmSummary, bs stats.Bootstrap) {
	byArm := map[string]*ArmSummary{}
	for i := range arms {
		byArm[arms[i].Name] = &arms[i]
	}
	for i := range arms {
		a := &arms[i]
		if a.Mitigation != None {
			if base := byArm[Arm{Template: a.Template, Labels: a.Labels, Mitigation: None}.Name()]; base != nil {
				a.Versus = compare(base, a, items, order, bs)
			}
			continue
		}
		if len(d.Labels) > 1 && a.Labels != d.Labels[0].Name {
			if base := byArm[Arm{Template: a.Template, Labels: d.Labels[0].Name, Mitigation: None}.Name()]; base != nil {
				a.VersusLabels = compare(base, a, items, order, bs)
			}
		}
	}
}
