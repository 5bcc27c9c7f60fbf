package reference

import (
	"testing"

	"github.com/buildlab/budge/stats"
)

// A ratio over two clusters (1/2 and 3/3): the value is 4/5 from the
// totals; with so few clusters t(1) makes the half-width wide, and the
// interval of a share is kept within [0, 1].
func TestEstimateRatioAndShareRange(t *testing.T) {
	c := NewCounts(2)
	c.Add("a", 0, 1)
	c.Add("a", 1, 2)
	c.Add("b", 0, 3)
	c.Add("b", 1, 3)
	m := Measure{Scale: "share"}
	c.Estimate(&m, stats.DefaultBootstrap(1), func(v []float64) (float64, bool) { return Ratio(v[0], v[1]) })
	if m.Value == nil || *m.Value != 0.8 || m.Clusters != 2 {
		t.Fatalf("value %v over %d clusters, want 0.8 over 2", m.Value, m.Clusters)
	}
	if m.Interval == nil || m.Interval.Low < 0 || m.Interval.High > 1 || m.Interval.High != 1 {
		t.Errorf("interval %+v: want one clipped to [0, 1]", m.Interval)
	}
	if p := c.Part("x", 0, 1); p.Num != 4 || p.Den != 5 {
		t.Errorf("part %+v, want 4/5", p)
	}
	empty := Measure{}
	NewCounts(2).Estimate(&empty, stats.DefaultBootstrap(1), func(v []float64) (float64, bool) { return Ratio(v[0], v[1]) })
	if empty.Value != nil || empty.Interval != nil {
		t.Errorf("no clusters: %+v, want no value", empty)
	}
}
