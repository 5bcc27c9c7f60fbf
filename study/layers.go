package study

import (
	"context"
	"fmt"
	"time"

	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/runner"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study/stack"
)

// buildStack is the one place a worker's model is made ready to run: its
// price, its cost limit (refusing what is left when it is projected past
// the limit), its limit of calls per second, its batch API, journal and
// cache (stack.Build), each recorded in the manifest. todo is what the run
// has left to run; fresh says the run is not stored yet.
//
// The cost limit and the pace are the run's, kept in the store for all its
// workers: the limit in a ledger of what they spent, the pace as a count of
// calls per second. A --max-cost or --rate given here becomes the run's,
// unless other workers are running it under another. What buildStack
// decides is stored by save, once the run is.
func buildStack(ctx context.Context, st *store.Store, c Control, p protocol, prov provider.Provider, todo *undone, fresh bool) (s *stack.Stack, save func(context.Context) error, err error) {
	h := p.head()
	n := &h.Net
	info := prov.Info()
	if n.BodyFormat == "" {
		n.BodyFormat = stack.BodyFormat(info)
	}
	cfg := c.Endpoint.Config
	if price, ok := cfg.PriceOf(h.Model); ok && n.Price == nil && info.Name != "replay" && (c.MaxCost > 0 || fresh && cfg.HasPrice(h.Model)) {
		if n.Batch != nil {
			var note string
			price, note = price.ForBatch()
			n.Batch.Price = note
		}
		n.Price = &price
	}
	var shared runLimits
	if !fresh {
		if shared, err = limitsOf(ctx, st, h.RunID); err != nil {
			return nil, nil, err
		}
	}
	others := func() (int, error) { return st.LiveWorkers(ctx, h.RunID) }
	budget, spent, err := costLimit(ctx, st, c.MaxCost, h, p, todo, shared, others)
	if err != nil {
		return nil, nil, err
	}
	pace, err := callPace(c.Rate, h, st, shared, others)
	if err != nil {
		return nil, nil, err
	}
	save = func(ctx context.Context) error {
		var err error
		switch {
		case budget == nil:
		case !shared.ledger:
			err = st.OpenLedger(ctx, h.RunID, budget.Limit, spent)
		case budget.Limit != shared.limit:
			err = st.SetLedgerLimit(ctx, h.RunID, budget.Limit)
		}
		switch {
		case err != nil || pace == nil:
		case !shared.pace:
			err = st.OpenPace(ctx, h.RunID, n.Rate)
		case n.Rate != shared.rate:
			err = st.SetPace(ctx, h.RunID, n.Rate)
		}
		if err != nil || budget == nil {
			return err
		}
		return budget.Sync()
	}
	bs, err := batchStack(st, h, prov, c.BatchNotify)
	if err != nil {
		return nil, nil, err
	}
	if c.CacheDir != "" {
		n.Cache = &CacheInfo{Dir: c.CacheDir}
	}
	s, err = stack.Build(prov, stack.Options{CacheDir: c.CacheDir, JournalDir: journalDir(st, h.RunID), Concurrency: c.Concurrency,
		Budget: budget, Pace: pace, Batch: bs})
	if err != nil {
		return nil, nil, err
	}
	return s, save, nil
}

// runLimits are the cost ledger and the pace a stored run has.
type runLimits struct {
	limit, spent float64
	ledger       bool
	rate         int
	pace         bool
}

func limitsOf(ctx context.Context, st *store.Store, runID string) (runLimits, error) {
	var l runLimits
	var err error
	if l.limit, l.spent, l.ledger, err = st.Ledger(ctx, runID); err != nil {
		return l, err
	}
	l.rate, l.pace, err = st.PaceOf(ctx, runID)
	return l, err
}

// costLimit is a worker's cost budget: the run's limit (maxCost when
// given), or nil for a run without one, and what the run has spent. A
// given limit must leave room for the projected cost of what is left.
func costLimit(ctx context.Context, st *store.Store, maxCost float64, h *Header, p protocol, todo *undone, shared runLimits, others func() (int, error)) (*runner.Budget, float64, error) {
	limit, spent := shared.limit, shared.spent
	if maxCost > 0 && shared.ledger && maxCost != limit {
		if n, err := others(); err != nil || n > 0 {
			if err != nil {
				return nil, 0, err
			}
			return nil, 0, fmt.Errorf("%w: run %s has a cost limit of $%g shared by its workers; drop --max-cost, or give the same", ErrInvalid, h.RunID, limit)
		}
	}
	if maxCost > 0 {
		limit = maxCost
	} else if !shared.ledger {
		return nil, 0, nil
	}
	n := &h.Net
	if n.Price == nil {
		if maxCost > 0 {
			return nil, 0, fmt.Errorf("%w: --max-cost needs a price for %s: add it under prices in the config file (US dollars per million tokens)", ErrInvalid, h.Model)
		}
		return nil, 0, fmt.Errorf("%w: run %s has a cost limit but no recorded price", ErrInvalid, h.RunID)
	}
	price := *n.Price
	if !shared.ledger && todo.left < plannedLen(p) {
		// What the run's stored sessions cost counts as spent.
		in, out, err := st.StoredTokens(ctx, h.RunID)
		if err != nil {
			return nil, 0, err
		}
		spent = price.Cost(in, out)
	}
	proj, err := projection(p, todo.has, price)
	if err != nil {
		return nil, 0, err
	}
	if maxCost > 0 {
		if spent+proj.Cost > limit {
			if todo.left == plannedLen(p) && spent == 0 {
				return nil, 0, fmt.Errorf("%w: %w: %d sessions of %s are projected to cost $%.4f (%d input and %d output tokens at $%g/$%g per million; %s), more than --max-cost $%g",
					ErrInvalid, ErrCostLimit, proj.Sessions, h.Model, proj.Cost, proj.InputTokens, proj.OutputTokens, price.Input, price.Output, proj.Assumptions, limit)
			}
			return nil, 0, fmt.Errorf("%w: %w: run %s has cost $%.4f; its %d remaining sessions are projected at $%.4f (%s), more than --max-cost $%g allows",
				ErrInvalid, ErrCostLimit, h.RunID, spent, todo.left, proj.Cost, proj.Assumptions, limit)
		}
		n.MaxCost, n.Projected = limit, &proj
	}
	b := &runner.Budget{Limit: limit, PerSession: proj.Cost / float64(max(proj.Sessions, 1)), MaxOutput: maxOutput(h.Settings), Price: price.Cost,
		Ledger: spend(st, h.RunID)}
	return b, spent, nil
}

// callPace is a worker's limit of calls per second: the run's (rate when
// given, and recorded in the manifest), or nil for a run without one.
func callPace(rate int, h *Header, st *store.Store, shared runLimits, others func() (int, error)) (*runner.Pace, error) {
	if rate > 0 && shared.pace && rate != shared.rate {
		if n, err := others(); err != nil || n > 0 {
			if err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("%w: run %s is limited to %d calls per second shared by its workers; drop --rate, or give the same", ErrInvalid, h.RunID, shared.rate)
		}
	}
	switch {
	case rate > 0:
	case shared.pace:
		rate = shared.rate
	default:
		rate = h.Net.Rate // a run made before its pace was kept in the store
	}
	h.Net.Rate = rate
	if rate <= 0 {
		return nil, nil
	}
	pace := runner.NewPace(func(ctx context.Context, want int) (int, time.Time, time.Time, error) {
		return st.TakeCalls(ctx, h.RunID, want)
	}, max(1, rate/20)) // a twentieth of a second's calls at a time
	return pace, nil
}

// spend adds to a run's shared cost ledger (runner.Budget.Ledger).
func spend(st *store.Store, runID string) func(float64) (float64, error) {
	return func(delta float64) (float64, error) { return st.Spend(context.Background(), runID, delta) }
}
