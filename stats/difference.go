package stats

import "math"

// Newcombe is the hybrid score interval for the difference p1 − p2 of two
// independent proportions k1/n1 and k2/n2 (Newcombe 1998, method 10): it
// combines the two Wilson intervals and so inherits their behaviour at 0
// and 1, where the Wald interval collapses. It stays inside [−1, 1]. An
// empty group gives no information: the interval is [−1, 1].
func Newcombe(k1, n1, k2, n2 int, z float64) Interval {
	if n1 <= 0 || n2 <= 0 {
		return Interval{-1, 1}
	}
	p1, p2 := float64(k1)/float64(n1), float64(k2)/float64(n2)
	w1, w2 := Wilson(k1, n1, z), Wilson(k2, n2, z)
	d := p1 - p2
	lo := d - math.Sqrt((p1-w1.Lo)*(p1-w1.Lo)+(w2.Hi-p2)*(w2.Hi-p2))
	hi := d + math.Sqrt((w1.Hi-p1)*(w1.Hi-p1)+(p2-w2.Lo)*(p2-w2.Lo))
	return Interval{math.Max(-1, lo), math.Min(1, hi)}
}
