package study

// End-to-end behaviour on the built-in Chinese discovery deck and on a
// user-written deck with explicit references. The Chinese deck has the
// discovery design (8 determinate + 2 ambiguous cases, 416 sessions), so the
// helpers and tolerances of behaviour_test.go apply to it unchanged.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/provider/sim"
	"github.com/buildlab/budge/testkit/storetest"
)

func useDeck(name, lang string) func(*PressureOptions) {
	return func(o *PressureOptions) { o.Deck, o.Language = name, lang }
}

// TestChineseDeckPlantedAsymmetry: the default profile's planted authority
// asymmetry (toward X 0.30, toward Y 0.10) and the absence of any gap in the
// other families are recovered from the Chinese deck, through the
// simulator's reading of Chinese messages and of identities after a
// full-width colon, within the tolerances argued in checkDirectionalRates.
func TestChineseDeckPlantedAsymmetry(t *testing.T) {
	t.Parallel()
	prof := simProfile(t, "default")
	results := runDiscoverySeeds(t, prof, useDeck("", "zh"))
	for _, res := range results {
		if res.Deck.Name != "discovery-zh" || res.Summary.Language != "zh" {
			t.Fatalf("--lang zh ran deck %s (%s)", res.Deck.Name, res.Summary.Language)
		}
	}
	p := poolRates(t, results)
	checkDirectionalRates(t, prof, p)
	checkDiscordantPairs(t, p, "authority", true)
	checkDiscordantPairs(t, p, "emotional", false)
	checkDiscordantPairs(t, p, "consensus", false)
}

// TestChineseDeckSteadfast: on the Chinese deck the steadfast profile takes
// all 64 corrections, never reverses, answers every determinate case
// correctly and every ambiguous one with needs-human-choice; and the run
// says it is in Chinese in the manifest, the summary, the report (every
// format) and the export.
func TestChineseDeckSteadfast(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t)
	res := runDiscovery(t, st, sim.New(simProfile(t, "steadfast")), 4, useDeck("discovery-zh", ""))
	s := res.Summary
	checkSteadfast(t, s)
	for _, c := range append(append([]pressure.DirectionCell{}, s.Directional...), s.PooledByDir...) {
		if c.Reversal.Num != 0 || c.Reversal.Den == 0 {
			t.Errorf("cell %s toward %s: %v, want 0 reversals", c.Family, c.Direction, c.Reversal)
		}
	}
	if s.AmbiguousCase.HumanChoice.Num != discoveryAmbiguous || s.NeutralDrift.Num != 0 {
		t.Errorf("ambiguous human choice %v, neutral drift %v", s.AmbiguousCase.HumanChoice, s.NeutralDrift)
	}
	if s.Decision.Verdict != pressure.VerdictNoneFound {
		t.Errorf("verdict %s: %v", s.Decision.Verdict, s.Decision.Reasons)
	}

	rep := res.Report()
	if rep.Run.Language != "zh" || res.Manifest.Deck.Language != "zh" || s.Language != "zh" || rep.Run.Deck != "discovery-zh" {
		t.Errorf("language: report %q, manifest %q, summary %q (deck %s)", rep.Run.Language, res.Manifest.Deck.Language, s.Language, rep.Run.Deck)
	}
	var js bytes.Buffer
	if err := rep.Render(&js, "json"); err != nil {
		t.Fatal(err)
	}
	var parsed struct {
		Run struct {
			Language string `json:"language"`
		} `json:"run"`
	}
	if err := json.Unmarshal(js.Bytes(), &parsed); err != nil || parsed.Run.Language != "zh" {
		t.Errorf("report json run.language = %q (%v)", parsed.Run.Language, err)
	}
	var text bytes.Buffer
	rep.Render(&text, "text")
	if !strings.Contains(text.String(), "deck discovery-zh (discovery, zh,") {
		t.Errorf("text report header does not name the language:\n%s", text.String()[:300])
	}
	for _, o := range outcomesOf(t, res)[:5] {
		if rec := pressure.Export(res.Run.ID, res.Manifest.Fingerprint, res.Deck, o, ""); rec.Language != "zh" {
			t.Errorf("export language %q", rec.Language)
		}
	}
}

// TestRunLanguageSelection: Language picks its own built-in deck, a deck in
// another language is refused, and a language without a deck is an input
// error that names the languages there are.
func TestRunLanguageSelection(t *testing.T) {
	st := storetest.Open(t)
	for _, tc := range []struct{ deck, lang, msg string }{
		{"confirmation", "zh", `deck confirmation is written in "en", not "zh"`},
		{"discovery-zh", "en", `written in "zh", not "en"`},
		{"", "fr", `no built-in deck in language "fr" (built in: en, zh)`},
	} {
		o := DefaultPressureOptions()
		o.Deck, o.Language = tc.deck, tc.lang
		_, err := As[*PressureResult](Start(context.Background(), st, o))
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("deck %q, language %q: %v; want ErrInvalid mentioning %q", tc.deck, tc.lang, err, tc.msg)
		}
	}
	if runs, err := st.ListRuns(context.Background()); err != nil || len(runs) != 0 {
		t.Errorf("refused runs left %d runs in the store (%v)", len(runs), err)
	}
}

// TestExplicitDeckEndToEnd: a user-written deck for another decision (a
// loaner tablet), with explicit references and records made of facts, runs
// every planned session, is stored and re-scored identically, and its
// summary and every report format carry the warning that no deterministic
// rule verified its references.
func TestExplicitDeckEndToEnd(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t)
	o := DefaultPressureOptions()
	o.Deck = filepath.Join("..", "docs", "examples", "tablet-loan.yaml")
	o.Concurrency = 4
	res, err := As[*PressureResult](Start(context.Background(), st, o))
	if err != nil {
		t.Fatal(err)
	}
	const planned = 2*2*2*6 + 1*2*2*2
	if c := res.Manifest.Counts; c.Planned != planned || c.Complete != planned || res.Summary.Sessions != planned {
		t.Errorf("counts %+v, summary %d sessions; want %d complete", c, res.Summary.Sessions, planned)
	}
	if res.Manifest.Deck.Rule != pressure.ExplicitRule {
		t.Errorf("manifest rule %q", res.Manifest.Deck.Rule)
	}
	if len(res.Summary.Warnings) != 2 || !strings.Contains(res.Summary.Warnings[0], "no deterministic rule verified") || res.Summary.Warnings[1] != pressure.ScopeNote {
		t.Fatalf("summary warnings %v", res.Summary.Warnings)
	}
	// The stored registry showed the deck's facts, not empty sessions.
	stored, err := st.Sessions(context.Background(), res.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	sawFacts := false
	for _, m := range stored[0].Messages {
		if m.Name == pressure.ToolAvailability {
			sawFacts = strings.Contains(m.Content, `"facts":{"own_tablet":`) && !strings.Contains(m.Content, "can_attend")
		}
	}
	if !sawFacts {
		t.Errorf("%s: no tool result showing the records' facts", stored[0].ID)
	}
	again, err := LoadPressure(context.Background(), st, res.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(again.Summary.Warnings, "|") != strings.Join(res.Summary.Warnings, "|") || again.Summary.Baseline.Counts() != res.Summary.Baseline.Counts() {
		t.Errorf("re-scoring from the store changed the summary: %v vs %v", again.Summary.Warnings, res.Summary.Warnings)
	}
	for _, format := range []string{"text", "md", "json"} {
		var b bytes.Buffer
		if err := again.Report().Render(&b, format); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "no deterministic rule verified") {
			t.Errorf("%s report lacks the explicit-reference warning", format)
		}
	}
}
