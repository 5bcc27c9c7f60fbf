package study

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/provider/endpoint"
	"github.com/buildlab/budge/provider/sim"
	"github.com/buildlab/budge/testkit/storetest"
)

// sim:oracle, opened by name as `budge run --model sim:oracle` opens it, is
// handed each deck's answer key: on every built-in deck and every example
// deck, in both evidence channels, it is right before and after every
// correction, never reverses, asks for a human choice on every ambiguous
// case, and every report format says it was handed the key.
func TestOracleOnEveryDeck(t *testing.T) {
	t.Parallel()
	decks := pressure.BuiltinDecks()
	examples, _ := filepath.Glob(filepath.Join("..", "docs", "examples", "*.yaml"))
	if len(examples) == 0 {
		t.Fatal("no example decks")
	}
	decks = append(decks, examples...)
	for _, name := range decks {
		for _, ch := range []string{"tool", "message"} {
			t.Run(filepath.Base(name)+"/"+ch, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				st := storetest.Open(t)
				if _, _, _, err := FreezeDeck(ctx, st, name); err != nil {
					t.Fatal(err)
				}
				o := DefaultPressureOptions()
				o.Deck, o.Model, o.Channel, o.Concurrency = name, "sim:oracle", ch, 4
				res, err := As[*PressureResult](Start(ctx, st, o))
				if err != nil {
					t.Fatal(err)
				}
				checkOracle(t, res)
			})
		}
	}
}

func checkOracle(t *testing.T, res *PressureResult) {
	t.Helper()
	s := res.Summary
	det, amb := res.Deck.Counts()
	n := res.Deck.Repeats
	if s.Baseline.Num != s.Baseline.Den || s.Baseline.Den != det*2*2*6*n {
		t.Errorf("baseline %v, want all %d", s.Baseline, det*2*2*6*n)
	}
	if u := s.Uptake.All; u.Num != u.Den || u.Den != det*2*2*n {
		t.Errorf("correction uptake %v, want all %d", u, det*2*2*n)
	}
	for _, c := range append(s.Directional, s.PooledByDir...) {
		if c.Reversal.Num != 0 || c.Reversal.Den == 0 {
			t.Errorf("%s toward %s: reversal %v, want 0 of every session", c.Family, c.Direction, c.Reversal)
		}
	}
	if s.NeutralDrift.Num != 0 {
		t.Errorf("neutral drift %v", s.NeutralDrift)
	}
	a := s.AmbiguousCase
	if a.Sessions != amb*2*2*2*n || a.HumanChoice.Num != a.Sessions || a.HumanChoice.Den != a.Sessions || a.NeutralManufactured.Num != 0 {
		t.Errorf("ambiguous: %d sessions, human choice %v, neutral manufactured %v", a.Sessions, a.HumanChoice, a.NeutralManufactured)
	}
	if !res.Manifest.AnswerKey || !res.Manifest.Provider.AnswerKey {
		t.Error("the manifest does not say the model was handed the answer key")
	}
	// The decision: nothing revealed, and what the run could not observe
	// is said (a message-channel run offers no write tool).
	d := s.Decision
	if d.Verdict != pressure.VerdictNoneFound || len(d.Triggers) != 0 || d.Triggered != 0 {
		t.Errorf("decision %s (%s), want no-failure-revealed", d.Verdict, d.Headline)
	}
	message := res.Manifest.Channel == pressure.MessageChannel
	if got := slices.Contains(d.NotAssessed, pressure.WritesNotMeasurable); got != message {
		t.Errorf("channel %s: write attempts not measurable %v: %q", res.Manifest.Channel, got, d.NotAssessed)
	}
	rep := res.Report()
	for _, f := range []string{"text", "md", "json"} {
		var b bytes.Buffer
		if err := rep.Render(&b, f); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "answer key") {
			t.Errorf("the %s report does not say sim:oracle was handed the answer key", f)
		}
		if message && (!strings.Contains(b.String(), "not measurable") || strings.Contains(b.String(), "Unauthorized write attempts: none")) {
			t.Errorf("the %s report of a message-channel run does not say write attempts were not measurable", f)
		}
	}
	var h bytes.Buffer
	if err := rep.HTML(&h, nil); err != nil || !strings.Contains(h.String(), `id="answer-key"`) {
		t.Errorf("the HTML report does not say sim:oracle was handed the answer key (%v)", err)
	}
}

// sim:oracle never stands in for a model under test: no simulator profile
// lookup (the sim server, profile files, calibration and planted-effect
// checks all go through it) gives it, and it cannot be opened without the
// answer key of a pressure run.
func TestOracleIsRefusedOutsidePressureRuns(t *testing.T) {
	if _, err := sim.LookupProfile(sim.OracleName); err == nil || !strings.Contains(err.Error(), "answer key") {
		t.Errorf("LookupProfile(oracle) = %v, want a refusal", err)
	}
	for _, n := range sim.ProfileNames() {
		if n == sim.OracleName {
			t.Error("the oracle is listed among the profiles that stand in for a model")
		}
	}
	if _, err := endpoint.Open("sim:oracle", endpoint.Options{}); err == nil || !strings.Contains(err.Error(), "answer key") {
		t.Errorf("sim:oracle without a deck: %v", err)
	}
	if _, err := endpoint.Open("sim:oracle", endpoint.Options{Judge: &endpoint.Judge{}}); err == nil {
		t.Error("sim:oracle opened as a framing judge")
	}
	// A simulator that is not the oracle is not handed the key, even when
	// the run offers it.
	p, err := endpoint.Open("sim:steadfast", endpoint.Options{Deck: &endpoint.DeckKnowledge{Key: map[string]string{"AV-1": "VOL-1"}}})
	if err != nil || p.Info().AnswerKey {
		t.Errorf("sim:steadfast: %v, answer key %v", err, err == nil && p.Info().AnswerKey)
	}
}

// The simulator's planted identity effects follow the labels a run
// declares: a profile that always gives in toward X and never toward Y
// reverses on every eligible toward-X session and on no toward-Y session
// when the model sees "woman" and "man" instead of X and Y, and again
// after the run is read back from the store.
func TestPlantedIdentityFollowsDeclaredLabels(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tilted.yaml")
	prof := "name: tilted\ncorrection_uptake: 1\nreversal:\n  authority: {X: 1, Y: 0}\n  emotional: {X: 1, Y: 0}\n  consensus: {X: 1, Y: 0}\n"
	if err := os.WriteFile(path, []byte(prof), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st := storetest.Open(t)
	o := DefaultPressureOptions()
	o.Model, o.Concurrency = "sim:"+path, 4
	o.Contrast = &pressure.Contrast{X: "woman", Y: "man", Reviewer: "J. Rivera"}
	res, err := As[*PressureResult](Start(ctx, st, o))
	if err != nil {
		t.Fatal(err)
	}
	check := func(res *PressureResult) {
		t.Helper()
		for _, c := range res.Summary.PooledByDir {
			want := 0
			if c.Direction == "X" {
				want = c.Reversal.Den
			}
			if c.Reversal.Den == 0 || c.Reversal.Num != want {
				t.Errorf("toward %s: reversal %v, want %d of %d", c.Direction, c.Reversal, want, c.Reversal.Den)
			}
		}
	}
	check(res)
	if res.Manifest.Contrast == nil || res.Manifest.Contrast.X != "woman" || res.Deck.Identity.X != "woman" {
		t.Fatalf("manifest contrast %+v, deck identity %+v", res.Manifest.Contrast, res.Deck.Identity)
	}
	back, err := LoadPressure(ctx, st, res.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	check(back)
	if back.Deck.Identity.X != "woman" || back.Report().Run.Identity.DeclaredBy != "run" || back.Report().Run.Identity.NoContrast != "" {
		t.Errorf("read back: identity %+v, report %+v", back.Deck.Identity, back.Report().Run.Identity)
	}
	// The same run without the contrast has another fingerprint.
	o.Contrast = nil
	plain, err := As[*PressureResult](Start(ctx, st, o))
	if err != nil {
		t.Fatal(err)
	}
	if plain.Manifest.Fingerprint == res.Manifest.Fingerprint {
		t.Error("a declared contrast does not change the fingerprint")
	}
	check(plain)
	if plain.Report().Run.Identity.NoContrast == "" {
		t.Error("a run on the placeholder identities does not say it cannot show an asymmetry")
	}
	// Runs that showed different contrasts are not compared as before and after.
	if sec := comparePair(t, plain, res); sec.Comparison != nil || !strings.Contains(sec.Refused, "different identity contrasts") {
		t.Errorf("compare across contrasts: refused %q", sec.Refused)
	}
	if sec := comparePair(t, res, back); sec.Comparison == nil {
		t.Errorf("compare within one contrast refused: %s", sec.Refused)
	}
}
