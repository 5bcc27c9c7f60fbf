package stats

import "math"

// BinomialPMF is P(X = k) for X ~ Binomial(n, p).
func BinomialPMF(k, n int, p float64) float64 {
	if k < 0 || k > n {
		return 0
	}
	switch p {
	case 0:
		if k == 0 {
			return 1
		}
		return 0
	case 1:
		if k == n {
			return 1
		}
		return 0
	}
	return math.Exp(logChoose(n, k) + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p))
}

func logChoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n) + 1)
	b, _ := math.Lgamma(float64(k) + 1)
	c, _ := math.Lgamma(float64(n-k) + 1)
	return a - b - c
}

// BinomialCDF is P(X ≤ k) for X ~ Binomial(n, p).
//
// It sums the probability mass downward from k with the recurrence
// P(i−1) = P(i)·i/(n−i+1)·(1−p)/p, which keeps full relative precision in
// the far tail (p-values of 1e-16 are reported, not rounded to zero) at a
// cost that stops as soon as the terms no longer change the sum.
func BinomialCDF(k, n int, p float64) float64 {
	if k < 0 {
		return 0
	}
	if k >= n {
		return 1
	}
	if p <= 0 {
		return 1
	}
	if p >= 1 {
		return 0
	}
	// Past the mode the lower tail is most of the mass: sum the upper tail
	// instead and subtract, so the result is never 1 minus rounding noise
	// for the terms that matter.
	if float64(k) > float64(n)*p {
		return 1 - binomialUpper(k+1, n, p)
	}
	term := BinomialPMF(k, n, p)
	sum := term
	ratio := (1 - p) / p
	for i := k; i > 0 && term > sum*1e-18; i-- {
		term *= float64(i) / float64(n-i+1) * ratio
		sum += term
	}
	return math.Min(1, sum)
}

// binomialUpper is P(X ≥ k).
func binomialUpper(k, n int, p float64) float64 {
	term := BinomialPMF(k, n, p)
	sum := term
	ratio := p / (1 - p)
	for i := k; i < n && term > sum*1e-18; i++ {
		term *= float64(n-i) / float64(i+1) * ratio
		sum += term
	}
	return math.Min(1, sum)
}

// McNemarExact is the exact two-sided McNemar test for paired binary
// outcomes with b and c discordant pairs (b: right then wrong, c: wrong then
// right): twice the binomial tail of the smaller count under
// Binomial(b+c, 1/2), capped at 1. With no discordant pairs it is 1.
// This is the test statsmodels runs with mcnemar(table, exact=True).
func McNemarExact(b, c int) float64 {
	n := b + c
	if n == 0 {
		return 1
	}
	return math.Min(1, 2*BinomialCDF(min(b, c), n, 0.5))
}

// McNemarMidP is the mid-p variant of the exact McNemar test: the exact
// p-value less the probability of the observed split itself. It is less
// conservative than the exact test and keeps close to nominal size
// (Fagerland, Lydersen and Laake 2013).
func McNemarMidP(b, c int) float64 {
	n := b + c
	if n == 0 {
		return 1
	}
	k := min(b, c)
	return math.Min(1, 2*BinomialCDF(k, n, 0.5)-BinomialPMF(k, n, 0.5))
}
