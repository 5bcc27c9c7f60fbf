package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/buildlab/budge/provider/endpoint"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
)

const workerAbout = `Advance runs whose sessions are cells in a shared store, as one of any
number of workers on any number of machines. A worker claims a few cells at a
time (SELECT ... FOR UPDATE SKIP LOCKED on PostgreSQL), runs them with the
run's own model, seed and settings, and stores each session in the
transaction that marks its cell done. It renews the lease on the cells it
holds every few seconds; a worker that dies loses them when the lease runs
out, and another worker runs them again as their next incarnation (the lost
one stays on record as an interrupted attempt). Every cell is stored once.
The worker that finds every cell done scores the run.

With RUN arguments the worker advances those runs, one after another, and
exits when they are done. Without, it advances every run of the store that
has cells left, oldest first; --follow keeps it looking for new ones.

budge run --store postgres://... and budge framing run --store postgres://...
are workers too, and --detach stores a new run without running it.`

const workerExamples = `  export BUDGE_STORE=postgres://budge@db.internal/budge
  budge run --deck discovery --model openai:gpt-4o-mini --detach
  budge worker latest --concurrency 64          # on each machine
  budge worker --follow                         # serve every run, new ones too
  budge report latest`

// cmdWorker is budge worker.
func cmdWorker(ctx context.Context, std IO, args []string) error {
	fs := newFlags(std, "worker", "[RUN...] [flags]", workerAbout, workerExamples)
	dir := dirFlag(fs)
	concurrency := fs.Int("concurrency", 0, "sessions in flight at once in this worker (default: the run's)")
	follow := fs.Bool("follow", false, "without RUN: keep looking for runs with cells left instead of exiting when there are none")
	poll := fs.Duration("poll", 5*time.Second, "with --follow: how often to look for new runs")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	lease := fs.Duration("lease", store.DefaultLeaseTimeout, "how long the cells this worker holds stay its own without a heartbeat (it renews them six times as often): after it dies, other workers take its cells over once this has passed")
	n := addEndpointFlags(fs)
	n.worker = true
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if *lease < time.Second {
		return usageError{"--lease must be at least 1s"}
	}
	if *follow && len(pos) > 0 {
		return usageError{"--follow serves every run of the store; drop the RUN arguments, or --follow"}
	}
	var c study.Control
	if err := n.apply(fs, nil, &c.NetOptions, concurrency, *dir, endpoint.FromOS()); err != nil {
		return err
	}
	c.Concurrency = *concurrency
	c.RetryFailed = *n.retryFailed
	st, err := store.OpenLocation(ctx, *dir, false)
	if err != nil {
		return err
	}
	defer st.Close()
	st.LeaseTimeout, st.LeaseRenew = *lease, *lease/6
	hard, drain, stop := runInterrupts(ctx, std)
	defer stop()
	c.Drain = drain
	c.Notice = noticePrinter(std)
	if !*quiet {
		c.Progress = progressPrinter(std)
	}
	w := workerLoop{std: std, st: st, c: c, dir: *dir}
	if len(pos) > 0 {
		for _, ref := range pos {
			if err := w.one(hard, ref); err != nil {
				return err
			}
		}
		return nil
	}
	for {
		ids, err := st.OpenRuns(hard)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if err := w.one(hard, id); err != nil {
				return err
			}
		}
		if !*follow || drain.Err() != nil {
			if len(ids) == 0 && !*follow {
				fmt.Fprintln(std.Err, "no run has cells left to do")
			}
			return nil
		}
		select {
		case <-drain.Done():
			return nil
		case <-time.After(*poll):
		}
	}
}

// workerLoop advances runs one at a time.
type workerLoop struct {
	std IO
	st  *store.Store
	c   study.Control
	dir string
}

// one advances one run until it is done and prints how it ended.
func (w workerLoop) one(ctx context.Context, ref string) error {
	c := w.c
	c.Started = func(id string) { fmt.Fprintln(w.std.Out, "run: "+id) }
	res, err := study.Work(ctx, w.st, ref, c)
	if c.Progress != nil {
		fmt.Fprintln(w.std.Err)
	}
	if err != nil {
		if errors.Is(err, study.ErrWorkerStopped) {
			return codedError{ExitIncomplete, store.RedactError(err, w.dir)}
		}
		return store.RedactError(err, w.dir)
	}
	run, h := res.Stored(), res.Head()
	fmt.Fprintf(w.std.Out, "run %s: %s, %d of %d sessions stored (%d failed), %d worker(s)\n",
		run.ID, run.Status, h.Counts.Complete+h.Counts.Failed, h.Counts.Planned, h.Counts.Failed, len(h.Net.Workers))
	return nil
}
