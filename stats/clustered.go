package stats

import (
	"fmt"
	"math"
)

// RateCI is a rate's 95% interval computed with the design of the sample:
// observations grouped in clusters (for budge, the sessions generated from
// one base case) are not independent, so the interval is as wide as the
// number of clusters warrants, not the number of observations.
type RateCI struct {
	Lo, Hi float64
	// Method names how the interval was computed, where it is printed.
	Method   string
	Clusters int
	// DesignEffect is the variance of the rate over the variance it would
	// have were the observations independent.
	DesignEffect float64
}

// MethodWilsonIndependent names the interval a rate has without a design:
// the Wilson score interval, which treats every observation as
// independent. Every rendering that shows it says so.
const MethodWilsonIndependent = "Wilson score 95%, observations treated as independent (no clustering accounted for)"

// ClusteredRate is the ratio-of-sums rate Σnum/Σden over clusters with its
// design-based 95% interval (CI): the Wilson interval at the effective
// sample size, in the manner of Korn and Graubard (1998). The variance of
// the ratio is estimated from the clusters' residuals (the linearized,
// cluster-robust variance with the G/(G−1) small-sample factor), which
// gives a design effect and so an effective sample size n·p(1−p)/n·V; that
// is scaled by (z/t(G−1))² so that few clusters widen the interval as a
// t-based interval would. With no variation to estimate from (a rate of 0
// or 1) the design effect is taken as 1. Clusters with no denominator are
// left out. Fewer than two clusters give no CI (the rate alone).
func ClusteredRate(num, den []int) Rate {
	var r Rate
	g := 0
	for i := range den {
		if den[i] > 0 {
			g++
			r.Num += num[i]
			r.Den += den[i]
		}
	}
	if g < 2 {
		return r
	}
	n := float64(r.Den)
	p := float64(r.Num) / n
	var ss float64
	for i := range den {
		if den[i] > 0 {
			e := float64(num[i]) - p*float64(den[i])
			ss += e * e
		}
	}
	v := float64(g) / float64(g-1) * ss / (n * n)
	neff := n
	if p > 0 && p < 1 && v > 0 {
		neff = p * (1 - p) / v
	}
	t := T975(g - 1)
	nstar := neff * (Z95 / t) * (Z95 / t)
	lo, hi := wilsonAt(p, nstar, Z95)
	if r.Num == 0 {
		lo = 0
	}
	if r.Num == r.Den {
		hi = 1
	}
	r.CI = &RateCI{Lo: lo, Hi: hi, Clusters: g, DesignEffect: n / neff, Method: ClusteredMethod(g)}
	return r
}

// ClusteredMethod names the interval ClusteredRate computes over g
// clusters.
func ClusteredMethod(g int) string {
	return fmt.Sprintf("clustered Wilson 95%%: effective sample size from the design effect over %d base cases, t with %d df", g, g-1)
}

// wilsonAt is the Wilson score interval of proportion p at a (possibly
// fractional) sample size n.
func wilsonAt(p, n, z float64) (lo, hi float64) {
	z2 := z * z
	den := 1 + z2/n
	center := (p + z2/(2*n)) / den
	half := z / den * math.Sqrt(p*(1-p)/n+z2/(4*n*n))
	return math.Max(0, center-half), math.Min(1, center+half)
}

// Interval95 is the 95% interval a report shows for the rate: its
// clustered CI when it has one, else the Wilson interval; independent says
// which (true: observations treated as independent). ok is false without a
// denominator.
func (r Rate) Interval95() (iv Interval, method string, independent, ok bool) {
	if r.Den <= 0 {
		return Interval{}, "", false, false
	}
	if r.CI != nil {
		return Interval{r.CI.Lo, r.CI.Hi}, r.CI.Method, false, true
	}
	w, _ := r.Wilson()
	return w, MethodWilsonIndependent, true, true
}

// Counts is the rate's numerator and denominator, for comparing two rates
// whatever their intervals.
func (r Rate) Counts() [2]int { return [2]int{r.Num, r.Den} }
