package study

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/provider/endpoint"
	"github.com/buildlab/budge/provider/sim"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/store/storetest"
)

// openShared opens n stores on one fresh PostgreSQL database, as n
// machines would.
func openShared(t *testing.T, n int) []*store.Store {
	t.Helper()
	url := storetest.PostgresURL(t)
	var out []*store.Store
	for range n {
		st, err := store.OpenURL(context.Background(), url, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		out = append(out, st)
	}
	return out
}

// Two workers on one run with a cost limit share it: together they stop
// starting sessions before the run's cost passes the limit (give or take
// their calls in flight), the ledger holds what they spent, and the last
// to stop scores the run as interrupted by the cost limit.
func TestWorkersShareTheCostLimit(t *testing.T) {
	sts := openShared(t, 2)
	cfg := &endpoint.Config{Prices: map[string]endpoint.Price{"sim:default": {Input: 10, Output: 30}}}
	full := inProcessRun(t, 8)
	in, out := full.Manifest.Counts.InputTokens, full.Manifest.Counts.OutputTokens
	fullCost := cfg.Prices["sim:default"].Cost(in, out)

	o := DefaultPressureOptions()
	o.Seed, o.Concurrency = 8, 4
	o.Endpoint.Config = cfg
	o.MaxCost = 3 * fullCost // the projection passes; the verbose model costs more than projected
	id, err := Detach(context.Background(), sts[0], o)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make([]Result, 2)
	errs := make([]error, 2)
	for k, st := range sts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := o.Control
			c.Provider = verbose{sim.New(simProfile(t, "default"))}
			c.MaxCost = 0 // the run's own limit, from its ledger
			results[k], errs[k] = Work(context.Background(), st, id, c)
		}()
	}
	wg.Wait()
	scored := 0
	for k := range errs {
		switch {
		case errs[k] == nil:
			scored++
		case !errors.Is(errs[k], ErrWorkerStopped):
			t.Fatalf("worker %d: %v", k, errs[k])
		}
	}
	if scored == 0 {
		t.Fatal("no worker scored the run")
	}
	res, err := LoadPressure(context.Background(), sts[1], id)
	if err != nil {
		t.Fatal(err)
	}
	m := res.Manifest
	if res.Run.Status != store.RunInterrupted || m.Counts.Missing == 0 || m.Counts.Complete == 0 || m.Net.StoppedBy != "cost limit" {
		t.Fatalf("status %s, counts %+v, stopped by %q", res.Run.Status, m.Counts, m.Net.StoppedBy)
	}
	limit, spent, ok, err := sts[0].Ledger(context.Background(), id)
	if err != nil || !ok || limit != o.MaxCost {
		t.Fatalf("ledger %v %v %v %v", limit, spent, ok, err)
	}
	cost := *m.Net.CostUSD
	t.Logf("limit $%.3f, ledger $%.3f, stored sessions $%.3f, %d of %d sessions", limit, spent, cost, m.Counts.Complete, m.Counts.Planned)
	if cost > spent+1e-9 {
		t.Errorf("stored sessions cost $%.4f, more than the ledger's $%.4f", cost, spent)
	}
	// Four calls in flight per worker, each at most 600 output tokens.
	slack := 8 * cfg.Prices["sim:default"].Cost(4000, 600)
	if spent > limit+slack {
		t.Errorf("the workers spent $%.4f against a limit of $%.4f", spent, limit)
	}
	if len(m.Net.Workers) != 2 {
		t.Errorf("%d workers recorded", len(m.Net.Workers))
	}
}

// stamped records when each call of every process was made.
type stamped struct {
	provider.Provider
	mu    *sync.Mutex
	calls map[time.Time]int // by one-second window
}

func (s stamped) Chat(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	s.mu.Lock()
	s.calls[time.Now().Truncate(time.Second)]++
	s.mu.Unlock()
	return s.Provider.Chat(ctx, req)
}

// Two workers on a run with --rate keep to it between them: no second
// holds more calls than the run's limit, and the run completes.
func TestWorkersShareTheRate(t *testing.T) {
	sts := openShared(t, 2)
	o := DefaultPressureOptions()
	o.Seed, o.Concurrency, o.Rate = 3, 16, 400
	id, err := Detach(context.Background(), sts[0], o)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	calls := map[time.Time]int{}
	var wg sync.WaitGroup
	for _, st := range sts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := o.Control
			c.Rate = 0 // the run's
			c.Provider = stamped{sim.New(simProfile(t, "default")), &mu, calls}
			if _, err := Work(context.Background(), st, id, c); err != nil && !errors.Is(err, ErrWorkerStopped) {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	res, err := LoadPressure(context.Background(), sts[0], id)
	if err != nil {
		t.Fatal(err)
	}
	if res.Run.Status != store.RunComplete || res.Manifest.Net.Rate != 400 {
		t.Fatalf("status %s, rate %d", res.Run.Status, res.Manifest.Net.Rate)
	}
	// Calls are stamped when they reach the model, after their grant: a
	// call granted at the end of one second may arrive in the next, so a
	// second may see up to the calls in flight (Concurrency per worker)
	// beyond the 400 granted in it. Without the shared limit the simulator
	// takes thousands a second.
	slack := o.Concurrency * len(sts)
	total := 0
	for w, n := range calls {
		total += n
		if n > 400+slack {
			t.Errorf("%d calls in the second from %s, over the run's 400 (+%d in flight)", n, w.Format("15:04:05"), slack)
		}
	}
	if len(calls) < 3 {
		t.Errorf("%d calls fit in %d seconds at 400 a second", total, len(calls))
	}
}
