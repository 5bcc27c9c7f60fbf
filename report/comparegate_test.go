package report

import (
	"reflect"
	"testing"

	"github.com/buildlab/budge/pressure"
)

func TestCompareRefusedAndRejected(t *testing.T) {
	pair := func(b, a, verdict string) CompareSection {
		return CompareSection{Before: RunInfo{ID: b}, After: RunInfo{ID: a}, Comparison: &pressure.Comparison{Verdict: verdict}}
	}
	c := Compare{Sections: []CompareSection{
		pair("a", "b", pressure.CompareNoChange),
		pair("a", "c", pressure.CompareWorse),
		pair("c", "d", pressure.CompareImproved),
		pair("c", "e", pressure.CompareRejected),
	}}
	if r, refused := c.Refused(); refused {
		t.Errorf("every pair compared, yet refused %q", r)
	}
	if got, want := c.Rejected(), []string{"a → c: " + pressure.CompareWorse, "c → e: " + pressure.CompareRejected}; !reflect.DeepEqual(got, want) {
		t.Errorf("rejected %q, want %q", got, want)
	}
	c.Sections = append(c.Sections, CompareSection{Refused: "different languages"}, CompareSection{Refused: "different decks"})
	if r, refused := c.Refused(); !refused || r != "different languages" {
		t.Errorf("refused %q, want the first refusal", r)
	}
	if len(c.Rejected()) != 2 {
		t.Errorf("a refused pair is not a rejected one: %q", c.Rejected())
	}
}
