package stats

import "math"

// Kappa is Cohen's kappa for two raters with its large-sample interval.
type Kappa struct {
	N        int     // items both raters coded
	Observed float64 // proportion of agreement
	Expected float64 // agreement expected by chance from the marginals
	Value    float64 // NaN when undefined (no items, or chance agreement is 1)
	SE       float64 // NaN when undefined
	CI       Interval
}

// CohenKappa computes Cohen's kappa from a square agreement table:
// table[i][j] counts items the first rater put in category i and the second
// in category j. The interval is value ± z·SE with the large-sample standard
// error sqrt(po(1−po) / (n(1−pe)²)) (Cohen 1960; statsmodels' cohens_kappa),
// clipped to [−1, 1]. With few items it is wide and approximate. Value, SE
// and CI are NaN when kappa is undefined: no items, or chance agreement 1.
func CohenKappa(table [][]int, z float64) Kappa {
	nan := math.NaN()
	k := Kappa{Value: nan, SE: nan, CI: Interval{Lo: nan, Hi: nan}}
	rows := make([]float64, len(table))
	cols := make([]float64, len(table))
	agree := 0.0
	for i, row := range table {
		for j, x := range row {
			k.N += x
			rows[i] += float64(x)
			if j < len(cols) {
				cols[j] += float64(x)
			}
			if i == j {
				agree += float64(x)
			}
		}
	}
	if k.N == 0 {
		return k
	}
	n := float64(k.N)
	k.Observed = agree / n
	for i := range rows {
		k.Expected += rows[i] / n * cols[i] / n
	}
	if k.Expected >= 1 {
		return k
	}
	k.Value = (k.Observed - k.Expected) / (1 - k.Expected)
	k.SE = math.Sqrt(k.Observed*(1-k.Observed)/n) / (1 - k.Expected)
	k.CI = Interval{Lo: math.Max(-1, k.Value-z*k.SE), Hi: math.Min(1, k.Value+z*k.SE)}
	return k
}
