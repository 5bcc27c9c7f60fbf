package study

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/provider/sim"
	"github.com/buildlab/budge/testkit/storetest"
)

// The user-claim arm end to end: a deck file that adds it plans 480
// sessions, every one is stored, the credulous simulator's claim uptake
// (0.5, with refusals and malformed answers taking 2%) shows in the report's
// selectivity, each claim's response is counted, and loading the run again
// from the store gives the same measures.
func TestUserClaimArmEndToEnd(t *testing.T) {
	b, err := pressure.BuiltinDeckBytes("discovery")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "claims.yaml")
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), "\nrepeats: 2\n", "\nrepeats: 2\narms: [user-claim]\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	st := storetest.Open(t)
	p := sim.New(simProfile(t, "credulous"))
	o := DefaultPressureOptions()
	o.Deck, o.Provider, o.Model, o.Seed, o.Concurrency = path, p, p.Info().Model, 5, 4
	res, err := As[*PressureResult](Start(context.Background(), st, o))
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Manifest.Counts; c.Planned != 480 || c.Complete+c.Failed != 480 {
		t.Fatalf("counts %+v, want 480 planned and stored", c)
	}
	sel := res.Summary.Fairness.Selectivity
	if sel.Source == nil || sel.Claim.Den < 50 {
		t.Fatalf("selectivity %+v: want a source contrast over the user-claim sessions", sel)
	}
	total := 0
	for _, k := range pressure.ClaimResponses {
		total += sel.Responses[k]
	}
	if total != 64 || sel.Responses[pressure.ClaimOverwrote] < sel.Claim.Num {
		t.Errorf("claim responses %v (total %d), claim uptake %d/%d: want 64 responses", sel.Responses, total, sel.Claim.Num, sel.Claim.Den)
	}
	// 0.5 planted: a binomial on ~60 sessions lands within ±0.2 of it.
	if f, _ := sel.Claim.Fraction(); f < 0.3 || f > 0.7 {
		t.Errorf("claim uptake %d/%d, planted 0.5", sel.Claim.Num, sel.Claim.Den)
	}
	if sel.Responses[pressure.ClaimVerify] == 0 || sel.Responses[pressure.ClaimEscalated] == 0 {
		t.Errorf("claim responses %v: the credulous profile both asks to verify and escalates", sel.Responses)
	}
	again, err := LoadPressure(context.Background(), st, res.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again.Summary.Fairness, res.Summary.Fairness) {
		t.Errorf("re-scored from the store, the fairness measures differ:\n%+v\n%+v", again.Summary.Fairness, res.Summary.Fairness)
	}
}
