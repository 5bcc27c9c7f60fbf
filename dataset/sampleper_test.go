package dataset

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/buildlab/budge/framing"
)

func perItems() []framing.Item {
	var items []framing.Item
	for i := 0; i < 60; i++ {
		// Interleaved data sets; "a" has a field with a 40/20 split.
		d := []string{"a", "b", "c"}[i%3]
		it := framing.Item{ID: fmt.Sprintf("%s%02d", d, i), Domain: d, Meta: map[string]any{}}
		if d == "a" {
			it.Meta["kind"] = []string{"x", "x", "y"}[i%9/3]
		}
		items = append(items, it)
	}
	return items
}

// Without --sample-per, SamplePer is Sample; with it, each named data set
// gets its own size and strata, the others are drawn together by the
// global size, and the result keeps the input order.
func TestSamplePer(t *testing.T) {
	items := perItems()
	got, _, err := SamplePer(items, nil, 12, "domain", 42)
	if err != nil || !reflect.DeepEqual(got, Sample(items, 12, "domain", 42)) {
		t.Fatalf("without specs SamplePer differs from Sample (%v)", err)
	}
	got, rec, err := SamplePer(items, []SampleSpec{{Dataset: "a", N: 6, Field: "kind"}, {Dataset: "c", N: 3}}, 4, "", 42)
	if err != nil {
		t.Fatal(err)
	}
	count, kinds := map[string]int{}, map[string]int{}
	for i, it := range got {
		count[it.Domain]++
		if it.Domain == "a" {
			kinds[it.MetaString("kind")]++
		}
		if i > 0 && strings.Compare(got[i-1].ID[1:], it.ID[1:]) > 0 {
			t.Errorf("order not kept: %s before %s", got[i-1].ID, it.ID)
		}
	}
	if count["a"] != 6 || count["c"] != 3 || count["b"] != 4 || kinds["x"] != 3 || kinds["y"] != 3 {
		t.Errorf("drawn %v, kinds in a %v; want a 6 (3 x, 3 y), b 4, c 3", count, kinds)
	}
	want := []Drawn{
		{Dataset: "a", Available: 20, Drawn: 6, Rule: RulePerDataset, Requested: 6, Field: "kind", Seed: 42},
		{Dataset: "b", Available: 20, Drawn: 4, Rule: RuleGlobal, Requested: 4, Seed: 42},
		{Dataset: "c", Available: 20, Drawn: 3, Rule: RulePerDataset, Requested: 3, Seed: 42},
	}
	if !reflect.DeepEqual(rec, want) {
		t.Errorf("record %+v\nwant %+v", rec, want)
	}
	for _, c := range []struct {
		per  []SampleSpec
		want string
	}{
		{[]SampleSpec{{Dataset: "d", N: 3}}, `no item belongs to data set "d"; the data's data sets are: a, b, c`},
		{[]SampleSpec{{Dataset: "b", N: 3, Field: "kind"}}, `--sample-per b=3:kind: no item has the field "kind"; the items have: domain, split`},
		{[]SampleSpec{{Dataset: "a", N: 3}, {Dataset: "a", N: 4}}, `data set "a" is given twice`},
	} {
		if _, _, err := SamplePer(items, c.per, 0, "", 42); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.per, err, c.want)
		}
	}
}

func TestParseSampleSpec(t *testing.T) {
	for in, want := range map[string]SampleSpec{"advisorqa=300:label": {"advisorqa", 300, "label"}, " amqa = 240 ": {"amqa", 240, ""}} {
		if got, err := ParseSampleSpec(in); err != nil || got != want {
			t.Errorf("%q: %+v, %v", in, got, err)
		}
	}
	for _, in := range []string{"amqa", "=3", "amqa=0", "amqa=x:f"} {
		if _, err := ParseSampleSpec(in); err == nil {
			t.Errorf("%q was accepted", in)
		}
	}
}
