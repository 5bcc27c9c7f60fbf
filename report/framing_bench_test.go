package report_test

import (
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/stats"
)

// benchObservations makes n items in nine domains with all four answers,
// each right with a condition-specific chance (C1 60/80, C2 75/65).
func benchObservations(n int) ([]framing.Item, []framing.Observation) {
	rng := rand.New(rand.NewPCG(1, 2))
	items := make([]framing.Item, n)
	obs := make([]framing.Observation, 0, 4*n)
	p := map[framing.Condition]float64{framing.C1True: 0.6, framing.C1False: 0.8, framing.C2Correct: 0.75, framing.C2Incorrect: 0.65}
	for i := range items {
		items[i] = framing.Item{ID: fmt.Sprintf("item-%06d", i), Domain: fmt.Sprintf("domain-%d", i%9), Question: "q", Correct: "a", Incorrect: "b"}
		for _, c := range framing.Conditions {
			s := framing.Spec{Item: items[i].ID, Index: i, Domain: items[i].Domain, Condition: c, Template: "budge", Mitigation: framing.None}
			if c.Dialogue() {
				s.Labels = "speakers"
			}
			ok := rng.Float64() < p[c]
			ch := c.Expected()
			if !ok {
				ch = map[string]string{"1": "2", "2": "1"}[ch]
			}
			obs = append(obs, framing.Observation{Spec: s, Session: s.ID(), Reply: framing.Reply{Status: framing.StatusAnswered, Choice: ch, Correct: ok}})
		}
	}
	return items, obs
}

// BenchmarkFramingReport100k is the full report of 100,000 items × 4
// conditions in nine domains: every measure, the 10,000-resample bootstrap
// per domain and for the mean over domains, and rendering as text,
// Markdown and JSON. The target is under 5 s on 2 cores.
//
//	go test ./report -run XXX -bench FramingReport100k -benchtime 3x
func BenchmarkFramingReport100k(b *testing.B) {
	items, obs := benchObservations(100000)
	d := framing.DefaultDesign()
	b.ResetTimer()
	for b.Loop() {
		t := framing.NewTally(&d, items)
		for i := range obs {
			t.Add(&obs[i])
		}
		s := t.Summary(stats.DefaultBootstrap(42))
		rep := report.Framing{Version: 1, Measures: s}
		for _, f := range report.Formats {
			if err := rep.Render(io.Discard, f); err != nil {
				b.Fatal(err)
			}
		}
	}
}
