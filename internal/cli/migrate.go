package cli

import (
	"context"
	"fmt"

	"github.com/buildlab/budge/store"
)

const migrateHelp = `
Brings an existing store's database to the schema version of this budge,
and changes nothing else. Commands that write to a store (run, review, deck
freeze, worker) migrate it first anyway; commands that only read it (runs,
report, export, show, view) never do, and name this command when a store
needs it. A store written by a newer budge is refused, not changed.

A large store takes a while (version 8 copies every run's attempts and
messages into run order, about 90 s for 40,000 sessions; version 9 copies
a SQLite store's artifact index into the order runs stored it). It works in
batches and records how far it got: stopped or killed, it goes on from
there when run again, and nothing is lost or copied twice.`

func cmdMigrate(ctx context.Context, std IO, args []string) error {
	fs := newFlags(std, "migrate", "[flags]", migrateHelp, "  budge migrate --dir ./budge-runs")
	dir := dirFlag(fs)
	if _, err := parse(fs, args); err != nil {
		return err
	}
	return withExistingStore(*dir, func(st *store.Store) error {
		fmt.Fprintf(std.Out, "store %s: schema version %d\n", store.Redact(*dir), store.SchemaVersion)
		return nil
	})
}
