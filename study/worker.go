package study

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/buildlab/budge/runner"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study/stack"
)

// A run on a shared store (PostgreSQL), or one made with Detach, is
// advanced by workers rather than owned by one process: its planned
// sessions are cells (store.Worker), which any number of processes on any
// number of machines claim a few at a time, run and store. The run is the
// same run: the same plan, seeds and settings, so its measures equal those
// of one process running it alone. The worker that finds every cell done
// scores the run; the others wait for it and read the result.

// workerPoll is how often a worker with nothing to claim looks again while
// other workers still hold cells (one of them may stop, and its cells
// come back once its lease runs out).
const workerPoll = 500 * time.Millisecond

// ErrWorkerStopped is returned by Work when the worker stopped before the
// run was done (Ctrl-C, an outage, the cost limit): the cells it held went
// back to the run for other workers, or a later one.
var ErrWorkerStopped = errors.New("the worker stopped before the run was done")

// Detach makes a new run of a plan and its cells, and returns its id
// without running it: workers (Work) advance it.
func Detach(ctx context.Context, st *store.Store, pl Plan) (string, error) {
	p, s, err := newWorkerRun(ctx, st, pl)
	if err != nil {
		return "", err
	}
	s.Close()
	return p.head().RunID, nil
}

// newWorkerRun checks a plan as Start does (the model, the price and
// --max-cost) and stores the new run with its cells.
func newWorkerRun(ctx context.Context, st *store.Store, pl Plan) (protocol, *stack.Stack, error) {
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
	s, err := newStack(c.NetOptions, st, journalDir(st, h.RunID), h, prov, p)
	if err != nil {
		return nil, nil, err
	}
	h.Fingerprint = p.fingerprint()
	run, source, content := runRow(p)
	cells := cellsOf(p, func(int, string) (int, bool) { return 0, true })
	if err := st.CreateRunCells(ctx, run, source, content, cells); err != nil {
		return nil, nil, err
	}
	if h.Net.Rate > 0 {
		// So does the limit of calls per second.
		if err := st.OpenPace(ctx, h.RunID, h.Net.Rate); err != nil {
			return nil, nil, err
		}
		s.Pace = sharedPace(st, h.RunID, h.Net.Rate)
	}
	if s.Budget != nil {
		// The cost limit holds for the run, across its workers.
		if err := st.OpenLedger(ctx, h.RunID, s.Budget.Limit, 0); err != nil {
			return nil, nil, err
		}
		s.Budget.Ledger = spend(st, h.RunID)
	}
	if c.Started != nil {
		c.Started(h.RunID)
	}
	return p, s, nil
}

// startShared is Start on a shared store: the new run's cells are stored
// and this process is their first worker.
func startShared(ctx context.Context, st *store.Store, pl Plan) (Result, error) {
	p, s, err := newWorkerRun(ctx, st, pl)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	run, err := st.GetRun(ctx, p.head().RunID)
	if err != nil {
		return nil, err
	}
	return work(ctx, st, pl.control(), run, p, s, nil)
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
		return nil, fmt.Errorf("%w: run %s is a replay; replay %s again instead of working on it", ErrInvalid, run.ID, h.Net.ReplayOf)
	}
	var retried []string
	if c.RetryFailed {
		// As Resume does: the sessions that failed for transport reasons
		// go back to be run again, their attempts kept on record.
		var err error
		retried, err = transportFailed(ctx, st, run.ID)
		if err != nil {
			return nil, err
		}
		if err := st.Unstore(ctx, run.ID, retried); err != nil {
			return nil, err
		}
		if err := st.ReopenCells(ctx, run.ID, retried); err != nil {
			return nil, err
		}
	}
	if err := ensureCells(ctx, st, run, p); err != nil {
		return nil, err
	}
	if _, err := st.ReleaseDead(ctx, run.ID); err != nil {
		return nil, err
	}
	cells, err := st.Cells(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	if cells.Left() == 0 && run.Status != store.RunRunning && !c.RetryFailed {
		// Nothing is left and the run is scored: nothing to send.
		if c.Started != nil {
			c.Started(run.ID)
		}
		return loadWith(ctx, st, run, p)
	}
	if !st.Shared() {
		// A SQLite store's artifact packs are files one process appends
		// to: one worker at a time, under the run's lease.
		lease, err := st.AcquireLease(ctx, run.ID, store.ThisProcess("budge worker"))
		if err != nil {
			return nil, fmt.Errorf("%w (several workers on one run need a PostgreSQL store: --store postgres://...)", err)
		}
		defer lease.Release()
		var stop func()
		ctx, stop = holding(ctx, lease)
		defer stop()
		// Its log is a file a kill may have cut: mended before more is
		// appended, as a resume does.
		if err := repairLog(ctx, st, run.ID); err != nil {
			return nil, err
		}
	}
	prov, err := resumeProvider(c, h, p)
	if err != nil {
		return nil, err
	}
	if err := preflight(ctx, c, prov); err != nil {
		return nil, err
	}
	budget, err := sharedBudget(ctx, st, c.NetOptions, h, p)
	if err != nil {
		return nil, err
	}
	pace, err := workerPace(ctx, st, c.Rate, h)
	if err != nil {
		return nil, err
	}
	bs, err := batchStack(st, h, prov, c.BatchNotify)
	if err != nil {
		return nil, err
	}
	s, err := stack.Build(prov, stack.Options{CacheDir: c.CacheDir, JournalDir: journalDir(st, run.ID), Concurrency: concurrency(c, h), Budget: budget, Pace: pace, Batch: bs})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	if run.Status != store.RunRunning {
		h.Status = store.RunRunning
		if err := st.ReopenRun(ctx, run.ID, manifestJSON(p.manifest())); err != nil {
			return nil, err
		}
		run.Status = store.RunRunning
	}
	if c.Started != nil {
		c.Started(run.ID)
	}
	r := Resumption{At: time.Now().UTC(), Budge: Version, Sessions: cells.Left(), RetriedFailed: len(retried), Worker: store.ThisProcess("budge worker").String()}
	if info := prov.Info(); info.Detail != h.Provider.Detail {
		r.Provider = info.Detail
	}
	record, _ := json.Marshal(r)
	return work(ctx, st, c, run, p, s, record)
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

// ensureCells gives a run that has none (made by one process, before it
// had cells) a cell for every planned session it has not stored.
func ensureCells(ctx context.Context, st *store.Store, run store.Run, p protocol) error {
	has, err := st.HasCells(ctx, run.ID)
	if err != nil || has {
		return err
	}
	todo, err := remaining(ctx, st, run.ID, plannedLen(p))
	if err != nil {
		return err
	}
	if todo.left == 0 {
		return nil
	}
	return st.AddCells(ctx, run.ID, cellsOf(p, func(i int, id string) (int, bool) {
		return todo.incarnations[id], todo.has(i)
	}))
}

// work joins the run as a worker and runs the cells it claims through s;
// resumption is what it stands for (nil for a run's first process).
func work(ctx context.Context, st *store.Store, c Control, run store.Run, p protocol, s *stack.Stack, resumption []byte) (Result, error) {
	h := p.head()
	w, err := st.Join(ctx, run.ID, store.ThisProcess("budge worker"), resumption)
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
	var claimErr error
	jobs := claimed(ctx, drain, w, p, max(1, concurrency(c, h)/4), &claimErr)
	stats, err := execute(ctx, st, c, p, s, w, cells.Left(), jobs)
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
			return finish(wctx, st, p, run)
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
				*failed = err
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
				*failed = err
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

// spend adds to a run's shared cost ledger (runner.Budget.Ledger).
func spend(st *store.Store, runID string) func(float64) (float64, error) {
	return func(delta float64) (float64, error) { return st.Spend(context.Background(), runID, delta) }
}

// sharedBudget is a worker's cost limit: the run's ledger, shared by its
// workers, or a new one when --max-cost is first given to a run that has
// none (what its stored sessions cost counts as spent). A --max-cost that
// differs from the ledger's limit is an error: the limit is the run's.
func sharedBudget(ctx context.Context, st *store.Store, o NetOptions, h *Header, p protocol) (*runner.Budget, error) {
	limit, _, ok, err := st.Ledger(ctx, h.RunID)
	if err != nil {
		return nil, err
	}
	if ok && o.MaxCost > 0 && o.MaxCost != limit {
		return nil, fmt.Errorf("%w: run %s has a cost limit of $%g shared by its workers; drop --max-cost, or give the same", ErrInvalid, h.RunID, limit)
	}
	if !ok {
		if o.MaxCost <= 0 {
			return nil, nil
		}
		price, found := o.Endpoint.Config.PriceOf(h.Model)
		if !found {
			return nil, fmt.Errorf("%w: --max-cost needs a price for %s in the config file", ErrInvalid, h.Model)
		}
		in, out, err := st.StoredTokens(ctx, h.RunID)
		if err != nil {
			return nil, err
		}
		if err := st.OpenLedger(ctx, h.RunID, o.MaxCost, price.Cost(in, out)); err != nil {
			return nil, err
		}
		limit, h.Net.Price, h.Net.MaxCost = o.MaxCost, &price, o.MaxCost
	}
	if h.Net.Price == nil {
		return nil, fmt.Errorf("%w: run %s has a cost limit but no recorded price", ErrInvalid, h.RunID)
	}
	price := *h.Net.Price
	proj, err := projection(p, func(int) bool { return true }, price)
	if err != nil {
		return nil, err
	}
	b := &runner.Budget{Limit: limit, PerSession: proj.Cost / float64(max(proj.Sessions, 1)), MaxOutput: maxOutput(h.Settings), Price: price.Cost,
		Ledger: spend(st, h.RunID)}
	return b, b.Sync()
}

// sharedPace holds the workers of a run to rate calls per second between
// them, through the store.
func sharedPace(st *store.Store, runID string, rate int) *runner.Pace {
	return runner.NewPace(func(ctx context.Context, want int) (int, time.Time, time.Time, error) {
		return st.TakeCalls(ctx, runID, want)
	}, paceBatch(rate))
}

// workerPace is a worker's limit of calls per second: the run's, shared by
// its workers, or a new one when --rate is first given to a run without
// one. A --rate that differs from the run's is an error.
func workerPace(ctx context.Context, st *store.Store, rate int, h *Header) (*runner.Pace, error) {
	have, ok, err := st.PaceOf(ctx, h.RunID)
	if err != nil {
		return nil, err
	}
	switch {
	case ok && rate > 0 && rate != have:
		return nil, fmt.Errorf("%w: run %s is limited to %d calls per second shared by its workers; drop --rate, or give the same", ErrInvalid, h.RunID, have)
	case !ok && rate <= 0:
		return nil, nil
	case !ok:
		if err := st.OpenPace(ctx, h.RunID, rate); err != nil {
			return nil, err
		}
		have = rate
	}
	h.Net.Rate = have
	return sharedPace(st, h.RunID, have), nil
}
