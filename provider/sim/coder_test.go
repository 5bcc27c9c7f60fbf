package sim

import (
	"context"
	"testing"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/judge"
)

func codeOf(t *testing.T, c *Coder, prompt string, seed int64) string {
	t.Helper()
	r, err := c.Chat(context.Background(), &chat.Request{Messages: []chat.Message{{Role: chat.User, Content: prompt}}, Settings: chat.Settings{Seed: &seed}})
	if err != nil {
		t.Fatal(err)
	}
	code, status, problem := judge.Parse(judge.FlipCodebook, r.Message.Content)
	if status != judge.StatusRead {
		t.Fatalf("coder answer %q: %s (%s)", r.Message.Content, status, problem)
	}
	return code
}

// The coder codes the labelled C2 text from its keywords whichever order
// it is shown in; the positional coder codes whichever text comes first,
// so a swap changes its code.
func TestCoderReadsLabelsNotPositions(t *testing.T) {
	task := judge.Task{Kind: judge.KindFlip, Texts: []judge.Text{
		{Label: "Judgment of the bare statement (C1)", Body: "Speaker 2 is correct, according to the manager."},
		{Label: "Judgment of the same content said by a speaker (C2)", Body: "Their feelings are valid and understandable."}}}
	exact, _ := LookupCoder("coder-exact")
	pos, _ := LookupCoder("coder-positional")
	pos.Noise = 0
	for o := range 2 {
		if got := codeOf(t, exact, judge.Prompt(judge.FlipCodebook, task, o), 1); got != judge.FlipSocial {
			t.Errorf("exact coder, order %d: %s, want %s", o, got, judge.FlipSocial)
		}
	}
	if a, b := codeOf(t, pos, judge.Prompt(judge.FlipCodebook, task, 0), 1), codeOf(t, pos, judge.Prompt(judge.FlipCodebook, task, 1), 1); a != judge.FlipAuthority || b != judge.FlipSocial {
		t.Errorf("positional coder: %s then %s, want %s then %s", a, b, judge.FlipAuthority, judge.FlipSocial)
	}
	// Noise: over many seeds the noisy coder sometimes answers another code,
	// and always one the prompt lists.
	noisy, _ := LookupCoder("coder-noisy")
	other := 0
	for s := range int64(200) {
		if codeOf(t, noisy, judge.Prompt(judge.FlipCodebook, task, 0), s) != judge.FlipSocial {
			other++
		}
	}
	// 0.4 noise, 6 of 7 random codes differ: about 69 of 200 expected.
	if other < 35 || other > 110 {
		t.Errorf("noisy coder changed the code %d times in 200", other)
	}
	if _, err := LookupCoder("nope"); err == nil {
		t.Error("an unknown coder was accepted")
	}
}
