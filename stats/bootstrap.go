package stats

import (
	"math"
	"math/rand/v2"
)

// Bootstrap describes a percentile bootstrap: how many resamples, the
// confidence level, and the seed that makes it repeatable.
type Bootstrap struct {
	Resamples int     `json:"resamples"`
	Level     float64 `json:"level"` // 0.95 for a 95% interval
	Seed      uint64  `json:"seed"`
}

// DefaultBootstrap is 10,000 resamples for a 95% interval.
func DefaultBootstrap(seed uint64) Bootstrap {
	return Bootstrap{Resamples: 10000, Level: 0.95, Seed: seed}
}

// Estimate is a bootstrap summary of one statistic.
type Estimate struct {
	Value float64  `json:"value"` // the statistic on the original sample
	CI    Interval `json:"ci"`    // percentile interval
	SE    float64  `json:"se"`    // standard deviation of the resampled statistic
}

// CategoryBootstrap is a paired bootstrap (resampling n units with
// replacement, each keeping all its measurements) for statistics that depend on a
// sample only through how many units fall in each of a few categories (for
// example the 16 right/wrong patterns of an item's four answers). Drawing n
// units with replacement then gives category counts distributed exactly
// Multinomial(n, observed shares), so this draws those counts directly: the
// same bootstrap distribution at a cost independent of n.
//
// strata holds the observed counts per category for each stratum; every
// stratum is resampled on its own (a stratified bootstrap, which keeps each
// stratum's size fixed, as a per-domain analysis needs). fn fills out
// (length k) from one set of resampled counts.
func CategoryBootstrap(strata [][]int, k int, b Bootstrap, fn func(counts [][]int, out []float64)) []Estimate {
	point := make([]float64, k)
	fn(strata, point)
	total := 0
	for _, s := range strata {
		for _, c := range s {
			total += c
		}
	}
	if total == 0 || b.Resamples < 1 {
		return summarize(point, nil, b)
	}
	rng := rand.New(rand.NewPCG(b.Seed, 0x6f6f7473747261))
	draw := make([][]int, len(strata))
	for i, s := range strata {
		draw[i] = make([]int, len(s))
	}
	reps, _ := resamples(k, b, func(out []float64) bool {
		for i, s := range strata {
			Multinomial(rng, s, draw[i])
		}
		fn(draw, out)
		return true
	})
	return summarize(point, reps, b)
}

// resamples is the loop of every bootstrap: fn draws one resample (from
// the caller's generator, so the draws come in the caller's order) and
// fills out with the k statistics on it, reporting whether they are
// defined there. resamples runs it b.Resamples times and gathers each
// statistic's values over the resamples it was defined on; skipped counts
// the others.
func resamples(k int, b Bootstrap, fn func(out []float64) bool) (reps [][]float64, skipped int) {
	reps = make([][]float64, k)
	for j := range reps {
		reps[j] = make([]float64, 0, b.Resamples)
	}
	out := make([]float64, k)
	for r := 0; r < b.Resamples; r++ {
		if !fn(out) {
			skipped++
			continue
		}
		for j := range out {
			reps[j] = append(reps[j], out[j])
		}
	}
	return reps, skipped
}

// Multinomial draws counts for len(weights) categories from
// Multinomial(sum(weights), weights/sum(weights)) into out, by a chain of
// conditional binomial draws.
func Multinomial(rng *rand.Rand, weights []int, out []int) {
	left := 0
	for _, w := range weights {
		left += w
	}
	n := left
	for i, w := range weights {
		if left <= 0 || n <= 0 {
			out[i] = 0
			continue
		}
		if w >= left {
			out[i] = n
			n = 0
			left -= w
			continue
		}
		x := Binomial(rng, n, float64(w)/float64(left))
		out[i] = x
		n -= x
		left -= w
	}
}

// Binomial draws from Binomial(n, p): by inversion when the mean is small
// and by Hörmann's BTRS transformed rejection (1993) otherwise, so a draw
// costs O(1) however large n is.
func Binomial(rng *rand.Rand, n int, p float64) int {
	switch {
	case n <= 0 || p <= 0:
		return 0
	case p >= 1:
		return n
	case p > 0.5:
		return n - Binomial(rng, n, 1-p)
	case float64(n)*p < 10:
		return binomialInversion(rng, n, p)
	}
	return binomialBTRS(rng, n, p)
}

func binomialInversion(rng *rand.Rand, n int, p float64) int {
	q := 1 - p
	qn := math.Exp(float64(n) * math.Log1p(-p))
	bound := math.Min(float64(n), float64(n)*p+10*math.Sqrt(float64(n)*p*q+1))
	for {
		x, px, u := 0, qn, rng.Float64()
		for u > px {
			x++
			if float64(x) > bound {
				break
			}
			u -= px
			px *= float64(n-x+1) * p / (float64(x) * q)
		}
		if float64(x) <= bound {
			return x
		}
	}
}

func binomialBTRS(rng *rand.Rand, n int, p float64) int {
	nf := float64(n)
	q := 1 - p
	spq := math.Sqrt(nf * p * q)
	b := 1.15 + 2.53*spq
	a := -0.0873 + 0.0248*b + 0.01*p
	c := nf*p + 0.5
	vr := 0.92 - 4.2/b
	alpha := (2.83 + 5.1/b) * spq
	lpq := math.Log(p / q)
	m := math.Floor((nf + 1) * p)
	lm, _ := math.Lgamma(m + 1)
	lnm, _ := math.Lgamma(nf - m + 1)
	h := lm + lnm
	for {
		u := rng.Float64() - 0.5
		v := rng.Float64()
		us := 0.5 - math.Abs(u)
		k := math.Floor((2*a/us+b)*u + c)
		if k < 0 || k > nf {
			continue
		}
		if us >= 0.07 && v <= vr {
			return int(k)
		}
		v = math.Log(v * alpha / (a/(us*us) + b))
		lk, _ := math.Lgamma(k + 1)
		lnk, _ := math.Lgamma(nf - k + 1)
		if v <= h-lk-lnk+(k-m)*lpq {
			return int(k)
		}
	}
}

func summarize(point []float64, reps [][]float64, b Bootstrap) []Estimate {
	out := make([]Estimate, len(point))
	lo := (1 - b.Level) / 2 * 100
	for j := range point {
		out[j].Value = point[j]
		if reps == nil {
			out[j].CI = Interval{math.NaN(), math.NaN()}
			out[j].SE = math.NaN()
			continue
		}
		r := reps[j]
		out[j].SE = StdDev(r)
		out[j].CI = Interval{Percentile(r, lo), Percentile(r, 100-lo)}
	}
	return out
}

// Percentile is the q-th percentile (0 ≤ q ≤ 100) of values with linear
// interpolation between closest ranks, the definition numpy's percentile
// uses by default. It reorders values (a selection, not a sort: an interval
// of 10,000 resamples needs two order statistics, not all of them); values
// are ordered as slices.Sort orders them, NaN first.
func Percentile(values []float64, q float64) float64 {
	n := len(values)
	if n == 0 {
		return math.NaN()
	}
	// The NaNs go first, and the rest compare as plain numbers.
	nan := 0
	for i, v := range values {
		if v != v {
			values[i], values[nan] = values[nan], v
			nan++
		}
	}
	nth := func(k int) float64 {
		if k < nan {
			return values[k]
		}
		return selectNth(values[nan:], k-nan)
	}
	pos := q / 100 * float64(n-1)
	i := int(math.Floor(pos))
	if i >= n-1 {
		return nth(n - 1)
	}
	if i < 0 {
		return nth(0)
	}
	v := nth(i)
	next := values[i+1] // a NaN, when i+1 < nan
	if i+1 >= nan {
		// The least of what the selection left after i.
		for _, w := range values[i+2:] {
			if w < next {
				next = w
			}
		}
	}
	f := pos - float64(i)
	return v + (next-v)*f
}

// selectNth reorders x (no NaN in it) so that x[k] is the value a sort
// would put there, with nothing greater before it and nothing smaller after
// it, and returns it. Three-way partitions keep the many ties of resampled
// rates linear.
func selectNth(x []float64, k int) float64 {
	lo, hi := 0, len(x)
	for hi-lo > 1 {
		a, b, c := x[lo], x[lo+(hi-lo)/2], x[hi-1]
		if b < a {
			a, b = b, a
		}
		if c < b {
			b = max(a, c)
		}
		pivot := b
		lt, i, gt := lo, lo, hi
		for i < gt {
			switch v := x[i]; {
			case v < pivot:
				x[lt], x[i] = v, x[lt]
				lt++
				i++
			case v > pivot:
				gt--
				x[i], x[gt] = x[gt], v
			default:
				i++
			}
		}
		switch {
		case k < lt:
			hi = lt
		case k >= gt:
			lo = gt
		default:
			return x[k]
		}
	}
	return x[k]
}

// Mean is the arithmetic mean (NaN for no values).
func Mean(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// StdDev is the population standard deviation (divisor n), as a bootstrap
// standard error is conventionally computed.
func StdDev(x []float64) float64 {
	return math.Sqrt(Variance(x))
}

// Variance is the population variance (divisor n).
func Variance(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	m := Mean(x)
	s := 0.0
	for _, v := range x {
		d := v - m
		s += d * d
	}
	return s / float64(len(x))
}
