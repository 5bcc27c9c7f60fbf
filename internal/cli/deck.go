package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/buildlab/budge/pressure"
)

func cmdDeck(ctx context.Context, std IO, args []string) error {
	if len(args) == 0 || (args[0] != "check" && args[0] != "list") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprint(std.Out, deckUsage)
			return nil
		}
		fmt.Fprint(std.Err, deckUsage)
		return usageError{"deck needs a subcommand: check or list"}
	}
	if args[0] == "list" {
		for _, n := range pressure.BuiltinDecks() {
			d, err := pressure.OpenDeck(n)
			if err != nil {
				return err
			}
			det, amb := d.Counts()
			fmt.Fprintf(std.Out, "%-14s %-12s %-3s %d determinate + %d ambiguous cases, %d sessions  %s\n", n, d.Kind, d.Language, det, amb, len(pressure.Plan(d)), d.Title)
		}
		return nil
	}
	fs := newFlags(std, "deck check", "[NAME|PATH ...]", `
Checks decks before anything is run: every case's declared reference against
the deck's rule (before and after the correction), counterbalancing (half the
determinate cases P, half Q; both identity assignments and both orders are
crossed by budge), pressure messages that favour the less eligible profile and
carry no evidence, unique ids, and unknown fields. Every problem is reported at
once with file, line, field and case id, and the exit code is 2. Without
arguments every built-in deck is checked.`, `
  budge deck check
  budge deck check discovery
  budge deck check ./my-deck.yaml`)
	pos, err := parse(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		pos = pressure.BuiltinDecks()
	}
	failed := 0
	for _, name := range pos {
		d, err := pressure.OpenDeck(name)
		var probs pressure.Problems
		if errors.As(err, &probs) {
			failed++
			fmt.Fprintf(std.Err, "%s: %d problem(s)\n", name, len(probs))
			for _, p := range probs {
				fmt.Fprintln(std.Err, "  "+p.Error())
			}
			continue
		}
		if err != nil {
			return usageError{err.Error()}
		}
		printDeck(std, d)
	}
	if failed > 0 {
		return codedError{ExitInvalid, fmt.Errorf("%d deck(s) failed the check", failed)}
	}
	return nil
}

const deckUsage = `Usage:
  budge deck check [NAME|PATH ...]   check decks against the rule and the design
  budge deck list                    list the built-in decks

Run "budge deck check --help" for details.
`

func printDeck(std IO, d *pressure.Deck) {
	det, amb := d.Counts()
	rule := pressure.Rules[d.Rule]
	fmt.Fprintf(std.Out, "%s (%s): %s deck, language %s, policy %s, rule %s, sha256 %s\n", d.Name, d.Path, d.Kind, d.Language, d.PolicyVersion, d.Rule, d.Hash[:12])
	nP, nQ := 0, 0
	for _, c := range d.Cases {
		after := ""
		if c.Update != nil {
			after = "; after correction " + rule.Describe(*c.Update)
		}
		fmt.Fprintf(std.Out, "  ok  %-20s %-11s %s%s\n", c.ID, c.Kind, rule.Describe(c.Records), after)
		switch c.Ref {
		case "P":
			nP++
		case "Q":
			nQ++
		}
	}
	specs := pressure.Plan(d)
	dS, aS := 0, 0
	for _, s := range specs {
		if s.Kind == pressure.Determinate {
			dS++
		} else {
			aS++
		}
	}
	fmt.Fprintf(std.Out, "  cases: %d determinate (%d P, %d Q) + %d ambiguous; crossed with assignments I/II and orders P-first/Q-first; %d repeats\n", det, nP, nQ, amb, d.Repeats)
	fmt.Fprintf(std.Out, "  sessions: %d determinate + %d ambiguous = %d\n", dS, aS, len(specs))
}

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
