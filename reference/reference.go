// Package reference computes the field's named measures exactly as their
// reference implementations define them (their conditioning, denominators,
// exclusions and averaging), from budge's own sessions, so that a report
// can set each beside budge's own definition of the same idea. Each
// measure carries a definition id, its source (repository, file and
// function), its numerators and denominators, and a cluster-bootstrap
// interval over base cases (framing: items).
package reference

import (
	"fmt"
	"math"

	"github.com/buildlab/budge/stats"
)

// Part is one numerator and denominator a measure is built from.
type Part struct {
	Name string  `json:"name"`
	Num  float64 `json:"numerator"`
	Den  int     `json:"denominator"`
}

// Interval is a 95% interval and how it was computed.
type Interval struct {
	Low    float64 `json:"low"`
	High   float64 `json:"high"`
	Method string  `json:"method"`
}

// Own is budge's own measure of the same idea.
type Own struct {
	ID         string   `json:"id"`
	Definition string   `json:"definition"`
	Value      *float64 `json:"value"`
}

// Measure is one named measure computed by its reference's definition.
type Measure struct {
	// ID is the stable definition id ("fairstress.tie_lean", ...).
	ID     string `json:"id"`
	Name   string `json:"name"`
	Source string `json:"source"`
	// Definition states the reference's definition as computed here.
	Definition string `json:"definition"`
	// Scale is how Value reads: share, difference (of shares), points
	// (percentage points) or mean.
	Scale string `json:"scale"`
	// Value is null when the measure is not defined on this design or a
	// denominator is empty.
	Value    *float64  `json:"value"`
	Parts    []Part    `json:"parts"`
	Interval *Interval `json:"interval"`
	Clusters int       `json:"clusters"`
	// NotDefined says why the measure cannot be computed on this run's
	// design ("" when it can).
	NotDefined string `json:"not_defined,omitempty"`
	// Censoring states the right-censoring of a multi-turn measure.
	Censoring string `json:"censoring,omitempty"`
	// Budge is budge's own measure of the same idea (nil when budge has
	// none); Differs says in one line how and why budge's differs.
	Budge   *Own   `json:"budge"`
	Differs string `json:"how_budge_differs"`
}

// Counts keeps, per cluster (base case or item), sums of k components.
type Counts struct {
	k    int
	ids  map[string]int
	rows [][]float64
}

// NewCounts starts counts of k components.
func NewCounts(k int) *Counts { return &Counts{k: k, ids: map[string]int{}} }

// Add adds v to component j of cluster id (creating the cluster).
func (c *Counts) Add(id string, j int, v float64) {
	i, ok := c.ids[id]
	if !ok {
		i = len(c.rows)
		c.ids[id] = i
		c.rows = append(c.rows, make([]float64, c.k))
	}
	c.rows[i][j] += v
}

// Touch makes sure cluster id exists.
func (c *Counts) Touch(id string) {
	if _, ok := c.ids[id]; !ok {
		c.ids[id] = len(c.rows)
		c.rows = append(c.rows, make([]float64, c.k))
	}
}

// Total is component j summed over clusters.
func (c *Counts) Total(j int) float64 {
	s := 0.0
	for _, r := range c.rows {
		s += r[j]
	}
	return s
}

// Estimate sets m's value from the totals (fn), its clusters, and its
// interval: a cluster bootstrap resampling clusters, estimate ± t(G−1) ×
// bootstrap SE × sqrt(G/(G−1)), kept within the scale's range (a share in
// [0, 1], a difference of shares in [−1, 1], points in [−200, 200], a mean
// of counts at least 0).
func (c *Counts) Estimate(m *Measure, b stats.Bootstrap, fn func(t []float64) (float64, bool)) {
	g := len(c.rows)
	m.Clusters = g
	tot := make([]float64, c.k)
	e := stats.ClusterBootstrap(g, 1, b, func(idx []int, out []float64) bool {
		for j := range tot {
			tot[j] = 0
		}
		for _, i := range idx {
			for j, v := range c.rows[i] {
				tot[j] += v
			}
		}
		v, ok := fn(tot)
		out[0] = v
		return ok
	})
	v := e.Estimates[0]
	if math.IsNaN(v.Value) {
		return
	}
	val := v.Value
	m.Value = &val
	if g < 2 || math.IsNaN(v.SE) || v.SE == 0 {
		return
	}
	half := stats.T975(g-1) * v.SE * math.Sqrt(float64(g)/float64(g-1))
	lo, hi := math.Inf(-1), math.Inf(1)
	switch m.Scale {
	case "share":
		lo, hi = 0, 1
	case "difference":
		lo, hi = -1, 1
	case "points":
		lo, hi = -200, 200
	case "mean":
		lo = 0
	}
	m.Interval = &Interval{Low: math.Max(lo, val-half), High: math.Min(hi, val+half),
		Method: fmt.Sprintf("cluster bootstrap 95%%: %d clusters resampled, %d resamples (%d dropped: a denominator left empty), seed %d; estimate ± t(%d) × bootstrap SE × sqrt(%d/%d)",
			g, b.Resamples, e.Skipped, b.Seed, g-1, g, g-1)}
}

// Ratio is num/den, false when den is 0.
func Ratio(num, den float64) (float64, bool) {
	if den == 0 {
		return 0, false
	}
	return num / den, true
}

// Rate is a Part of two components of c.
func (c *Counts) Part(name string, num, den int) Part {
	return Part{Name: name, Num: c.Total(num), Den: int(c.Total(den))}
}
