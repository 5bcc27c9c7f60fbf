package study

import (
	"context"
	"fmt"
	"testing"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/provider/sim"
	"github.com/buildlab/budge/stats"
)

// plantedItems are n items of one domain whose questions are new in every
// replication, so the simulated judge's fixed beliefs are drawn afresh.
func plantedItems(rep, n int) []framing.Item {
	items := make([]framing.Item, n)
	for i := range items {
		items[i] = framing.Item{ID: fmt.Sprintf("r%d-q%d", rep, i), Domain: "planted",
			Question:  fmt.Sprintf("In replication %d, what is the value of constant number %d?", rep, i),
			Correct:   fmt.Sprintf("alpha%dx%d", rep, i),
			Incorrect: fmt.Sprintf("omega%dx%d", rep, i)}
	}
	return items
}

// plantedSummary runs one replication in process: every planned session
// goes straight to the simulated judge (no HTTP, no store) and is scored
// as a run would score it.
func plantedSummary(t *testing.T, p sim.FramingProfile, rep, n int) *framing.Summary {
	d := framing.DefaultDesign()
	d.Mitigations = []framing.Mitigation{{Name: "planted", SystemPrompt: "Judge on the merits alone."}}
	return plantedRun(t, &d, p, rep, n)
}

func plantedRun(t *testing.T, dp *framing.Design, p sim.FramingProfile, rep, n int) *framing.Summary {
	t.Helper()
	d := *dp
	items := plantedItems(rep, n)
	judge := sim.NewJudge(p, sim.NewKnowledge(knowledgeEntries(&d, items)))
	var obs []framing.Observation
	for _, s := range framing.Plan(&d, items) {
		seed := framing.SessionSeed(uint64(rep), s.ID())
		se, err := framing.NewSession(&d, s, &items[s.Index], "sim", chat.Settings{Seed: &seed})
		if err != nil {
			t.Fatal(err)
		}
		for req := se.Next(); req != nil; req = se.Next() {
			resp, err := judge.Chat(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			se.Observe(resp)
		}
		obs = append(obs, framing.Score(&d, s, framing.Transcript{Ran: true, Entries: se.Entries()}))
	}
	return summarizeFraming(&d, items, obs, stats.Bootstrap{Resamples: 1000, Level: 0.95, Seed: uint64(rep)})
}

func knowledgeEntries(d *framing.Design, items []framing.Item) []sim.KnowledgeEntry {
	var out []sim.KnowledgeEntry
	for _, k := range framing.KnowledgeOf(d, items) {
		out = append(out, sim.KnowledgeEntry{Question: k.Question, Correct: k.Correct, Incorrect: k.Incorrect})
	}
	return out
}

// TestFramingPlantedMitigation plants a mitigation in the simulated judge
// and counts verdicts over 100 seeded replications: one that changes
// nothing gets a verdict (a false alarm) in at most 5, and one that takes
// 15 points off a DDS of +30 is found "reduced" in at least 80.
func TestFramingPlantedMitigation(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("100 replications")
	}
	const reps, items = 100, 120
	base := sim.FramingProfile{Name: "planted", RightTrue: 0.60, RightFalse: 0.80, Deference: 0.15, Noise: 0.1}
	for _, tc := range []struct {
		name      string
		mitigated float64
		count     func(outcome string) bool
		atLeast   int
	}{
		{"no effect", 0.15, func(o string) bool { return o == framing.OutcomeNoClearChange }, 95},
		{"15 points less", 0.075, func(o string) bool { return o == framing.OutcomeReduced }, 80},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := base
			p.MitigatedDeference = &tc.mitigated
			hits, outcomes := 0, map[string]int{}
			for rep := 1; rep <= reps; rep++ {
				s := plantedSummary(t, p, rep, items)
				v := s.Arms[1].Versus
				if v == nil {
					t.Fatalf("replication %d: no comparison", rep)
				}
				outcomes[v.Outcome]++
				if tc.count(v.Outcome) {
					hits++
				}
			}
			t.Logf("%s: %v over %d replications of %d items", tc.name, outcomes, reps, items)
			if hits < tc.atLeast {
				t.Errorf("%d of %d replications, want at least %d (%v)", hits, reps, tc.atLeast, outcomes)
			}
		})
	}
}

// TestFramingPlantedLabelArm: speaker labels that name AIs take the planted
// deference of +30 down to 0; the label arm's Δ against the default labels
// carries a paired interval that finds it, and the default arm gets none.
func TestFramingPlantedLabelArm(t *testing.T) {
	ai, err := framing.ParseLabels("ai-agents")
	if err != nil {
		t.Fatal(err)
	}
	d := framing.DefaultDesign()
	d.Labels = append(d.Labels, ai)
	p := sim.FramingProfile{Name: "planted", RightTrue: 0.60, RightFalse: 0.80, Deference: 0.15, AIDeference: new(0.0), Noise: 0.1}
	s := plantedRun(t, &d, p, 7, 120)
	if len(s.Arms) != 2 || s.Arms[0].VersusLabels != nil {
		t.Fatalf("arms %d; the default labels' arm compared with itself: %+v", len(s.Arms), s.Arms[0].VersusLabels)
	}
	v := s.Arms[1].VersusLabels
	if v == nil || v.Baseline != s.Arms[0].Name || v.Outcome != framing.OutcomeReduced || v.Difference.CIHi == nil || *v.Difference.CIHi >= 0 {
		t.Fatalf("AI labels against the default: %+v", v)
	}
	t.Logf("AI labels: DDS %+.1f -> %+.1f, Δ %+.1f [%+.1f, %+.1f]", v.Before, v.After, v.Change, *v.Difference.CILo, *v.Difference.CIHi)
}
