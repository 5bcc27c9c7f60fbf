package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
)

func deckFreeze(ctx context.Context, std IO, args []string) error {
	fs := newFlags(std, "deck freeze", "NAME|FILE [--dir DIR]", `
Freezes a deck before it is used: checks it, then records its sha256, a
snapshot of its content and the time in the store. A run on a deck that was
not frozen before it is labelled exploratory in its manifest and report. A
confirmation deck must be frozen before its first run: budge refuses to run
one that is not. Any change to a frozen deck makes it a different deck (a new
hash) that is not frozen.

Freeze a confirmation deck once it is written and before any revision is
evaluated on it; budge then counts the revisions (distinct fingerprints:
model, prompt, settings) run on it, and its reports warn when there is more
than one.`, `
  budge deck freeze confirmation
  budge deck freeze ./my-confirmation-deck.yaml
  budge run --deck confirmation`)
	dir := dirFlag(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"usage: budge deck freeze NAME|FILE"}
	}
	return withStore(*dir, func(st *store.Store) error {
		rec, already, deck, err := study.FreezeDeck(ctx, st, pos[0])
		if err != nil {
			return err
		}
		if already {
			fmt.Fprintf(std.Out, "deck %s (%s deck, sha256 %s) was already frozen at %s; nothing changed\n", deck.Name, deck.Kind, deck.Hash[:12], rec.FrozenAt.Format(time.RFC3339))
			return nil
		}
		fmt.Fprintf(std.Out, "frozen: deck %s (%s deck, sha256 %s) at %s in %s\n", deck.Name, deck.Kind, deck.Hash, rec.FrozenAt.Format(time.RFC3339), *dir)
		return nil
	})
}
