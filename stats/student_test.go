package stats

import (
	"math"
	"testing"
)

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
