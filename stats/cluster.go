package stats

import (
	"math"
	"math/rand/v2"
)

// ClusterBootstrap is a percentile bootstrap that resamples whole clusters
// (for budge, base cases: every session generated from one case shares its
// wording, its records and its difficulty) with replacement, so that the
// interval reflects how many independent units there really are rather
// than how many sessions were generated from them. fn fills out (length k)
// from the cluster indices of one resample and reports whether the
// statistic was defined on it (a resample can leave a denominator empty);
// undefined resamples are dropped and counted in Skipped.
func ClusterBootstrap(clusters, k int, b Bootstrap, fn func(idx []int, out []float64) bool) ClusterEstimate {
	idx := make([]int, clusters)
	for i := range idx {
		idx[i] = i
	}
	point := make([]float64, k)
	ok := fn(idx, point)
	est := ClusterEstimate{Clusters: clusters, Resamples: b.Resamples}
	if !ok {
		for j := range point {
			point[j] = math.NaN()
		}
	}
	if clusters == 0 || b.Resamples < 1 || !ok {
		est.Estimates = summarize(point, nil, b)
		return est
	}
	rng := rand.New(rand.NewPCG(b.Seed, 0x636c7573746572))
	reps, skipped := resamples(k, b, func(out []float64) bool {
		for i := range idx {
			idx[i] = rng.IntN(clusters)
		}
		return fn(idx, out)
	})
	est.Skipped = skipped
	if len(reps[0]) == 0 {
		est.Estimates = summarize(point, nil, b)
		return est
	}
	est.Estimates = summarize(point, reps, b)
	return est
}

// ClusterEstimate is the result of a cluster bootstrap.
type ClusterEstimate struct {
	Estimates []Estimate `json:"estimates"`
	Clusters  int        `json:"clusters"`
	Resamples int        `json:"resamples"`
	// Skipped counts resamples on which the statistic was undefined.
	Skipped int `json:"skipped"`
}

// ClusterCounts are numerators and denominators per cluster for two groups
// (for budge: reversals among eligible sessions, toward X and toward Y,
// per base case).
type ClusterCounts struct {
	XNum, XDen, YNum, YDen []int
}

// Add counts an observation of cluster ci in group X (x) or Y: in the
// group's denominator, and in its numerator when hit. The counts grow to
// hold cluster ci.
func (c *ClusterCounts) Add(ci int, x, hit bool) {
	for len(c.XDen) <= ci {
		c.XNum, c.XDen, c.YNum, c.YDen = append(c.XNum, 0), append(c.XDen, 0), append(c.YNum, 0), append(c.YDen, 0)
	}
	num, den := c.YNum, c.YDen
	if x {
		num, den = c.XNum, c.XDen
	}
	den[ci]++
	if hit {
		num[ci]++
	}
}

// RateDifference is the difference of two ratio-of-sums rates over a set of
// clusters, with the cluster bootstrap interval of that difference.
type RateDifference struct {
	X, Y       float64 // ΣXNum/ΣXDen and ΣYNum/ΣYDen
	Difference float64
	// CI is the percentile interval of the resampled differences.
	CI Interval
	// SmallSample is the interval to report with few clusters: the
	// difference ± t(G−1) · SE · sqrt(G/(G−1)), at 95%. With few clusters
	// the percentile interval is too narrow (the bootstrap variance is
	// biased down by (G−1)/G and the normal tails are too light); this
	// corrects both, as for cluster-robust standard errors (Cameron,
	// Gelbach and Miller 2008).
	SmallSample Interval
	SE          float64
	Clusters    int // clusters contributing to either denominator
	Skipped     int // resamples with an empty denominator, dropped
}

// ClusterRateDifference bootstraps the difference of two rates that are each
// a sum of numerators over a sum of denominators across clusters; a
// resample draws clusters (with both groups' counts together) with
// replacement. Clusters with no denominator in either group are left out
// before resampling, as they carry no information.
func ClusterRateDifference(c ClusterCounts, b Bootstrap) RateDifference {
	var keep []int
	for i := range c.XDen {
		if c.XDen[i]+c.YDen[i] > 0 {
			keep = append(keep, i)
		}
	}
	ratio := func(idx []int, out []float64) bool {
		var xn, xd, yn, yd int
		for _, j := range idx {
			i := keep[j]
			xn += c.XNum[i]
			xd += c.XDen[i]
			yn += c.YNum[i]
			yd += c.YDen[i]
		}
		if xd == 0 || yd == 0 {
			return false
		}
		out[0] = float64(xn)/float64(xd) - float64(yn)/float64(yd)
		out[1] = float64(xn) / float64(xd)
		out[2] = float64(yn) / float64(yd)
		return true
	}
	e := ClusterBootstrap(len(keep), 3, b, ratio)
	d := RateDifference{Difference: e.Estimates[0].Value, X: e.Estimates[1].Value, Y: e.Estimates[2].Value,
		CI: e.Estimates[0].CI, SE: e.Estimates[0].SE, Clusters: len(keep), Skipped: e.Skipped}
	d.SmallSample = Interval{math.NaN(), math.NaN()}
	if g := len(keep); g >= 2 && !math.IsNaN(d.SE) {
		half := T975(g-1) * d.SE * math.Sqrt(float64(g)/float64(g-1))
		d.SmallSample = Interval{math.Max(-1, d.Difference-half), math.Min(1, d.Difference+half)}
	}
	return d
}
