package study

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/provider/endpoint"
	"github.com/buildlab/budge/provider/sim"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/testkit/storetest"
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
	t.Parallel()
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
	t.Parallel()
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

// pausable answers through the simulator until pauseAt calls have
// started, then holds every further call, as a process stopped (SIGSTOP)
// holds its calls, until resume is closed. It records each call it
// answers by session and turn.
type pausable struct {
	provider.Provider
	pauseAt int
	paused  chan struct{} // closed at the first held call
	resume  chan struct{}

	mu       sync.Mutex
	started  int
	held     int // calls held at the pause: in flight when it came
	after    int // calls started after resume, not held
	answered map[string]int
	late     map[string]bool // answered at or after the pause
}

func (p *pausable) Chat(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	p.mu.Lock()
	p.started++
	hold := false
	select {
	case <-p.resume:
		p.after++
	default:
		if p.started > p.pauseAt {
			hold = true
			if p.held++; p.held == 1 {
				close(p.paused)
			}
		}
	}
	p.mu.Unlock()
	if hold {
		<-p.resume
	}
	p.mu.Lock()
	c, _ := provider.CallOf(ctx)
	k := fmt.Sprintf("%s/%d", c.Session, c.Turn)
	p.answered[k]++
	if hold || p.after > 0 {
		p.late[k] = true
	}
	p.mu.Unlock()
	return p.Provider.Chat(ctx, req)
}

// A worker paused past its lease (its heartbeat stopped, its calls held)
// while another worker takes its sessions over and completes the run
// finds out before its next call: once it resumes it makes none, and no
// request is answered twice beyond those in flight at the pause. On
// SQLite the run's lease is the fence as well; on PostgreSQL the cells'.
func TestPausedWorkerPaysNothingTwice(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			var sts []*store.Store
			if backend == "sqlite" {
				dir := t.TempDir()
				sts = []*store.Store{storetest.OpenDir(t, dir), storetest.OpenDir(t, dir)}
			} else {
				sts = openShared(t, 2)
			}
			const lease = time.Second
			// The paused worker never beats on its own (its heartbeat
			// stopped); the other beats as usual.
			sts[0].LeaseTimeout, sts[0].LeaseRenew = lease, -1
			sts[1].LeaseTimeout, sts[1].LeaseRenew = lease, lease/6
			o := DefaultPressureOptions()
			o.Seed, o.Concurrency = 5, 4
			id, err := Detach(context.Background(), sts[0], o)
			if err != nil {
				t.Fatal(err)
			}
			a := &pausable{Provider: sim.New(simProfile(t, "default")), pauseAt: 12, paused: make(chan struct{}), resume: make(chan struct{}), answered: map[string]int{}, late: map[string]bool{}}
			aDone := make(chan error, 1)
			go func() {
				c := o.Control
				c.Provider = a
				_, err := Work(context.Background(), sts[0], id, c)
				aDone <- err
			}()
			select {
			case <-a.paused:
			case err := <-aDone:
				t.Fatalf("the first worker ended before its pause: %v", err)
			case <-time.After(30 * time.Second):
				t.Fatal("the first worker never reached its pause")
			}
			// Past the paused worker's lease, the other takes over and
			// completes the run.
			time.Sleep(lease + lease/2)
			b := &pausable{Provider: sim.New(simProfile(t, "default")), pauseAt: 1 << 30, paused: make(chan struct{}), resume: make(chan struct{}), answered: map[string]int{}, late: map[string]bool{}}
			c := o.Control
			c.Provider = b
			res, err := Work(context.Background(), sts[1], id, c)
			if err != nil {
				t.Fatal(err)
			}
			pr := res.(*PressureResult)
			if pr.Run.Status != store.RunComplete || pr.Manifest.Counts.Complete != pr.Manifest.Counts.Planned {
				t.Fatalf("status %s, counts %+v", pr.Run.Status, pr.Manifest.Counts)
			}
			// The paused worker resumes.
			close(a.resume)
			select {
			case err := <-aDone:
				t.Logf("the resumed worker ended: %v", err)
			case <-time.After(30 * time.Second):
				t.Fatal("the resumed worker did not stop")
			}
			a.mu.Lock()
			defer a.mu.Unlock()
			// Calls of sessions the paused worker had under way before the
			// pause are made again by the other (the lost incarnation's calls
			// are on record as its attempts); of the calls at or after the
			// pause, only those in flight at it may be answered twice.
			twice, redone := 0, 0
			for k := range a.answered {
				if a.late[k] {
					twice += b.answered[k]
				} else {
					redone += b.answered[k]
				}
			}
			t.Logf("paused worker: %d calls before the pause (%d made again by the other), %d in flight at it, %d after resuming; %d answered twice at or after the pause; the other made %d calls",
				a.pauseAt, redone, a.held, a.after, twice, b.started)
			if a.after != 0 {
				t.Errorf("the resumed worker made %d calls after its lease was taken over", a.after)
			}
			if twice > a.held {
				t.Errorf("%d requests answered twice at or after the pause, beyond the %d in flight at it", twice, a.held)
			}
			again, err := LoadPressure(context.Background(), sts[1], id)
			if err != nil {
				t.Fatal(err)
			}
			// What the resumed worker paid for is kept, as attempts of an
			// interrupted incarnation; the measures stand.
			got, want := again.Manifest.Counts, pr.Manifest.Counts
			if got.Complete != want.Complete || got.Failed != want.Failed || got.InputTokens != want.InputTokens || got.Attempts < want.Attempts {
				t.Errorf("after the resumed worker stopped, counts %+v; want %+v", got, want)
			}
			sameResults(t, "the run of two workers, one paused", again, inProcessRun(t, 5))
		})
	}
}
