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
// gives a design effect and so an effective sample size p(1−p)/V; that is
// scaled by (z/t(G−1))² so that few clusters widen the interval as a
// t-based interval would. With no variation to estimate from (a rate of 0
// or 1) the design effect is taken as 1 and the interval is Wilson's.
// Clusters with no denominator are left out. Fewer than two clusters give
// no CI (the rate alone).
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
	// With no variation to estimate a design effect from (a rate of 0 or
	// 1), there is no estimated variance for the t quantile to allow for:
	// the interval is Wilson's at the observed sample size.
	nstar := n
	if p > 0 && p < 1 && v > 0 {
		t := T975(g - 1)
		nstar = p * (1 - p) / v * (Z95 / t) * (Z95 / t)
	}
	lo, hi := wilsonAt(p, nstar, Z95)
	if r.Num == 0 {
		lo = 0
	}
	if r.Num == r.Den {
		hi = 1
	}
	deff := 1.0
	if p > 0 && p < 1 && v > 0 {
		deff = v / (p * (1 - p) / n)
	}
	r.CI = &RateCI{Lo: lo, Hi: hi, Clusters: g, DesignEffect: deff, Method: ClusteredMethod(g)}
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

// PairedDifference is the change of a proportion between two runs on
// matched units (the same sessions before and after), over clusters: the
// units with the event after minus those with it before, over the matched
// units, with an interval of that difference that accounts for the
// clusters.
type PairedDifference struct {
	Difference float64
	Lo, Hi     float64
	Clusters   int
	// DesignEffect is the cluster-robust variance of the difference over
	// its variance were the units independent (1 when either is 0).
	DesignEffect float64
	// Defined is false when no interval could be computed: fewer than two
	// clusters, or no unit that changed.
	Defined bool
}

// ClusteredPairedDifference is the paired difference of per-cluster event
// counts before and after among n matched units, of which onlyBefore had
// the event before only and onlyAfter after only, with its two-sided
// interval at level: Newcombe's hybrid score interval for paired
// proportions (1998, method 10) at the effective sample size, in the
// manner of ClusteredRate: the design effect is the linearized
// cluster-robust variance of the difference (CR1, with the G/(G−1)
// factor) over the variance it would have were the units independent, and
// the effective size is scaled by (z/t(G−1))² for the few clusters. The
// score interval stays inside [−1, 1] and behaves when every unit changed
// the same way, where a Wald interval collapses. Clusters without matched
// units are left out.
func ClusteredPairedDifference(before, after, n []int, onlyBefore, onlyAfter int, level float64) PairedDifference {
	var e, tot []float64
	var sn, sb float64
	for i := range n {
		if n[i] > 0 {
			e, tot = append(e, float64(after[i]-before[i])), append(tot, float64(n[i]))
			sn += float64(n[i])
			sb += float64(before[i])
		}
	}
	g := len(e)
	out := PairedDifference{Clusters: g, DesignEffect: 1}
	if sn == 0 {
		return out
	}
	nb, na := float64(onlyBefore), float64(onlyAfter)
	d := (na - nb) / sn
	out.Difference = d
	if g < 2 || onlyBefore+onlyAfter == 0 {
		return out
	}
	var ss float64
	for i := range e {
		r := e[i] - d*tot[i]
		ss += r * r
	}
	vc := float64(g) / float64(g-1) * ss / (sn * sn)
	vi := (nb + na - (na-nb)*(na-nb)/sn) / (sn * sn)
	if vc > 0 && vi > 0 {
		out.DesignEffect = vc / vi
	}
	z := math.Sqrt2 * math.Erfinv(level)
	t := TQuantile((1+level)/2, g-1)
	nstar := sn / out.DesignEffect * (z / t) * (z / t)
	// The 2×2 table of matched units as proportions: both, before only,
	// after only, neither.
	both := (sb - nb) / sn
	pB, pA := both+nb/sn, both+na/sn
	lA, uA := wilsonAt(pA, nstar, z)
	lB, uB := wilsonAt(pB, nstar, z)
	if pA == 0 {
		lA = 0
	}
	if pA == 1 {
		uA = 1
	}
	if pB == 0 {
		lB = 0
	}
	if pB == 1 {
		uB = 1
	}
	neither := 1 - both - nb/sn - na/sn
	phi := 0.0
	if den := (both + na/sn) * (neither + nb/sn) * (both + nb/sn) * (neither + na/sn); den > 0 {
		phi = (both*neither - (nb/sn)*(na/sn)) / math.Sqrt(den)
	}
	dl := math.Sqrt(math.Max(0, (pA-lA)*(pA-lA)-2*phi*(pA-lA)*(uB-pB)+(uB-pB)*(uB-pB)))
	du := math.Sqrt(math.Max(0, (uA-pA)*(uA-pA)-2*phi*(uA-pA)*(pB-lB)+(pB-lB)*(pB-lB)))
	out.Lo, out.Hi, out.Defined = math.Max(-1, d-dl), math.Min(1, d+du), true
	return out
}

// ClusterTally counts one rate per cluster, for ClusteredRate. Clusters
// are numbered from 0 by the caller; one never added to has nothing in
// its denominator.
type ClusterTally struct{ Num, Den []int }

// Add counts an observation of cluster ci: in its denominator, and in its
// numerator when hit.
func (c *ClusterTally) Add(ci int, hit bool) {
	for len(c.Den) <= ci {
		c.Num, c.Den = append(c.Num, 0), append(c.Den, 0)
	}
	c.Den[ci]++
	if hit {
		c.Num[ci]++
	}
}

// Rate is the rate counted so far, with its clustered interval.
func (c *ClusterTally) Rate() Rate { return ClusteredRate(c.Num, c.Den) }
