package stats

import (
	"math"
	"testing"
)

// ClusteredRate's interval, worked by hand for three clusters of four
// (1, 3 and 0 events): p = 4/12; residuals −1/3, 5/3, −4/3, whose squares
// sum to 42/9; with the small-sample factor G/(G−1) = 3/2 the variance is
// 3/2 · (42/9) / 144 = 0.0486111; the effective size is
// p(1−p)/v · (z/t₀.₉₇₅(2))² = 4.571429 · (1.959964/4.302653)² = 0.948583;
// Wilson's interval at that size is [0.024185, 0.909804]. Without the
// factor and the t quantile it would be [0.104434, 0.681920].
func TestClusteredRateSmallSample(t *testing.T) {
	r := ClusteredRate([]int{1, 3, 0}, []int{4, 4, 4})
	if r.Num != 4 || r.Den != 12 || r.CI == nil {
		t.Fatalf("rate %+v: want 4/12 with an interval", r)
	}
	if math.Abs(r.CI.Lo-0.024184979594) > 1e-6 || math.Abs(r.CI.Hi-0.909804230180) > 1e-6 {
		t.Errorf("interval [%.6f, %.6f], want [0.024185, 0.909804]", r.CI.Lo, r.CI.Hi)
	}
}
