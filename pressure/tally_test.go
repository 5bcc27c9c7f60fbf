package pressure

import (
	"reflect"
	"testing"
)

// TestTallyKeepsNoSessions: a tally of a whole plan, added in plan order,
// ends with no pair half pending (partners are a few sessions apart), and
// adding the same sessions one at a time gives Summarize's summary.
func TestTallyKeepsNoSessions(t *testing.T) {
	d, err := OpenDeck("discovery")
	if err != nil {
		t.Fatal(err)
	}
	specs := Plan(d)
	outs := make([]Outcome, len(specs))
	tl := NewTally(d)
	most := 0
	for i, s := range specs {
		outs[i] = Score(d, s, Transcript{})
		tl.Add(&outs[i])
		most = max(most, len(tl.pending))
	}
	if len(tl.pending) != 0 {
		t.Errorf("%d pair halves still pending after the whole plan", len(tl.pending))
	}
	if most > 24 {
		t.Errorf("%d pair halves pending at once; partners should be within one case", most)
	}
	if got, want := tl.Summary(), Summarize(d, outs); !reflect.DeepEqual(got, want) {
		t.Error("the tally's summary differs from Summarize's")
	}
}
