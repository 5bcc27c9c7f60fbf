package study

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/runner"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study/stack"
)

// Resume continues an interrupted run of any protocol in place. Sessions
// already stored (complete, or failed for good) are not sent again; every
// other planned session runs with the recorded seed, settings and schedule
// as the next incarnation of whatever attempts earlier runs left, so no
// stored observation is overwritten. The run is then scored from the
// store, old sessions and new together: with a deterministic model the
// measures equal those of an uninterrupted run. This holds after kill -9 at
// any moment, because a session is stored whole or not at all.
//
// From c it takes the provider or the endpoint options (a new base URL is
// allowed and recorded), concurrency, the cost limit, the cache, progress
// and the callbacks. The model, seed, settings and retry policy are the
// run's own.
func Resume(ctx context.Context, st *store.Store, ref string, c Control) (Result, error) {
	run, p, err := openAskable(ctx, st, ref)
	if err != nil {
		return nil, err
	}
	if cells, err := st.HasCells(ctx, run.ID); err != nil {
		return nil, err
	} else if cells || st.Shared() {
		// A run of workers is resumed by working on it.
		return Work(ctx, st, run.ID, c)
	}
	// One process owns a run: a second resume (or a resume of a run still
	// going) is refused with who holds it.
	lease, err := st.AcquireLease(ctx, run.ID, holder(p.head()))
	if err != nil {
		return nil, err
	}
	defer lease.Release()
	ctx, stop := holding(ctx, lease)
	defer stop()
	ran, err := resume(ctx, st, c, run, p)
	if err != nil {
		return nil, err
	}
	if !ran {
		return loadWith(ctx, st, run, p)
	}
	wctx := context.WithoutCancel(ctx)
	if run, err = st.GetRun(wctx, run.ID); err != nil {
		return nil, err
	}
	return finish(wctx, st, p, run)
}

// resume runs what a stored run left undone. It returns false when nothing
// was left to run and the run was already finished.
func resume(ctx context.Context, st *store.Store, c Control, run store.Run, p protocol) (bool, error) {
	h := p.head()
	if h.Net.ReplayOf != "" {
		return false, fmt.Errorf("%w: run %s is a replay; replay %s again instead of resuming it", ErrInvalid, run.ID, h.Net.ReplayOf)
	}
	prov, err := resumeProvider(c, h, p)
	if err != nil {
		return false, err
	}
	var retried []string
	if c.RetryFailed {
		if retried, err = transportFailed(ctx, st, run.ID); err != nil {
			return false, err
		}
	}
	todo, err := remaining(ctx, st, run.ID, plannedLen(p))
	if err != nil {
		return false, err
	}
	if todo.left == 0 && len(retried) == 0 && run.Status != store.RunRunning {
		// Nothing is missing: nothing to send, nothing to change.
		if c.Started != nil {
			c.Started(run.ID)
		}
		return false, nil
	}
	if err := preflight(ctx, c, prov); err != nil {
		return false, err
	}
	if len(retried) > 0 {
		// The failed sessions go back to be run again as their next
		// incarnation; their attempts stay on record, and the resumption
		// says how many were retried and when.
		if err := st.Unstore(ctx, run.ID, retried); err != nil {
			return false, err
		}
		if todo, err = remaining(ctx, st, run.ID, plannedLen(p)); err != nil {
			return false, err
		}
	}
	if err := repairLog(ctx, st, run.ID); err != nil {
		return false, err
	}
	budget, err := remainingBudget(ctx, st, c.NetOptions, h, p, todo)
	if err != nil {
		return false, err
	}
	if c.Rate > 0 {
		h.Net.Rate = c.Rate
	}
	bs, err := batchStack(st, h, prov, c.BatchNotify)
	if err != nil {
		return false, err
	}
	s, err := stack.Build(prov, stack.Options{CacheDir: c.CacheDir, JournalDir: journalDir(st, run.ID), Concurrency: concurrency(c, h), Budget: budget,
		Pace: localPace(h.Net.Rate), Batch: bs})
	if err != nil {
		return false, err
	}
	defer s.Close()
	if c.CacheDir != "" {
		h.Net.Cache = &CacheInfo{Dir: c.CacheDir}
	}
	info := prov.Info()
	r := Resumption{At: time.Now().UTC(), Budge: Version, Sessions: todo.left, RetriedFailed: len(retried)}
	if info.Detail != h.Provider.Detail {
		r.Provider = info.Detail
	}
	h.Net.Resumes = append(h.Net.Resumes, r)
	h.Status = store.RunRunning
	if err := st.ReopenRun(ctx, run.ID, manifestJSON(p.manifest())); err != nil {
		return false, err
	}
	if c.Started != nil {
		c.Started(run.ID)
	}
	n, jobs := jobsOf(p, func(i int, id string) (int, bool) {
		if !todo.has(i) {
			return 0, false
		}
		return todo.incarnations[id] + 1, true
	})
	stats, err := execute(ctx, st, c, p, s, st, n, jobs)
	if err != nil {
		return false, err
	}
	record(&h.Net, s, stats)
	return true, nil
}

// concurrency is the caller's concurrency, or else the recorded run's.
func concurrency(c Control, h *Header) int {
	if c.Concurrency < 1 {
		return h.Concurrency
	}
	return c.Concurrency
}

// resumeProvider opens the recorded model (at the recorded base URL unless
// the caller gives another) and refuses one that would mix models.
func resumeProvider(c Control, h *Header, p protocol) (provider.Provider, error) {
	prov := c.Provider
	if prov == nil {
		eo := c.Endpoint
		if eo.BaseURL == "" {
			eo.BaseURL = baseURLOf(h.Provider)
		}
		var err error
		if prov, err = p.open(eo); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
	}
	info := prov.Info()
	if info.Name != h.Provider.Name || info.Model != h.Model {
		return nil, fmt.Errorf("%w: run %s was made with %s (%s); resuming it with %s (%s) would mix models", ErrInvalid, h.RunID, h.Model, h.Provider.Name, info.Model, info.Name)
	}
	if ch, ok := p.(checker); ok {
		if err := ch.check(info); err != nil {
			return nil, err
		}
	}
	return prov, nil
}

// undone is what a stored run has left to run: the plan positions of the
// sessions it has not stored, one bit each, and the incarnations earlier
// processes left of those (the sessions they had attempts of), so memory
// holds a bit per planned session and an entry per session in flight.
type undone struct {
	bits         []uint64
	left         int
	incarnations map[string]int
}

func (u *undone) has(i int) bool { return u.bits[i/64]&(1<<(i%64)) != 0 }

// remaining reads what run id, of planned sessions, has left to run.
func remaining(ctx context.Context, st *store.Store, id string, planned int) (*undone, error) {
	u := &undone{bits: make([]uint64, (planned+63)/64), left: planned}
	for i := range planned {
		u.bits[i/64] |= 1 << (i % 64)
	}
	err := st.EachStoredSeq(ctx, id, func(seq int) {
		if seq >= 0 && seq < planned && u.has(seq) {
			u.bits[seq/64] &^= 1 << (seq % 64)
			u.left--
		}
	})
	if err != nil {
		return nil, err
	}
	if u.incarnations, err = st.PendingIncarnations(ctx, id); err != nil {
		return nil, err
	}
	return u, nil
}

// repairLog mends a run's log before more is appended to it: a kill can
// cut its last line, or lose the records of sessions the database had
// already committed. The stored sessions are read a batch at a time.
func repairLog(ctx context.Context, st *store.Store, id string) error {
	logged, err := st.RepairLog(id)
	if err != nil {
		return err
	}
	var lost []byte
	err = st.EachSessions(ctx, id, scoreBatch, func(batch []store.Session) error {
		for _, se := range batch {
			if !logged.Has(se.ID) {
				lost = append(lost, runner.LogLines(id, se)...)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return st.AppendLog(id, lost)
}

// remainingBudget is the cost limit of a resume: what the run has spent
// counts against --max-cost, and the sessions left must fit in the rest.
func remainingBudget(ctx context.Context, st *store.Store, o NetOptions, h *Header, p protocol, todo *undone) (*runner.Budget, error) {
	if o.MaxCost <= 0 || todo.left == 0 {
		return nil, nil
	}
	price, ok := o.Endpoint.Config.PriceOf(h.Model)
	if !ok {
		return nil, fmt.Errorf("%w: --max-cost needs a price for %s in the config file", ErrInvalid, h.Model)
	}
	in, out, err := st.StoredTokens(ctx, h.RunID)
	if err != nil {
		return nil, err
	}
	spent := price.Cost(in, out)
	proj, err := projection(p, todo.has, price)
	if err != nil {
		return nil, err
	}
	if spent+proj.Cost > o.MaxCost {
		return nil, fmt.Errorf("%w: %w: run %s has cost $%.4f; its %d remaining sessions are projected at $%.4f (%s), more than --max-cost $%g allows",
			ErrInvalid, ErrCostLimit, h.RunID, spent, todo.left, proj.Cost, proj.Assumptions, o.MaxCost)
	}
	h.Net.Price, h.Net.MaxCost, h.Net.Projected = &price, o.MaxCost, &proj
	return &runner.Budget{Limit: o.MaxCost - spent, PerSession: proj.Cost / float64(max(todo.left, 1)), MaxOutput: maxOutput(h.Settings), Price: price.Cost}, nil
}

// transportFailed lists the sessions of a run stored as failed for a
// reason that says nothing about the model (rate limits, server errors,
// timeouts, broken connections and bodies), in order.
func transportFailed(ctx context.Context, st *store.Store, id string) ([]string, error) {
	kinds, err := st.FailedKinds(ctx, id)
	if err != nil {
		return nil, err
	}
	var out []string
	for sid, k := range kinds {
		if provider.Kind(k).Infrastructure() {
			out = append(out, sid)
		}
	}
	sort.Strings(out)
	return out, nil
}
