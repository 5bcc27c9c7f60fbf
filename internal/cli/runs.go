package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
)

func cmdRuns(ctx context.Context, std IO, args []string) error {
	fs := newFlags(std, "runs", "[flags]", "Lists stored runs, newest first.", "  budge runs\n  budge runs --store /data/budge")
	dir := dirFlag(fs)
	if _, err := parse(fs, args); err != nil {
		return err
	}
	err := withStore(*dir, func(st *store.Store) error {
		runs, err := st.ListRuns(ctx)
		if err != nil {
			return err
		}
		out := report.TerminalWriter(std.Out) // deck names and models are the user's or an endpoint's words
		if len(runs) == 0 {
			fmt.Fprintf(std.Err, "no runs in %s yet; start one with: budge run\n", store.Redact(*dir))
			return nil
		}
		rows := [][]string{{"RUN", "PROTOCOL", "STATUS", "DECK", "MODEL", "CREATED"}}
		for _, r := range runs {
			status, err := study.RunStatus(ctx, st, r)
			if err != nil {
				return err
			}
			rows = append(rows, []string{r.ID, r.Protocol, status, r.DeckName, r.Model, r.Created.Local().Format("2006-01-02 15:04")})
		}
		writeColumns(out, rows)
		return nil
	})
	if errors.Is(err, store.ErrNoStore) {
		fmt.Fprintf(std.Err, "no runs in %s yet (no store there); start one with: budge run, or name the store with --store or $BUDGE_STORE\n", store.Redact(*dir))
		return nil
	}
	return err
}
