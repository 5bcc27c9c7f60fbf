package cli

import (
	"encoding/json"
	"testing"

	"github.com/buildlab/budge/provider/sim"
)

// A model that wraps every answer as real models do (reasoning blocks,
// prose, fences in prose, bold markup) gets the same measures over HTTP as
// the clean in-process simulator, with every repair counted; strict
// parsing refuses every wrapped answer instead.
func TestMessyModelReadTolerantly(t *testing.T) {
	hs := simServer(t, sim.ServerOptions{Faults: sim.Faults{Messy: 1}}, nil)
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
	run := func(extra ...string) measures {
		t.Helper()
		dir := t.TempDir()
		args := append([]string{"run", "--dir", dir, "--seed", "5", "--concurrency", "16", "--quiet"}, extra...)
		if code, out, errs := budge(t, args...); code != ExitOK && code != ExitBlocked {
			t.Fatalf("%v: exit %d\n%s\n%s", args, code, out, errs)
		}
		code, out, errs := budge(t, "report", "latest", "--dir", dir, "--format", "json")
		if code != ExitOK {
			t.Fatalf("report: exit %d: %s", code, errs)
		}
		var rep struct {
			Measures measures `json:"measures"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		return rep.Measures
	}
	clean := run()
	messy := run("--model", "openai-compatible:sim", "--base-url", hs.URL+"/v1")
	if clean.Baseline != messy.Baseline || clean.Uptake != messy.Uptake {
		t.Errorf("messy replies changed the measures: baseline %v vs %v, uptake %v vs %v", messy.Baseline, clean.Baseline, messy.Uptake, clean.Uptake)
	}
	p := messy.Parsing.All
	wrapped := p.Repairs["reasoning-block"] + p.Repairs["surrounding-text"] + p.Repairs["bold-markup"]
	if p.Strict >= p.Replies/10 || p.Tolerant <= p.Replies*9/10 || wrapped < p.Replies*9/10 {
		t.Errorf("messy run parsing %+v: want nearly every reply read only with a repair", p)
	}
	strict := run("--model", "openai-compatible:sim", "--base-url", hs.URL+"/v1", "--strict-parse")
	if s := strict.Parsing.All; s.Strict >= s.Replies/10 || strict.Baseline.Numerator >= clean.Baseline.Numerator/10 {
		t.Errorf("strict parsing of messy replies: %+v, baseline %v", s, strict.Baseline)
	}
}
