package stats

import (
	"math"
	"testing"
)

// Newcombe's hybrid score interval (method 10). The first six rows are
// Newcombe (1998, Stat. Med. 17:873, table II, method 10), which prints
// four decimals; the twelve-decimal values were computed independently in
// Python from the closed form (Wilson bounds l, u of each group;
// δ − sqrt((p1−l1)² + (u2−p2)²), δ + sqrt((u1−p1)² + (p2−l2)²)). The last
// row is the seed's worked example, 4/24 toward X vs 1/20 toward Y.
func TestNewcombe(t *testing.T) {
	cases := []struct {
		k1, n1, k2, n2       int
		lo, hi, pubLo, pubHi float64
	}{
		{56, 70, 48, 80, 0.052431472402, 0.333872654037, 0.0524, 0.3339},
		{9, 10, 3, 10, 0.170522723935, 0.809017973535, 0.1705, 0.8090},
		{6, 7, 2, 7, 0.058227927482, 0.806249637524, 0.0582, 0.8062},
		{5, 56, 0, 29, -0.038137147904, 0.192560013855, -0.0381, 0.1926},
		{0, 10, 0, 20, -0.161125158053, 0.277532799863, -0.1611, 0.2775},
		{10, 10, 0, 20, 0.679086037142, 1, 0.6791, 1.0000},
		{4, 24, 1, 20, -0.094569732359, 0.312887320607, math.NaN(), math.NaN()},
	}
	for _, c := range cases {
		iv := Newcombe(c.k1, c.n1, c.k2, c.n2, Z95)
		if !near(iv.Lo, c.lo, 1e-9) || !near(iv.Hi, c.hi, 1e-9) {
			t.Errorf("Newcombe(%d/%d − %d/%d) = [%.12f, %.12f], want [%.12f, %.12f]", c.k1, c.n1, c.k2, c.n2, iv.Lo, iv.Hi, c.lo, c.hi)
		}
		if !math.IsNaN(c.pubLo) && (!near(iv.Lo, c.pubLo, 5e-5) || !near(iv.Hi, c.pubHi, 5e-5)) {
			t.Errorf("Newcombe(%d/%d − %d/%d) = %v, Newcombe prints %.4f to %.4f", c.k1, c.n1, c.k2, c.n2, iv, c.pubLo, c.pubHi)
		}
	}
	if iv := Newcombe(1, 0, 1, 5, Z95); iv.Lo != -1 || iv.Hi != 1 {
		t.Errorf("Newcombe with an empty group = %v, want [-1, 1]", iv)
	}
}

// Cohen's kappa: the first table is the 50-item example of Wikipedia's
// "Cohen's kappa" article (kappa 0.4); all values, standard errors and
// bounds were computed independently in Python (po, pe from the margins;
// se = sqrt(po(1−po)/(n(1−pe)²)), the statsmodels cohens_kappa formula).
func TestCohenKappa(t *testing.T) {
	cases := []struct {
		table         [][]int
		k, se, lo, hi float64
	}{
		{[][]int{{20, 5}, {10, 15}}, 0.4, 0.129614813968, 0.145959632760, 0.654040367240},
		{[][]int{{45, 15}, {25, 15}}, 0.130434782609, 0.106499554034, -0.078300507668, 0.339170072885},
		{[][]int{{88, 14, 18}, {10, 40, 10}, {2, 6, 12}}, 0.491525423729, 0.054921531342, 0.383881200322, 0.599169647136},
	}
	for _, c := range cases {
		got := CohenKappa(c.table, Z95)
		if !near(got.Value, c.k, 1e-9) || !near(got.SE, c.se, 1e-9) || !near(got.CI.Lo, c.lo, 1e-9) || !near(got.CI.Hi, c.hi, 1e-9) {
			t.Errorf("CohenKappa(%v) = %+v, want %v ± %v [%v, %v]", c.table, got, c.k, c.se, c.lo, c.hi)
		}
	}
	if got := CohenKappa([][]int{{5, 0}, {0, 0}}, Z95); !math.IsNaN(got.Value) {
		t.Errorf("kappa with perfect chance agreement = %v, want NaN", got.Value)
	}
	if got := CohenKappa([][]int{{0, 0}, {0, 0}}, Z95); !math.IsNaN(got.Value) || got.N != 0 {
		t.Errorf("kappa of nothing = %+v", got)
	}
}

// A cluster bootstrap must see the clustering: ten base cases of ten
// sessions, five where every session reversed and five where none did,
// have a rate of 0.5 whose standard error is that of ten units,
// sqrt(0.25/10) = 0.158, not sqrt(0.25/100) = 0.05 as if the sessions were
// independent.
func TestClusterRateSeesClustering(t *testing.T) {
	num := []int{10, 10, 10, 10, 10, 0, 0, 0, 0, 0}
	den := []int{10, 10, 10, 10, 10, 10, 10, 10, 10, 10}
	e := clusterRate(num, den, Bootstrap{Resamples: 20000, Level: 0.95, Seed: 3})
	if e.Value != 0.5 {
		t.Fatalf("point estimate %v, want 0.5", e.Value)
	}
	if want := math.Sqrt(0.25 / 10); math.Abs(e.SE-want) > 0.05*want {
		t.Errorf("cluster bootstrap SE %.4f, want about %.4f", e.SE, want)
	}
	// Sessions spread evenly over clusters: the cluster bootstrap agrees
	// with the independent-sessions standard error sqrt(p(1−p)/n).
	num = []int{3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3}
	den = []int{10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10}
	e = clusterRate(num, den, Bootstrap{Resamples: 2000, Level: 0.95, Seed: 3})
	if !near(e.SE, 0, 1e-12) || !near(e.CI.Lo, 0.3, 1e-12) || !near(e.CI.Hi, 0.3, 1e-12) {
		t.Errorf("identical clusters: %+v, want no spread", e)
	}
}

// The directional gap: the difference of two ratio-of-sums rates, both
// groups of a base case resampled together.
func TestClusterRateDifference(t *testing.T) {
	c := ClusterCounts{
		XNum: []int{2, 1, 0, 1, 0, 0, 0, 0},
		XDen: []int{3, 3, 3, 3, 3, 3, 3, 3},
		YNum: []int{0, 0, 1, 0, 0, 0, 0, 0},
		YDen: []int{3, 3, 2, 3, 3, 2, 2, 2},
		// 4/24 toward X, 1/20 toward Y: the seed's worked example.
	}
	b := Bootstrap{Resamples: 4000, Level: 0.95, Seed: 42}
	d := ClusterRateDifference(c, b)
	if !near(d.X, 4.0/24, 1e-12) || !near(d.Y, 1.0/20, 1e-12) || !near(d.Difference, 4.0/24-1.0/20, 1e-12) {
		t.Errorf("point estimates %v %v %v", d.X, d.Y, d.Difference)
	}
	if d.Clusters != 8 || !(d.CI.Lo < d.Difference && d.Difference < d.CI.Hi) || d.CI.Lo < -1 || d.CI.Hi > 1 {
		t.Errorf("difference %+v", d)
	}
	if again := ClusterRateDifference(c, b); again != d {
		t.Errorf("not repeatable: %+v then %+v", d, again)
	}
	// A cluster with nothing in either denominator carries no information.
	c.XNum, c.XDen, c.YNum, c.YDen = append(c.XNum, 0), append(c.XDen, 0), append(c.YNum, 0), append(c.YDen, 0)
	if d2 := ClusterRateDifference(c, b); d2.Clusters != 8 || d2 != d {
		t.Errorf("an empty cluster changed the result: %+v vs %+v", d2, d)
	}
	// One group empty: no estimate, no interval.
	e := ClusterRateDifference(ClusterCounts{XNum: []int{1}, XDen: []int{2}, YNum: []int{0}, YDen: []int{0}}, b)
	if !math.IsNaN(e.Difference) || !math.IsNaN(e.CI.Lo) {
		t.Errorf("difference with an empty group = %+v, want NaN", e)
	}
}

func TestWarnings(t *testing.T) {
	if w := RateWarnings(9); len(w) != 1 || w[0] != "denominator below 10 (9)" {
		t.Errorf("RateWarnings(9) = %q", w)
	}
	if w := RateWarnings(10); w != nil {
		t.Errorf("RateWarnings(10) = %q", w)
	}
	if w := RateWarnings(0); len(w) != 1 || w[0] != WarnEmptyDenominator {
		t.Errorf("RateWarnings(0) = %q", w)
	}
	if w := ClusterWarnings(2); len(w) != 1 || w[0] != "all clusters from two base cases" {
		t.Errorf("ClusterWarnings(2) = %q", w)
	}
	if w := ClusterWarnings(8); w != nil {
		t.Errorf("ClusterWarnings(8) = %q", w)
	}
}

// clusterRate bootstraps one ratio-of-sums rate over clusters.
func clusterRate(num, den []int, b Bootstrap) Estimate {
	var keep []int
	for i := range den {
		if den[i] > 0 {
			keep = append(keep, i)
		}
	}
	e := ClusterBootstrap(len(keep), 1, b, func(idx []int, out []float64) bool {
		var n, d int
		for _, j := range idx {
			n += num[keep[j]]
			d += den[keep[j]]
		}
		if d == 0 {
			return false
		}
		out[0] = float64(n) / float64(d)
		return true
	})
	return e.Estimates[0]
}

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

// TQuantile inverts TCDF and agrees with the printed table T975 holds,
// and with known 0.995 quantiles (3.4995 for 7 df, 2.7500 for 30).
func TestTQuantile(t *testing.T) {
	for df := 1; df <= 40; df++ {
		if got, want := TQuantile(0.975, df), T975(df); math.Abs(got-want) > 1e-6 {
			t.Errorf("TQuantile(0.975, %d) = %.9f, T975 %.9f", df, got, want)
		}
	}
	for _, c := range []struct {
		p    float64
		df   int
		want float64
	}{{0.995, 7, 3.499483}, {0.995, 30, 2.749996}, {0.995, 1, 63.656741}, {0.9, 5, 1.475884}, {0.025, 7, -2.364624}} {
		if got := TQuantile(c.p, c.df); math.Abs(got-c.want) > 1e-5 {
			t.Errorf("TQuantile(%v, %d) = %.6f, want %.6f", c.p, c.df, got, c.want)
		}
	}
}

// A ClusterTally's rate is ClusteredRate of what it counted per cluster,
// whatever order the clusters came in.
func TestClusterTally(t *testing.T) {
	var c ClusterTally
	for _, o := range []struct {
		ci  int
		hit bool
	}{{2, true}, {0, false}, {0, true}, {2, false}, {1, false}, {0, true}} {
		c.Add(o.ci, o.hit)
	}
	want := ClusteredRate([]int{2, 0, 1}, []int{3, 1, 2})
	if got := c.Rate(); got.Num != 3 || got.Den != 6 || got.CI == nil || *got.CI != *want.CI {
		t.Errorf("rate %+v, want %+v", got, want)
	}
}

// ClusterCounts.Add counts each observation in its group's numerator and
// denominator for its cluster, whatever order the clusters came in.
func TestClusterCountsAdd(t *testing.T) {
	var c ClusterCounts
	for _, o := range []struct {
		ci     int
		x, hit bool
	}{{2, true, true}, {0, false, false}, {0, true, true}, {2, false, true}, {1, true, false}, {0, false, true}} {
		c.Add(o.ci, o.x, o.hit)
	}
	want := ClusterCounts{XNum: []int{1, 0, 1}, XDen: []int{1, 1, 1}, YNum: []int{1, 0, 1}, YDen: []int{2, 0, 1}}
	for i, got := range [][]int{c.XNum, c.XDen, c.YNum, c.YDen} {
		w := [][]int{want.XNum, want.XDen, want.YNum, want.YDen}[i]
		if len(got) != len(w) {
			t.Fatalf("counts %+v, want %+v", c, want)
		}
		for j := range w {
			if got[j] != w[j] {
				t.Fatalf("counts %+v, want %+v", c, want)
			}
		}
	}
}
