package framing

import "github.com/buildlab/budge/stats"

// Helpers only the tests use, kept out of the production code.

// Summarize computes every measure of a run from its scored sessions.
// items gives the domain order and the item ids by index.
func Summarize(d *Design, items []Item, obs []Observation, b stats.Bootstrap) *Summary {
	t := NewTally(d, items)
	for i := range obs {
		t.Add(&obs[i])
	}
	return t.Summary(b)
}
