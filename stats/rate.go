package stats

import (
	"encoding/json"
	"fmt"
)

// Rate is a count over a denominator. It is never shown without both, and
// an empty denominator has no value: Fraction, Percent and Wilson report
// whether there is one, so 0/0 cannot pass for 0%.
//
// Its JSON form is {"numerator", "denominator", "percent", "wilson_lo",
// "wilson_hi"}, the last three in percent and null when the denominator is
// 0, and, for a rate with a design-based interval (CI), "interval" {"low",
// "high", "method", "clusters"} in percent: the interval reports show. The
// Wilson bounds treat observations as independent. Only the numerator and
// denominator are read back; the rest is derived.
type Rate struct {
	Num int
	Den int
	// CI, when set, is the rate's 95% interval accounting for clustering
	// (ClusteredRate); a report shows it instead of the Wilson interval.
	CI *RateCI
}

// NewRate is the rate num/den.
func NewRate(num, den int) Rate { return Rate{Num: num, Den: den} }

// Fraction is Num/Den; ok is false when the denominator is empty.
func (r Rate) Fraction() (v float64, ok bool) {
	if r.Den == 0 {
		return 0, false
	}
	return float64(r.Num) / float64(r.Den), true
}

// Percent is 100·Num/Den; ok is false when the denominator is empty.
func (r Rate) Percent() (v float64, ok bool) {
	if r.Den == 0 {
		return 0, false
	}
	return float64(r.Num) / float64(r.Den) * 100, true
}

// Wilson is the Wilson 95% score interval of the rate, as fractions; ok is
// false when the denominator is empty.
func (r Rate) Wilson() (iv Interval, ok bool) {
	if r.Den <= 0 {
		return Interval{}, false
	}
	return Wilson(r.Num, r.Den, Z95), true
}

// Warnings lists the warnings that go with the rate (RateWarnings).
func (r Rate) Warnings() []string { return RateWarnings(r.Den) }

func (r Rate) String() string {
	p, ok := r.Percent()
	if !ok {
		return fmt.Sprintf("%d/%d (no denominator)", r.Num, r.Den)
	}
	return fmt.Sprintf("%d/%d (%.1f%%)", r.Num, r.Den, p)
}

type rateJSON struct {
	Num      int         `json:"numerator"`
	Den      int         `json:"denominator"`
	Percent  *float64    `json:"percent"`
	WilsonLo *float64    `json:"wilson_lo"`
	WilsonHi *float64    `json:"wilson_hi"`
	Interval *rateCIJSON `json:"interval,omitempty"`
}

type rateCIJSON struct {
	Low          float64 `json:"low"`
	High         float64 `json:"high"`
	Method       string  `json:"method"`
	Clusters     int     `json:"clusters"`
	DesignEffect float64 `json:"design_effect"`
}

// MarshalJSON writes the numerator, the denominator, the percentage and
// its Wilson 95% interval in percent (null without a denominator).
func (r Rate) MarshalJSON() ([]byte, error) {
	j := rateJSON{Num: r.Num, Den: r.Den}
	if p, ok := r.Percent(); ok {
		iv, _ := r.Wilson()
		lo, hi := iv.Lo*100, iv.Hi*100
		j.Percent, j.WilsonLo, j.WilsonHi = &p, &lo, &hi
		if r.CI != nil {
			j.Interval = &rateCIJSON{Low: 100 * r.CI.Lo, High: 100 * r.CI.Hi, Method: r.CI.Method, Clusters: r.CI.Clusters, DesignEffect: r.CI.DesignEffect}
		}
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads the numerator and denominator; the derived fields
// (and any older form such as an "interval" object) are ignored.
func (r *Rate) UnmarshalJSON(b []byte) error {
	var j rateJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*r = Rate{Num: j.Num, Den: j.Den}
	return nil
}
