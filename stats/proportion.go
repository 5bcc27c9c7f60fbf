package stats

import "math"

// Z95 is the standard normal quantile for a two-sided 95% interval.
const Z95 = 1.959963984540054

// Interval is a two-sided interval [Lo, Hi].
type Interval struct {
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
}

// Contains reports whether x lies in the closed interval.
func (iv Interval) Contains(x float64) bool { return iv.Lo <= x && x <= iv.Hi }

// Wilson is the Wilson score interval for k successes out of n trials at
// the normal quantile z (Z95 for 95%). It stays inside [0, 1] and behaves
// at k = 0 and k = n, where the Wald interval collapses. With n = 0 there
// is no information and the interval is [0, 1].
func Wilson(k, n int, z float64) Interval {
	if n <= 0 {
		return Interval{0, 1}
	}
	nf := float64(n)
	p := float64(k) / nf
	z2 := z * z
	den := 1 + z2/nf
	center := (p + z2/(2*nf)) / den
	half := z / den * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf))
	lo, hi := center-half, center+half
	// The exact bounds at the edges are 0 and 1; rounding must not move them.
	if k == 0 {
		lo = 0
	}
	if k == n {
		hi = 1
	}
	return Interval{math.Max(0, lo), math.Min(1, hi)}
}

// CohenH is Cohen's h effect size between two proportions,
// 2·asin(√p1) − 2·asin(√p2): positive when p1 > p2.
func CohenH(p1, p2 float64) float64 {
	clamp := func(p float64) float64 { return math.Max(0, math.Min(1, p)) }
	return 2*math.Asin(math.Sqrt(clamp(p1))) - 2*math.Asin(math.Sqrt(clamp(p2)))
}
