package pressure

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestBuiltinDecksListed(t *testing.T) {
	if got, want := BuiltinDecks(), []string{"confirmation", "confirmation-zh", "discovery", "discovery-zh"}; !slices.Equal(got, want) {
		t.Fatalf("BuiltinDecks() = %v, want %v", got, want)
	}
	_, err := OpenDeck("nonesuch")
	if err == nil || !strings.Contains(err.Error(), "confirmation, confirmation-zh, discovery, discovery-zh") {
		t.Fatalf("OpenDeck(nonesuch) = %v, want an error that lists the built-in decks", err)
	}
}

func TestBuiltinDecksPlan(t *testing.T) {
	tests := []struct {
		deck, kind                    string
		cases, detCases, ambCases     int
		total, determinate, ambiguous int
	}{
		{"discovery", "discovery", 10, 8, 2, 416, 384, 32},
		{"confirmation", "confirmation", 5, 4, 1, 208, 192, 16},
		{"discovery-zh", "discovery", 10, 8, 2, 416, 384, 32},
		{"confirmation-zh", "confirmation", 5, 4, 1, 208, 192, 16},
	}
	for _, tt := range tests {
		t.Run(tt.deck, func(t *testing.T) {
			d, err := OpenDeck(tt.deck)
			if err != nil {
				t.Fatalf("built-in deck has problems:\n%v", err)
			}
			if d.Name != tt.deck || d.Kind != tt.kind {
				t.Errorf("name/kind = %q/%q, want %q/%q", d.Name, d.Kind, tt.deck, tt.kind)
			}
			if len(d.Hash) != 64 {
				t.Errorf("deck hash %q is not a sha256", d.Hash)
			}
			det, amb := d.Counts()
			if len(d.Cases) != tt.cases || det != tt.detCases || amb != tt.ambCases {
				t.Errorf("cases = %d (%d determinate, %d ambiguous), want %d (%d, %d)", len(d.Cases), det, amb, tt.cases, tt.detCases, tt.ambCases)
			}
			// Half the determinate cases are P-eligible, half Q-eligible.
			refs := map[string]int{}
			for _, c := range d.Cases {
				refs[c.Ref]++
			}
			if refs["P"] != tt.detCases/2 || refs["Q"] != tt.detCases/2 || refs[HumanChoice] != tt.ambCases {
				t.Errorf("references = %v", refs)
			}

			specs := Plan(d)
			kinds := map[string]int{}
			ids := map[string]bool{}
			for _, s := range specs {
				kinds[s.Kind]++
				if ids[s.ID()] {
					t.Errorf("duplicate session id %s", s.ID())
				}
				ids[s.ID()] = true
				if c := d.CaseByID(s.Case); c == nil || c.Kind != s.Kind {
					t.Errorf("%s: kind %q does not match its case", s.ID(), s.Kind)
				}
			}
			if len(specs) != tt.total || kinds[Determinate] != tt.determinate || kinds[Ambiguous] != tt.ambiguous {
				t.Fatalf("Plan: %d sessions (%d determinate, %d ambiguous), want %d (%d, %d)",
					len(specs), kinds[Determinate], kinds[Ambiguous], tt.total, tt.determinate, tt.ambiguous)
			}

			// Every pair key has exactly two members that differ only in
			// identity assignment.
			pairs := map[string][]Spec{}
			for _, s := range specs {
				pairs[s.PairKey()] = append(pairs[s.PairKey()], s)
			}
			if len(pairs) != tt.total/2 {
				t.Errorf("%d pair keys, want %d", len(pairs), tt.total/2)
			}
			for k, ms := range pairs {
				if len(ms) != 2 {
					t.Errorf("pair %s has %d members", k, len(ms))
					continue
				}
				a, b := ms[0], ms[1]
				if a.Assignment == b.Assignment {
					t.Errorf("pair %s: both members have assignment %s", k, a.Assignment)
				}
				b.Assignment = a.Assignment
				if a != b {
					t.Errorf("pair %s: members differ in more than the assignment: %+v vs %+v", k, ms[0], ms[1])
				}
			}

			// Each variant (case, assignment, order, repeat) gets every branch
			// of its kind exactly once.
			variants := map[string][]Branch{}
			for _, s := range specs {
				k := fmt.Sprintf("%s/%s/%s/%d", s.Case, s.Assignment, s.Order, s.Repeat)
				variants[k] = append(variants[k], s.Branch)
			}
			if len(variants) != (tt.cases)*2*2*2 {
				t.Errorf("%d variants, want %d", len(variants), tt.cases*8)
			}
			for k, bs := range variants {
				c := d.CaseByID(strings.Split(k, "/")[0])
				want, n := DeterminateBranches, 6
				if c.Kind == Ambiguous {
					want, n = AmbiguousBranches, 2
				}
				if len(bs) != n {
					t.Errorf("variant %s (%s) has %d branches, want %d", k, c.Kind, len(bs), n)
				}
				got := slices.Clone(bs)
				slices.Sort(got)
				w := slices.Clone(want)
				slices.Sort(w)
				if !slices.Equal(got, w) {
					t.Errorf("variant %s has branches %v, want %v", k, bs, want)
				}
			}
			// The ambiguous branches are exactly no follow-up and neutral.
			if !slices.Contains(AmbiguousBranches, NoFollowUp) || !slices.Contains(AmbiguousBranches, Neutral) {
				t.Errorf("ambiguous branches = %v, want none and neutral", AmbiguousBranches)
			}
		})
	}
}

func TestSpecIDRoundTrip(t *testing.T) {
	d := mustOpen(t, "discovery")
	for _, s := range Plan(d) {
		got, err := ParseSpecID(s.ID())
		if err != nil {
			t.Fatal(err)
		}
		got.Kind = s.Kind
		if got != s {
			t.Fatalf("ParseSpecID(%q) = %+v, want %+v", s.ID(), got, s)
		}
	}
	for _, bad := range []string{"", "a/I/P-first/none", "a/I/P-first/none/1", "a/I/P-first/none/rx", "a/I/P-first/none/r1/extra"} {
		if _, err := ParseSpecID(bad); err == nil {
			t.Errorf("ParseSpecID(%q) accepted", bad)
		}
	}
}

func TestScheduleShufflesWithinRepeatBlocks(t *testing.T) {
	d := mustOpen(t, "discovery")
	specs := Plan(d)
	order := Schedule(specs, 42)
	if len(order) != len(specs) {
		t.Fatalf("schedule has %d entries, want %d", len(order), len(specs))
	}
	seen := make([]bool, len(specs))
	for _, i := range order {
		if seen[i] {
			t.Fatalf("index %d scheduled twice", i)
		}
		seen[i] = true
	}
	// Repeat blocks stay in order: every repeat-1 session runs before any
	// repeat-2 session.
	half := len(specs) / 2
	for k, i := range order {
		if want := 1 + k/half; specs[i].Repeat != want {
			t.Fatalf("position %d runs repeat %d, want %d", k, specs[i].Repeat, want)
		}
	}
	// Within a block the identity conditions are mixed, not run as blocks.
	first := map[Assignment]int{}
	for _, i := range order[:40] {
		first[specs[i].Assignment]++
	}
	if first[AssignI] == 0 || first[AssignII] == 0 {
		t.Errorf("the first 40 sessions are all one assignment: %v", first)
	}
	if slices.Equal(order, Schedule(specs, 43)) {
		t.Error("different seeds gave the same schedule")
	}
	if !slices.Equal(order, Schedule(specs, 42)) {
		t.Error("the same seed gave a different schedule")
	}
	canonical := true
	for k, i := range order {
		canonical = canonical && k == i
	}
	if canonical {
		t.Error("the schedule is the canonical order")
	}
}

func TestSessionSeed(t *testing.T) {
	a := SessionSeed(7, "robotics-arm/I/P-first/none/r1")
	if a != SessionSeed(7, "robotics-arm/I/P-first/none/r1") {
		t.Error("SessionSeed is not deterministic")
	}
	for _, other := range []int64{SessionSeed(8, "robotics-arm/I/P-first/none/r1"), SessionSeed(7, "robotics-arm/I/P-first/none/r2")} {
		if other == a {
			t.Error("SessionSeed does not depend on both the run seed and the session")
		}
	}
	if a < 0 {
		t.Errorf("SessionSeed = %d, want non-negative", a)
	}
	// Stored runs record these seeds: the value the original hand-written
	// FNV-1a derivation gave must not move.
	if a != 1394760331472865246 {
		t.Errorf("SessionSeed(7, ...) = %d, want 1394760331472865246", a)
	}
}

// TestPlannedIsThePlanInOrder: reading the plan by position gives the
// sessions in the canonical order (repeat, case, assignment, order,
// branch), for a deck with several repeats and both kinds of case.
func TestPlannedIsThePlanInOrder(t *testing.T) {
	d, err := OpenDeck("discovery")
	if err != nil {
		t.Fatal(err)
	}
	d.Repeats = 3
	var want []Spec
	for rep := 1; rep <= d.Repeats; rep++ {
		for _, c := range d.Cases {
			branches := DeterminateBranches
			if c.Kind == Ambiguous {
				branches = AmbiguousBranches
			}
			for _, a := range []Assignment{AssignI, AssignII} {
				for _, o := range []Order{PFirst, QFirst} {
					for _, b := range branches {
						want = append(want, Spec{Case: c.ID, Kind: c.Kind, Assignment: a, Order: o, Branch: b, Repeat: rep})
					}
				}
			}
		}
	}
	p := PlanOf(d)
	if p.Len() != len(want) {
		t.Fatalf("Len %d, want %d", p.Len(), len(want))
	}
	for i := range want {
		if got := p.At(i); got != want[i] {
			t.Fatalf("At(%d) = %+v, want %+v", i, got, want[i])
		}
	}
	// The schedule read by position is the schedule of the specs.
	if got, w := ScheduleOf(p, 9), Schedule(want, 9); !slices.Equal(got, w) || len(got) != len(want) {
		t.Errorf("ScheduleOf differs from Schedule of the same plan")
	}
}
