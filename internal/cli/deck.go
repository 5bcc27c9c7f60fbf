package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
)

var deckSubcommands = []string{"check", "list", "init", "schema", "freeze"}

func cmdDeck(ctx context.Context, std IO, args []string) error {
	if len(args) == 0 || !slices.Contains(deckSubcommands, args[0]) {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprint(std.Out, deckUsage)
			return nil
		}
		fmt.Fprint(std.Err, deckUsage)
		return usageError{"deck needs a subcommand: " + strings.Join(deckSubcommands, ", ")}
	}
	// Decks are the user's files: what check and list print of them
	// reaches a terminal escaped.
	shown := IO{In: std.In, Out: report.TerminalWriter(std.Out), Err: report.TerminalWriter(std.Err)}
	switch args[0] {
	case "list":
		return deckList(shown)
	case "init":
		return deckInit(std, args[1:])
	case "schema":
		return deckSchema(std, args[1:])
	case "freeze":
		return deckFreeze(ctx, std, args[1:])
	}
	return deckCheck(shown, args[1:])
}

func deckCheck(std IO, args []string) error {
	fs := newFlags(std, "deck check", "[NAME|FILE|DIR ...]", deckCheckAbout, deckCheckExamples)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		pos = pressure.BuiltinDecks()
	}
	var names []string
	for _, arg := range pos {
		paths, skipped, err := pressure.DeckPaths(arg)
		if err != nil {
			return usageError{err.Error()}
		}
		for _, s := range skipped {
			fmt.Fprintf(std.Err, "%s: skipped, not a deck file (no format: %s, no cases: key)\n", s, pressure.DeckFormat)
		}
		names = append(names, paths...)
	}
	failed := 0
	for _, name := range names {
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

const deckCheckAbout = `
Checks decks before anything is run: every case's declared reference against
the deck's rule (before and after the correction), counterbalancing (half the
determinate cases P, half Q; both identity assignments and both orders are
crossed by budge), pressure messages that favour the less eligible profile,
name it and carry no evidence (English and Chinese availability words, record
ids, the deck's evidence.terms), a neutral follow-up that names no one, unique
ids, missing fields and unknown fields. Every problem is reported at once with
file, line, field and case id, and the exit code is 2. A folder means every
deck file in it and in its subfolders (hidden ones skipped): every *.yaml or
*.yml file with format: budge/pressure-deck/v1 or a cases: key; other YAML
files are named as skipped. Without arguments every built-in deck is checked.

A deck with rule "explicit" declares its references itself: check then warns
that no deterministic rule verified them, and so does every report of a run
on it.`

const deckCheckExamples = `
  budge deck check
  budge deck check discovery-zh
  budge deck check ./my-deck/deck.yaml
  budge deck check docs/examples/        # every deck file in it and in its subfolders`

const deckUsage = `Usage:
  budge deck check [NAME|FILE|DIR ...]   check decks against the rule and the design
  budge deck list                        list the built-in decks
  budge deck init DIR [--lang en|zh]     write a commented starting deck and the schema into DIR
  budge deck schema                      print the JSON Schema of deck files
  budge deck freeze NAME|FILE|DIR        record the deck's hash and the time in the store before it is used

Run "budge deck <subcommand> --help" for details.
`

func deckList(std IO) error {
	for _, n := range pressure.BuiltinDecks() {
		d, err := pressure.OpenDeck(n)
		if err != nil {
			return err
		}
		det, amb := d.Counts()
		fmt.Fprintf(std.Out, "%-16s %s deck, %s, %d determinate + %d ambiguous cases, %d sessions\n", n, d.Kind, d.Language, det, amb, len(pressure.Plan(d)))
		fmt.Fprintf(std.Out, "%-16s %s\n", "", d.Title)
	}
	return nil
}

func deckInit(std IO, args []string) error {
	fs := newFlags(std, "deck init", "DIR [--lang en|zh]", `
Writes a commented starting deck (DIR/deck.yaml) and the JSON Schema of deck
files (DIR/deck.schema.json, which the deck names so that editors validate it
as you type). The starting deck passes "budge deck check" as it is: two
determinate cases, one ambiguous case, the availability rule. Edit it into
your own cases and check it after every change. Existing files are never
overwritten.

A Chinese deck (--lang zh) is written in Chinese from the start: write each
language's cases directly in that language instead of translating a deck.`, `
  budge deck init ./my-deck
  budge deck init ./my-deck-zh --lang zh
  budge deck check ./my-deck`)
	lang := fs.String("lang", pressure.DefaultLanguage, "language of the starting deck: "+strings.Join(pressure.StarterLanguages(), " or "))
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"usage: budge deck init DIR [--lang en|zh]"}
	}
	written, err := pressure.InitDeck(pos[0], *lang)
	if err != nil {
		return usageError{err.Error()}
	}
	for _, p := range written {
		fmt.Fprintln(std.Out, "wrote "+p)
	}
	fmt.Fprintf(std.Out, "next: edit %s, then run: budge deck check %s\n", written[0], pos[0])
	fmt.Fprintln(std.Out, strings.ToUpper(pressure.ScopeNote[:1])+pressure.ScopeNote[1:]+".")
	return nil
}

func deckSchema(std IO, args []string) error {
	fs := newFlags(std, "deck schema", "[-o FILE]", `
Prints the JSON Schema (draft 2020-12) of deck files, generated from budge's
deck types: every key, which are required, the allowed values, and a
description of each. Point your editor at it to validate a deck as you write
it (budge deck init writes it beside the starting deck). "budge deck check"
remains the authority: it also checks the rule, the balance and the wording.`, `
  budge deck schema > deck.schema.json
  budge deck schema -o deck.schema.json`)
	out := fs.String("o", "", "write to this file instead of stdout")
	if pos, err := parse(fs, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", pos[0])}
	}
	return writeOut(std, *out, func(w io.Writer) error {
		_, err := w.Write(pressure.Schema())
		return err
	})
}

func printDeck(std IO, d *pressure.Deck) {
	det, amb := d.Counts()
	fmt.Fprintf(std.Out, "%s (%s): %s deck, language %s\n", d.Name, d.Path, d.Kind, d.Language)
	fmt.Fprintf(std.Out, "  policy %s, rule %s, sha256 %s\n", d.PolicyVersion, d.Rule, d.Hash[:12])
	nP, nQ := 0, 0
	for _, c := range d.Cases {
		fmt.Fprintf(std.Out, "  ok  %-20s %-11s %s\n", c.ID, c.Kind, d.Explain(c.Records, c.Ref))
		if c.Update != nil {
			fmt.Fprintf(std.Out, "      %-20s %-11s after correction: %s\n", "", "", d.Explain(*c.Update, c.RefAfter))
		}
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
	fmt.Fprintf(std.Out, "  cases: %d determinate (%d P, %d Q) + %d ambiguous; %d repeats\n", det, nP, nQ, amb, d.Repeats)
	fmt.Fprintln(std.Out, "  each crossed with assignments I/II and orders P-first/Q-first")
	fmt.Fprintf(std.Out, "  sessions: %d determinate + %d ambiguous = %d\n", dS, aS, len(specs))
	for _, w := range d.Warnings() {
		fmt.Fprint(std.Out, wrapText("  WARNING "+w.Error(), "    "))
	}
	if why := d.Identity.NoIdentityContrast(); why != "" {
		fmt.Fprint(std.Out, wrapText(fmt.Sprintf("  NOTE %s:%d: identity: %s", d.Path, d.Line("$.identity"), why), "    "))
	}
}

func deckFreeze(ctx context.Context, std IO, args []string) error {
	fs := newFlags(std, "deck freeze", "NAME|FILE|FOLDER [--store DIR|URL]", `
Freezes a deck before it is used: checks it, then records its sha256, a
snapshot of its content and the time in the store. A run on a deck that was
not frozen before it is labelled exploratory in its manifest and report. A
confirmation deck must be frozen before its first run: budge refuses to run
one that is not. Any change to a frozen deck makes it a different deck (a new
hash) that is not frozen.

Freeze a confirmation deck once it is written and before any revision is
evaluated on it; budge then counts the revisions (distinct fingerprints:
model, prompt, settings) run on it, and its reports warn when there is more
than one; budge compare warns when revisions other than the pair compared
were run on it, or when a deck of the same name was frozen with other
content (revised after freezing). A folder stands for the one deck file in
it.`, `
  budge deck freeze confirmation
  budge deck freeze ./my-deck/deck.yaml
  budge deck freeze ./my-deck/                  # the one deck file in the folder
  budge run --deck confirmation`)
	dir := dirFlag(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"usage: budge deck freeze NAME|FILE|FOLDER"}
	}
	return withNewStore(*dir, func(st *store.Store) error {
		rec, already, deck, err := study.FreezeDeck(ctx, st, pos[0])
		if err != nil {
			return err
		}
		if already {
			fmt.Fprintf(std.Out, "deck %s (%s deck, sha256 %s) was already frozen at %s; nothing changed\n", deck.Name, deck.Kind, deck.Hash[:12], rec.FrozenAt.Format(time.RFC3339))
			return nil
		}
		fmt.Fprintf(std.Out, "frozen: deck %s (%s deck, sha256 %s) at %s in %s\n", deck.Name, deck.Kind, deck.Hash, rec.FrozenAt.Format(time.RFC3339), store.Redact(*dir))
		return nil
	})
}
