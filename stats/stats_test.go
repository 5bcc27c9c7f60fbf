package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func near(got, want, tol float64) bool {
	if math.IsNaN(got) || math.IsNaN(want) {
		return math.IsNaN(got) && math.IsNaN(want)
	}
	return math.Abs(got-want) <= tol
}

func relNear(got, want, rel float64) bool {
	if want == 0 {
		return got == 0
	}
	return math.Abs(got-want) <= rel*math.Abs(want)
}

// Reference values: the first four are Newcombe (1998, Stat. Med. 17:857,
// table II, method 3) to the four decimals published; all are computed
// independently in 40-digit decimal arithmetic from the closed form, and
// checked here to 1e-9.
func TestWilson(t *testing.T) {
	cases := []struct {
		k, n   int
		lo, hi float64
	}{
		{81, 263, 0.255288519878274, 0.366209576982800},
		{15, 148, 0.062386399530736, 0.160487241723308},
		{0, 20, 0, 0.161125158052819},
		{1, 29, 0.006113214292763, 0.171755218793203},
		{29, 29, 0.883030201500259, 1},
		{155, 300, 0.460266313792772, 0.572645587166410},
		{60, 100, 0.502002586791062, 0.690598713567541},
		{1, 1, 0.206549314377237, 1},
		{500, 1000, 0.469069600368104, 0.530930399631896},
		{99990, 100000, 0.999815915304549, 0.999945679265490},
	}
	for _, c := range cases {
		iv := Wilson(c.k, c.n, Z95)
		if !near(iv.Lo, c.lo, 1e-9) || !near(iv.Hi, c.hi, 1e-9) {
			t.Errorf("Wilson(%d, %d) = [%.12f, %.12f], want [%.12f, %.12f]", c.k, c.n, iv.Lo, iv.Hi, c.lo, c.hi)
		}
	}
	// Newcombe's published four decimals.
	if iv := Wilson(81, 263, Z95); !near(iv.Lo, 0.2553, 5e-5) || !near(iv.Hi, 0.3662, 5e-5) {
		t.Errorf("Wilson(81, 263) = %v, Newcombe prints 0.2553-0.3662", iv)
	}
	if iv := Wilson(0, 0, Z95); iv.Lo != 0 || iv.Hi != 1 {
		t.Errorf("Wilson(0, 0) = %v, want [0, 1]", iv)
	}
}

// McNemar p-values: the first seven pairs are the discordant counts of the
// DialDefer gpt-4o-mini results with the p-values statsmodels computed for
// the paper's summary CSV; the rest are exact rational computations
// (Python fractions over math.comb) of the exact and mid-p values.
func TestMcNemar(t *testing.T) {
	published := []struct {
		b, c int
		p    float64
	}{
		{32, 0, 4.656612873077393e-10},
		{0, 23, 2.384185791015625e-07},
		{23, 9, 0.020061607006937265},
		{39, 40, 1.0},
		{9, 13, 0.5234670639038086},
		{37, 13, 0.000936222910851825},
		{12, 5, 0.143463134765625},
		{11, 18, 0.26493089646101},
		{5, 59, 9.002816938122327e-13},
		{26, 1, 4.172325134277344e-07},
	}
	for _, c := range published {
		if got := McNemarExact(c.b, c.c); !relNear(got, c.p, 1e-9) {
			t.Errorf("McNemarExact(%d, %d) = %.17g, statsmodels gives %.17g", c.b, c.c, got, c.p)
		}
	}
	exact := []struct {
		b, c    int
		p, midp float64
	}{
		{0, 0, 1, 1},
		{0, 1, 1, 0.5},
		{1, 0, 1, 0.5},
		{3, 3, 1, 1},
		{2, 9, 0.0654296875, 0.03857421875},
		{10, 30, 0.0022214337732293643, 0.0014504910141113214},
		{45, 94, 3.9383534725495882e-05, 2.877574547626978e-05},
		{14, 36, 0.0026021714567221466, 0.0017691971837869858},
		{85, 19, 3.7855174633264834e-11, 2.3037546341100948e-11},
		{0, 25, 5.9604644775390625e-08, 2.9802322387695312e-08},
		{300, 420, 8.8077561686150781e-06, 7.5017155930736239e-06},
		{1000, 1210, 8.628775617785265e-06, 7.8489452628500412e-06},
		{7, 0, 0.015625, 0.0078125},
	}
	for _, c := range exact {
		if got := McNemarExact(c.b, c.c); !relNear(got, c.p, 1e-9) {
			t.Errorf("McNemarExact(%d, %d) = %.17g, want %.17g", c.b, c.c, got, c.p)
		}
		if got := McNemarMidP(c.b, c.c); !relNear(got, c.midp, 1e-9) {
			t.Errorf("McNemarMidP(%d, %d) = %.17g, want %.17g", c.b, c.c, got, c.midp)
		}
	}
}

func TestBinomialCDFTails(t *testing.T) {
	// Both tails, summed from either side, must agree with a direct sum.
	for _, c := range []struct {
		n int
		p float64
	}{{10, 0.3}, {57, 0.5}, {200, 0.07}, {1000, 0.9}} {
		sum := 0.0
		for k := 0; k <= c.n; k++ {
			sum += BinomialPMF(k, c.n, c.p)
			if got := BinomialCDF(k, c.n, c.p); !near(got, sum, 1e-12) {
				t.Fatalf("BinomialCDF(%d, %d, %v) = %.15g, direct sum %.15g", k, c.n, c.p, got, sum)
			}
		}
	}
}

// Cohen's h against the values the DialDefer summary reports for
// C1-True vs C2-Correct (advisorqa 155/300 vs 202/300, amqa 169/240 vs
// 137/240) and C1-False vs C2-Incorrect (advisorqa 187/300 vs 134/300).
func TestCohenH(t *testing.T) {
	cases := []struct{ p1, p2, h float64 }{
		{155.0 / 300, 202.0 / 300, -0.3206755458496562},
		{169.0 / 240, 137.0 / 240, 0.27848263707336596},
		{187.0 / 300, 134.0 / 300, 0.35610910617175295},
		{0.5, 0.5, 0},
		{1, 0, math.Pi},
	}
	for _, c := range cases {
		if got := CohenH(c.p1, c.p2); !near(got, c.h, 1e-9) {
			t.Errorf("CohenH(%v, %v) = %.15g, want %.15g", c.p1, c.p2, got, c.h)
		}
	}
}

// numpy.percentile([1, 2, 3, 4, 10], q) with its default linear method.
func TestPercentile(t *testing.T) {
	x := []float64{1, 2, 3, 4, 10}
	for _, c := range []struct{ q, want float64 }{{0, 1}, {2.5, 1.1}, {50, 3}, {97.5, 9.4}, {100, 10}, {60, 3.4000000000000004}} {
		if got := Percentile(x, c.q); !near(got, c.want, 1e-12) {
			t.Errorf("Percentile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if !math.IsNaN(Percentile(nil, 50)) {
		t.Error("Percentile of nothing should be NaN")
	}
}

// Percentile selects instead of sorting; on unsorted values with many ties
// (resampled rates), infinities and NaN it must return, bit for bit, what
// interpolating the sorted values returns.
func TestPercentileEqualsSorted(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	for trial := 0; trial < 400; trial++ {
		n := 1 + rng.IntN(300)
		x := make([]float64, n)
		for i := range x {
			switch r := rng.IntN(40); {
			case r == 0:
				x[i] = math.NaN()
			case r == 1:
				x[i] = math.Inf(1 - 2*rng.IntN(2))
			case r < 20:
				x[i] = float64(rng.IntN(5)) / 4
			default:
				x[i] = rng.NormFloat64()
			}
		}
		sorted := slices.Clone(x)
		slices.Sort(sorted)
		for _, q := range []float64{0, 2.5, 25, 50, 97.5, 100, rng.Float64() * 100} {
			pos := q / 100 * float64(n-1)
			i := int(math.Floor(pos))
			want := sorted[min(i, n-1)]
			if i < n-1 {
				want += (sorted[i+1] - sorted[i]) * (pos - float64(i))
			}
			got := Percentile(slices.Clone(x), q)
			if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
				t.Fatalf("n=%d q=%v: %v, sorted gives %v", n, q, got, want)
			}
		}
	}
}

func TestVariance(t *testing.T) {
	x := []float64{2, 4, 4, 4, 5, 5, 7, 9}
	if Mean(x) != 5 || Variance(x) != 4 || StdDev(x) != 2 {
		t.Errorf("mean %v variance %v sd %v, want 5, 4, 2", Mean(x), Variance(x), StdDev(x))
	}
}

// The binomial sampler must have the right mean and variance in both of its
// regimes (inversion and BTRS).
func TestBinomialSampler(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		n int
		p float64
	}{{20, 0.1}, {300, 0.5}, {100000, 0.37}, {50, 0.97}} {
		const draws = 200000
		var s, s2 float64
		for i := 0; i < draws; i++ {
			x := float64(Binomial(rng, c.n, c.p))
			if x < 0 || x > float64(c.n) {
				t.Fatalf("Binomial(%d, %v) drew %v", c.n, c.p, x)
			}
			s += x
			s2 += x * x
		}
		mean := s / draws
		v := s2/draws - mean*mean
		wantM, wantV := float64(c.n)*c.p, float64(c.n)*c.p*(1-c.p)
		// Five standard errors of the mean; 3% on the variance.
		if math.Abs(mean-wantM) > 5*math.Sqrt(wantV/draws) || math.Abs(v-wantV) > 0.03*wantV {
			t.Errorf("Binomial(%d, %v): mean %.3f var %.3f, want %.3f, %.3f", c.n, c.p, mean, v, wantM, wantV)
		}
	}
}

func TestMultinomialKeepsTotal(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	w := []int{0, 5, 120, 0, 3000, 1}
	out := make([]int, len(w))
	for i := 0; i < 1000; i++ {
		Multinomial(rng, w, out)
		sum := 0
		for j, x := range out {
			if w[j] == 0 && x != 0 {
				t.Fatalf("empty category %d drew %d", j, x)
			}
			sum += x
		}
		if sum != 3126 {
			t.Fatalf("multinomial total %d, want 3126", sum)
		}
	}
}

// The bootstrap standard error of a proportion must approach the analytic
// sqrt(p(1-p)/n), and the category shortcut must give the same distribution
// as resampling the units themselves.
func TestBootstrapAgreesWithTheory(t *testing.T) {
	const n, k = 400, 120 // p = 0.3
	x := make([]float64, n)
	for i := 0; i < k; i++ {
		x[i] = 1
	}
	b := Bootstrap{Resamples: 20000, Level: 0.95, Seed: 9}
	units := pairedBootstrap(n, 1, b, func(idx []int, out []float64) {
		s := 0.0
		for _, i := range idx {
			s += x[i]
		}
		out[0] = s / float64(len(idx))
	})[0]
	cats := CategoryBootstrap([][]int{{n - k, k}}, 1, b, func(c [][]int, out []float64) {
		out[0] = float64(c[0][1]) / float64(c[0][0]+c[0][1])
	})[0]
	se := math.Sqrt(0.3 * 0.7 / n)
	for name, e := range map[string]Estimate{"paired": units, "category": cats} {
		if e.Value != 0.3 {
			t.Errorf("%s: point estimate %v, want 0.3", name, e.Value)
		}
		if math.Abs(e.SE-se) > 0.05*se {
			t.Errorf("%s: bootstrap SE %.5f, analytic %.5f", name, e.SE, se)
		}
		if !e.CI.Contains(0.3) || math.Abs((e.CI.Hi-e.CI.Lo)-2*Z95*se) > 0.1*2*Z95*se {
			t.Errorf("%s: interval %v, want about 0.3 ± %.4f", name, e.CI, Z95*se)
		}
	}
	// Same seed, same answer.
	again := CategoryBootstrap([][]int{{n - k, k}}, 1, b, func(c [][]int, out []float64) {
		out[0] = float64(c[0][1]) / float64(c[0][0]+c[0][1])
	})[0]
	if again != cats {
		t.Errorf("bootstrap is not repeatable: %v then %v", cats, again)
	}
}

func TestBootstrapEmpty(t *testing.T) {
	e := CategoryBootstrap([][]int{{0, 0}}, 1, DefaultBootstrap(1), func(c [][]int, out []float64) { out[0] = 0 })[0]
	if !math.IsNaN(e.CI.Lo) || !math.IsNaN(e.SE) {
		t.Errorf("bootstrap of nothing = %+v, want NaN interval", e)
	}
}

// pairedBootstrap resamples n paired units with replacement (each unit keeps
// all of its measurements together, which is what makes it paired) and
// returns a percentile interval and standard error for each of the k
// statistics fn computes. fn fills out (length k) from the indices of one
// resample; it is also called once with the identity sample for the point
// estimates.
func pairedBootstrap(n, k int, b Bootstrap, fn func(idx []int, out []float64)) []Estimate {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	point := make([]float64, k)
	fn(idx, point)
	if n == 0 || b.Resamples < 1 {
		return summarize(point, nil, b)
	}
	rng := rand.New(rand.NewPCG(b.Seed, 0x6f6f7473747261))
	reps, _ := resamples(k, b, func(out []float64) bool {
		for i := range idx {
			idx[i] = rng.IntN(n)
		}
		fn(idx, out)
		return true
	})
	return summarize(point, reps, b)
}
