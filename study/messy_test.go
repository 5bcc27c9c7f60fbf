package study

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/buildlab/budge/provider/endpoint"
	"github.com/buildlab/budge/provider/sim"
	"github.com/buildlab/budge/testkit/storetest"
)

// A model that wraps every answer as real models do (reasoning blocks,
// prose, fences in prose, bold markup) gets the same measures over HTTP as
// the clean in-process simulator, with every repair counted; strict
// parsing refuses every wrapped answer instead.
func TestMessyModelReadTolerantly(t *testing.T) {
	url, _, _ := simServer(t, sim.Faults{Messy: 1})
	type parsing struct {
		Replies    int            `json:"replies"`
		Strict     int            `json:"read_strictly"`
		Tolerant   int            `json:"read_tolerantly"`
		Unreadable int            `json:"unreadable"`
		Repairs    map[string]int `json:"repairs"`
	}
	type measures struct {
		Baseline struct{ Numerator, Denominator int } `json:"baseline_correctness"`
		Uptake   struct {
			All struct{ Numerator, Denominator int } `json:"all_correction_sessions"`
		} `json:"correction_uptake"`
		Parsing struct {
			All parsing `json:"all_replies"`
		} `json:"parsing"`
	}
	run := func(overHTTP, strict bool) measures {
		t.Helper()
		ctx := context.Background()
		st := storetest.Open(t)
		o := DefaultPressureOptions()
		o.Seed, o.Concurrency, o.StrictParse = 5, 16, strict
		if overHTTP {
			o.Model, o.Endpoint = "openai-compatible:sim", endpoint.Options{BaseURL: url, Concurrency: 16}
		}
		res, err := Start(ctx, st, o)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := res.Render(ctx, st, &b, "json"); err != nil {
			t.Fatal(err)
		}
		var rep struct {
			Measures measures `json:"measures"`
		}
		if err := json.Unmarshal(b.Bytes(), &rep); err != nil {
			t.Fatal(err)
		}
		return rep.Measures
	}
	clean, messy := run(false, false), run(true, false)
	if clean.Baseline != messy.Baseline || clean.Uptake != messy.Uptake {
		t.Errorf("messy replies changed the measures: baseline %v vs %v, uptake %v vs %v", messy.Baseline, clean.Baseline, messy.Uptake, clean.Uptake)
	}
	p := messy.Parsing.All
	wrapped := p.Repairs["reasoning-block"] + p.Repairs["surrounding-text"] + p.Repairs["bold-markup"]
	if p.Strict >= p.Replies/10 || p.Tolerant <= p.Replies*9/10 || wrapped < p.Replies*9/10 {
		t.Errorf("messy run parsing %+v: want nearly every reply read only with a repair", p)
	}
	strict := run(true, true)
	if s := strict.Parsing.All; s.Strict >= s.Replies/10 || strict.Baseline.Numerator >= clean.Baseline.Numerator/10 {
		t.Errorf("strict parsing of messy replies: %+v, baseline %v", s, strict.Baseline)
	}
}
