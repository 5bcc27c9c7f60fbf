package study

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/runner"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study/stack"
)

// Every run is advanced by workers: its planned sessions are cells
// (store.Worker), which a worker claims a few at a time, runs and stores.
// budge run is a new run's first worker, a resume is a worker of the run,
// and budge worker joins one. On a shared store (PostgreSQL) any number of
// processes on any number of machines work on a run at once; on a local
// store (SQLite) one at a time, under the run's lease. The run is the same
// run: the same plan, seeds and settings, so its measures equal those of
// one process running it alone. The worker that finds every cell done
// scores the run; the others wait for it and read the result.

// workerPoll is how often a worker with nothing to claim looks again while
// other workers still hold cells (one of them may stop, and its cells
// come back once its lease runs out).
const workerPoll = 500 * time.Millisecond

// localClaim is how many cells the one worker of a run on a local store
// claims at a time, at the least.
const localClaim = 128

// maxClaim is how many cells a worker claims at a time at the most. A
// claim returns its cells' ids at once; a batch run's concurrency is its
// whole wave, and claiming a million cells in one go held about 100 MB of
// them while the first pass began (bench/RESULTS.md, Batch). The runner
// takes jobs as it starts them, so the next claim comes when it needs it.
const maxClaim = 4096

// ErrWorkerStopped is returned by Work when the worker stopped before the
// run was done (Ctrl-C, an outage, the cost limit): the cells it held went
// back to the run for other workers, or a later one.
var ErrWorkerStopped = errors.New("the worker stopped before the run was done")

// Start makes a new run of a plan with its cells, and works on it as its
// first worker (Work): the result is scored from what was stored. On a
// shared store (PostgreSQL) other processes may join it.
func Start(ctx context.Context, st *store.Store, pl Plan) (Result, error) {
	p, s, err := newRun(ctx, st, pl)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	ctx, release, err := exclusive(ctx, st, p.head())
	if err != nil {
		return nil, err
	}
	defer release()
	run, err := st.GetRun(ctx, p.head().RunID)
	if err != nil {
		return nil, err
	}
	return work(ctx, st, pl.control(), run, p, s, nil)
}

// Detach makes a new run of a plan and its cells, and returns its id
// without running it: workers (Work) advance it.
func Detach(ctx context.Context, st *store.Store, pl Plan) (string, error) {
	p, s, err := newRun(ctx, st, pl)
	if err != nil {
		return "", err
	}
	s.Close()
	id := p.head().RunID
	if c := pl.control(); c.Started != nil {
		c.Started(id)
	}
	return id, nil
}

// newRun checks a plan (the model, the price and --max-cost) and stores
// the new run with its cells, its cost limit and its pace.
func newRun(ctx context.Context, st *store.Store, pl Plan) (protocol, *stack.Stack, error) {
	c := pl.control()
	if c.Concurrency < 1 {
		return nil, nil, fmt.Errorf("%w: concurrency must be at least 1", ErrInvalid)
	}
	p, prov, err := pl.prepare(ctx, st)
	if err != nil {
		return nil, nil, err
	}
	if err := preflight(ctx, c, prov); err != nil {
		return nil, nil, err
	}
	h := p.head()
	if c.Batch {
		h.Net.Batch = &BatchInfo{Batch: report.Batch{Price: "no price (none in the config)"}}
		h.Net.Batch.KeepFiles = c.KeepBatchFiles
	}
	s, save, err := buildStack(ctx, st, c, p, prov, allOf(plannedLen(p)), true)
	if err != nil {
		return nil, nil, err
	}
	h.Fingerprint = p.fingerprint()
	run, source, content := runRow(p)
	cells := cellsOf(p, func(int, string) (int, bool) { return 0, true })
	if err := st.CreateRunCells(ctx, run, source, content, cells); err != nil {
		s.Close()
		return nil, nil, err
	}
	if err := save(ctx); err != nil {
		s.Close()
		return nil, nil, err
	}
	return p, s, nil
}

// Resume continues an interrupted run of any protocol in place: it works
// on it (Work). Sessions already stored (complete, or failed for good) are
// not sent again; every other planned session runs with the recorded seed,
// settings and schedule as the next incarnation of whatever attempts
// earlier runs left, so no stored observation is overwritten. The run is
// then scored from the store, old sessions and new together: with a
// deterministic model the measures equal those of an uninterrupted run.
// This holds after kill -9 at any moment, because a session is stored
// whole or not at all.
//
// From c it takes the provider or the endpoint options (a new base URL is
// allowed and recorded), concurrency, the cost limit, the cache, progress
// and the callbacks. The model, seed, settings and retry policy are the
// run's own.
func Resume(ctx context.Context, st *store.Store, ref string, c Control) (Result, error) {
	return Work(ctx, st, ref, c)
}

// Work advances a stored run as one of its workers, until no cell is left
// to claim, and returns the scored run: scored by this worker when it is
// the one to find every cell done, otherwise by the worker that did. A run
// made before it had cells gets them first (its sessions not yet stored).
// From c it takes what Resume takes.
func Work(ctx context.Context, st *store.Store, ref string, c Control) (Result, error) {
	run, p, err := openAskable(ctx, st, ref)
	if err != nil {
		return nil, err
	}
	h := p.head()
	if h.Net.ReplayOf != "" {
		return nil, fmt.Errorf("%w: run %s is a replay; replay %s again instead of resuming it", ErrInvalid, run.ID, h.Net.ReplayOf)
	}
	if c.Concurrency < 1 {
		c.Concurrency = h.Concurrency // the run's own
	}
	ctx, release, err := exclusive(ctx, st, h)
	if err != nil {
		return nil, err
	}
	defer release()
	var retried []string
	if c.RetryFailed {
		if retried, err = transportFailed(ctx, st, run.ID); err != nil {
			return nil, err
		}
	}
	todo, err := remaining(ctx, st, run.ID, plannedLen(p))
	if err != nil {
		return nil, err
	}
	if todo.left == 0 && len(retried) == 0 && run.Status != store.RunRunning {
		// Nothing is left and the run is scored: nothing to send.
		if c.Started != nil {
			c.Started(run.ID)
		}
		return loadWith(ctx, st, run, p)
	}
	prov, err := resumeProvider(c, h, p)
	if err != nil {
		return nil, err
	}
	if err := preflight(ctx, c, prov); err != nil {
		return nil, err
	}
	if len(retried) > 0 {
		// The sessions that failed for transport reasons go back to be run
		// again as their next incarnation; their attempts stay on record,
		// and the resumption says how many were retried and when.
		if err := st.Unstore(ctx, run.ID, retried); err != nil {
			return nil, err
		}
		if err := st.ReopenCells(ctx, run.ID, retried); err != nil {
			return nil, err
		}
		if todo, err = remaining(ctx, st, run.ID, plannedLen(p)); err != nil {
			return nil, err
		}
	}
	if err := ensureCells(ctx, st, run, p, todo); err != nil {
		return nil, err
	}
	if _, err := st.ReleaseDead(ctx, run.ID); err != nil {
		return nil, err
	}
	if !st.Shared() {
		// Under the lease no other process works on the run: the sessions
		// a killed one held run again as the incarnation after what it
		// stored, and its log, a file the kill may have cut, is mended
		// before more is appended.
		if err := st.ReopenClaimed(ctx, run.ID, todo.incarnations); err != nil {
			return nil, err
		}
		if err := repairLog(ctx, st, run.ID); err != nil {
			return nil, err
		}
	}
	s, save, err := buildStack(ctx, st, c, p, prov, todo, false)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	if err := save(ctx); err != nil {
		return nil, err
	}
	if run.Status != store.RunRunning {
		h.Status = store.RunRunning
		if err := st.ReopenRun(ctx, run.ID, manifestJSON(p.manifest())); err != nil {
			return nil, err
		}
		run.Status = store.RunRunning
	}
	r := Resumption{At: time.Now().UTC(), Budge: Version, Sessions: todo.left, RetriedFailed: len(retried), Worker: workerName.String()}
	if info := prov.Info(); info.Detail != h.Provider.Detail {
		r.Provider = info.Detail
	}
	record, _ := json.Marshal(r)
	return work(ctx, st, c, run, p, s, record)
}

// workerName names this process among a run's workers.
var workerName = store.ThisProcess("budge worker")

// exclusive holds, on a local store (SQLite), the run's lease while this
// process works on it: its artifact packs and log are files one process
// at a time appends to. A second process is refused with who holds it. A
// shared store's workers need no lease: their cells are theirs.
func exclusive(ctx context.Context, st *store.Store, h *Header) (context.Context, func(), error) {
	if st.Shared() {
		return ctx, func() {}, nil
	}
	lease, err := st.AcquireLease(ctx, h.RunID, holder(h))
	if err != nil {
		return nil, nil, fmt.Errorf("%w (several workers on one run need a PostgreSQL store: --store postgres://...)", err)
	}
	ctx, stop := holding(ctx, lease)
	return ctx, func() {
		stop()
		lease.Release()
	}, nil
}

// cellsOf is the cells of p's planned sessions in schedule order, of those
// want accepts, each with the incarnations want says earlier runs left,
// made one at a time as the store inserts them.
func cellsOf(p protocol, want func(i int, id string) (claims int, ok bool)) iter.Seq[store.PlannedCell] {
	_, idAt := plannedIDs(p)
	return func(yield func(store.PlannedCell) bool) {
		for pos, i := range p.order() {
			if claims, ok := want(i, idAt(i)); ok && !yield(store.PlannedCell{ID: idAt(i), Seq: i, Pos: pos, Claims: claims}) {
				return
			}
		}
	}
}

// ensureCells gives a run that has none (made before runs had cells) a
// cell for every planned session it has not stored (todo).
func ensureCells(ctx context.Context, st *store.Store, run store.Run, p protocol, todo *undone) error {
	has, err := st.HasCells(ctx, run.ID)
	if err != nil || has || todo.left == 0 {
		return err
	}
	return st.AddCells(ctx, run.ID, cellsOf(p, func(i int, id string) (int, bool) {
		return todo.incarnations[id], todo.has(i)
	}))
}

// work joins the run as a worker and runs the cells it claims through s;
// resumption is what it stands for (nil for a run's first process).
func work(ctx context.Context, st *store.Store, c Control, run store.Run, p protocol, s *stack.Stack, resumption []byte) (Result, error) {
	h := p.head()
	if s.Batch != nil {
		// Until the run is scored: its journal's index is live to the end.
		defer limitMemory()()
	}
	if c.Started != nil {
		c.Started(run.ID)
	}
	w, err := st.Join(ctx, run.ID, workerName, resumption)
	if err != nil {
		return nil, err
	}
	defer w.Leave(context.WithoutCancel(ctx))
	cells, err := st.Cells(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	drain := c.Drain
	if drain == nil {
		drain = context.Background()
	}
	var e *early
	if !st.Shared() && cells.Done == 0 && cells.Claimed == 0 {
		// A fresh run on a local store: its sessions are scored as they
		// are stored.
		e = newEarly(p)
		defer e.close()
		c.stored = e.stored
	}
	var claimErr error
	// Workers sharing a run claim a quarter of their calls in flight at a
	// time, so that the cells spread over them; the one worker of a run on
	// a local store claims many, each claim being a write.
	batch := max(1, c.Concurrency/4)
	if !st.Shared() {
		batch = max(localClaim, c.Concurrency)
	}
	batch = min(batch, maxClaim)
	jobs := claimed(ctx, drain, w, p, batch, &claimErr)
	stats, err := execute(ctx, st, c, p, s, w, cells.Left(), jobs)
	if e != nil {
		// Scoring reads the manifest, which record writes next.
		e.close()
	}
	if err != nil {
		return nil, err
	}
	if claimErr != nil {
		return nil, claimErr
	}
	record(&h.Net, s, stats)
	wctx := context.WithoutCancel(ctx)
	if cells, err = st.Cells(wctx, run.ID); err != nil {
		return nil, err
	}
	if cells.Left() > 0 {
		// Stopped (Ctrl-C, an outage, the cost limit) with sessions left:
		// its cells go back to the run. While other workers are alive they
		// go on; the last one to stop scores the run as it stands
		// (interrupted), as a single process would.
		last, err := w.Stop(wctx)
		if err != nil {
			return nil, err
		}
		if !last {
			why := "it was stopped"
			if stats.StoppedBy != "" {
				why = "sessions stopped starting: " + stats.StoppedBy
			}
			return nil, fmt.Errorf("%w: run %s has %d of %d sessions left (%s); other workers go on with them, or start one: budge worker %s",
				ErrWorkerStopped, run.ID, cells.Left(), cells.Left()+cells.Done, why, run.ID)
		}
	}
	// One worker scores the run; the others wait for it and read the
	// result. A scorer that stops is replaced once its heartbeat does.
	for {
		if run, err = st.GetRun(wctx, run.ID); err != nil {
			return nil, err
		}
		if run.Status != store.RunRunning {
			return Load(wctx, st, run.ID)
		}
		mine, err := w.Finisher(wctx)
		if err != nil {
			return nil, err
		}
		if mine {
			if err := recordWorkers(wctx, st, h); err != nil {
				return nil, err
			}
			return finish(wctx, st, p, run, e)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(workerPoll):
		}
	}
}

// claimed is the jobs of the cells w claims, batch at a time, in schedule
// order, until no cell is left to claim. While other workers still hold
// cells it waits and looks again: a worker that stops gives its cells back
// when its lease runs out. It ends when nothing is left but the cells w
// holds itself. A failure to claim ends the jobs and is put in *failed.
func claimed(ctx, drain context.Context, w *store.Worker, p protocol, batch int, failed *error) iter.Seq[runner.Job] {
	return func(yield func(runner.Job) bool) {
		for ctx.Err() == nil && drain.Err() == nil {
			cells, err := w.Claim(ctx, batch)
			if err != nil {
				if ctx.Err() == nil {
					// Not a stop (which is the runner's to report).
					*failed = err
				}
				return
			}
			for _, c := range cells {
				if !yield(p.job(c.Seq, c.Pos, c.Incarnation)) {
					return
				}
			}
			if len(cells) > 0 {
				continue
			}
			waiting, err := w.Waiting(ctx)
			if err != nil {
				if ctx.Err() == nil {
					*failed = err
				}
				return
			}
			if !waiting {
				return
			}
			select {
			case <-ctx.Done():
			case <-drain.Done():
			case <-time.After(workerPoll):
			}
		}
	}
}

// recordWorkers puts a run's workers in its manifest, and the resumptions
// they stand for among its resumptions (after those of processes that ran
// it before it had workers).
func recordWorkers(ctx context.Context, st *store.Store, h *Header) error {
	ws, err := st.Workers(ctx, h.RunID)
	if err != nil {
		return err
	}
	h.Net.Workers = ws
	var rs []Resumption
	for _, r := range h.Net.Resumes {
		if r.Worker == "" {
			rs = append(rs, r)
		}
	}
	for _, wi := range ws {
		var r Resumption
		if len(wi.Record) > 0 && json.Unmarshal(wi.Record, &r) == nil {
			rs = append(rs, r)
		}
	}
	h.Net.Resumes = rs
	return nil
}
