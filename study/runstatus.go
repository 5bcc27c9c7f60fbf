package study

import (
	"context"
	"fmt"

	"github.com/buildlab/budge/store"
)

// RunStatus is a run's status as a list of runs shows it: a run stored as
// running whose process is gone (no lease, or a stale one; for a run of
// workers, no live worker) says so, so that it is resumed rather than
// waited for.
func RunStatus(ctx context.Context, st *store.Store, r store.Run) (string, error) {
	if r.Status != store.RunRunning {
		return r.Status, nil
	}
	if lease, held, err := st.RunLease(ctx, r.ID); err != nil || held {
		// A run on a local store is worked under its lease.
		if err != nil || !lease.Stale {
			return r.Status, err
		}
		return "stopped", nil
	}
	if n, err := st.LiveWorkers(ctx, r.ID); err != nil || n > 0 {
		return fmt.Sprintf("running, %d worker(s)", n), err
	}
	if cells, err := st.HasCells(ctx, r.ID); err != nil || cells {
		// Detached, or its workers are gone: budge worker RUN goes on.
		return "waiting for worker", err
	}
	return "stopped", nil
}
