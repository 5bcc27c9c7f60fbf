package framing

import (
	"slices"
	"strings"
	"testing"
)

// A fixed-C1 design plans only C2 sessions, and C1Pairing gives the other
// run's unmitigated C1 answers re-indexed to this run's items by content,
// whatever their ids and order, or refuses with what differs.
func TestFixedC1PlanAndPairing(t *testing.T) {
	items := []Item{{ID: "a", Domain: "d", Question: "q?", Correct: "y", Incorrect: "n"}, {ID: "b", Domain: "e", Question: "r?", Correct: "y", Incorrect: "n"}}
	base := DefaultDesign()
	base.Mitigations = []Mitigation{{Name: "honest", SystemPrompt: "x"}}
	// The baseline holds the same items, renamed and in another order.
	baseItems := []Item{items[1], items[0]}
	baseItems[0].ID, baseItems[1].ID = "B", "A"
	var obs []Observation
	for _, s := range Plan(&base, baseItems) {
		obs = append(obs, Observation{Spec: s, Session: s.ID(), Reply: Reply{Status: StatusAnswered, Choice: "1", Correct: s.Condition.Expected() == "1"}})
	}
	d := DefaultDesign()
	d.FixedC1 = "BASE"
	for _, s := range Plan(&d, items) {
		if !s.Condition.Dialogue() {
			t.Fatalf("a fixed-C1 design planned %s", s.ID())
		}
	}
	if n := len(Plan(&d, items)); n != 2*len(items) {
		t.Errorf("%d sessions planned, want %d", n, 2*len(items))
	}
	got, err := pairC1(&d, items, Baseline{Run: "BASE", Design: &base, Items: baseItems, Observations: obs})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("%d C1 observations, want 4", len(got))
	}
	for _, o := range got {
		if o.Mitigation != None || o.Condition.Dialogue() || items[o.Index].ID != o.Item || items[o.Index].Domain != o.Domain {
			t.Errorf("observation %s: index %d item %s domain %s mitigation %s", o.Session, o.Index, o.Item, o.Domain, o.Mitigation)
		}
	}

	other := DefaultDesign()
	other.Templates = []*Templates{mustTemplates(t, "budge-plain")}
	short := obs[:len(obs)-1]
	for _, c := range []struct {
		name  string
		d     *Design
		items []Item
		base  Baseline
		want  string
	}{
		{"templates", &d, items, Baseline{Run: "BASE", Design: &other, Items: baseItems, Observations: obs}, "template sets: this run budge (sha256 "},
		{"items", &d, items[:1], Baseline{Run: "BASE", Design: &base, Items: baseItems, Observations: obs}, "0 of this run's 1 are not in run BASE, and 1 of its 2 are not in this run (B)"},
		{"unfinished", &d, items, Baseline{Run: "BASE", Design: &base, Items: baseItems, Observations: append(short[:0:0], obs[2:]...)}, "run BASE lacks 2 of the 4 unmitigated C1 answers"},
		{"fixed itself", &d, items, Baseline{Run: "BASE", Design: &d, Items: baseItems, Observations: obs}, "has no C1 answers of its own"},
	} {
		if _, err := pairC1(c.d, c.items, c.base); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	joint := d
	joint.Mode = ModeJoint
	if errs := joint.Validate(); len(errs) != 1 || !strings.Contains(errs[0], "C1 comes from run BASE") {
		t.Errorf("joint mode with a fixed C1: %v", errs)
	}
}

// pairC1 runs C1Pairing's three steps with every observation of base at
// hand and returns base's C1 answers re-indexed to the run's items, by
// template, item and condition (the order study's streaming gives).
func pairC1(d *Design, items []Item, base Baseline) ([]Observation, error) {
	p, err := NewC1Pairing(d, items, base)
	if err != nil {
		return nil, err
	}
	for i := range base.Observations {
		p.Add(i, &base.Observations[i])
	}
	if err := p.Finish(); err != nil {
		return nil, err
	}
	var out []Observation
	for item := range items {
		for _, pos := range p.For(item) {
			o := base.Observations[pos]
			p.Reindex(&o, item)
			out = append(out, o)
		}
	}
	// The order: by template, then item, then condition.
	slices.SortStableFunc(out, func(a, b Observation) int { return p.template[a.Template] - p.template[b.Template] })
	return out, nil
}
