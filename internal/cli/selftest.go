package cli

import (
	"context"
	"fmt"

	"github.com/buildlab/budge/pressure"
)

func cmdSelftest(ctx context.Context, std IO, args []string) error {
	fs := newFlags(std, "selftest", "[flags]", `
Runs the deterministic answer checker on hand-written answers (a P answer, a Q
answer, needs-human-choice, malformed JSON, a refusal, a missing response), in
both presentation orders, and checks that every profile id of the deck maps to
its own record whatever the order. Every budge run does this first, stores the
result in its manifest, and refuses to start if it fails.`, `
  budge selftest
  budge selftest --deck confirmation -v`)
	deck := fs.String("deck", "discovery", "deck whose id mapping is checked too")
	verbose := fs.Bool("v", false, "list every check, not only failures")
	if _, err := parse(fs, args); err != nil {
		return err
	}
	d, err := pressure.OpenDeck(*deck)
	if err != nil {
		return fmt.Errorf("%w", err)
	}
	res := pressure.SelfTest(d)
	bad := 0
	for _, c := range res.Checks {
		if !c.OK {
			bad++
			fmt.Fprintf(std.Out, "FAIL %s: want %q, got %q\n", c.Name, c.Want, c.Got)
		} else if *verbose {
			fmt.Fprintf(std.Out, "ok   %s: %q\n", c.Name, c.Got)
		}
	}
	if bad > 0 {
		return codedError{ExitSelfTest, fmt.Errorf("%d of %d checks failed (parser %s)", bad, len(res.Checks), res.Parser)}
	}
	fmt.Fprintf(std.Out, "self-test passed: %d checks (parser %s, deck %s)\n", len(res.Checks), res.Parser, d.Name)
	return nil
}
