package runner

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider"
)

// nCalls is a session of n calls.
type nCalls struct {
	n, done int
	entries []chat.Entry
}

func (c *nCalls) Next() *chat.Request {
	if c.done >= c.n {
		return nil
	}
	return &chat.Request{Model: "m", Messages: []chat.Message{{Role: chat.User, Content: "hello"}}}
}
func (c *nCalls) Observe(r *chat.Response) {
	c.done++
	c.entries = append(c.entries, chat.Entry{Phase: "p", Message: r.Message})
}
func (c *nCalls) Fail()                 { c.done = c.n }
func (c *nCalls) Phase() string         { return "p" }
func (c *nCalls) Entries() []chat.Entry { return c.entries }
func (c *nCalls) Stop() string          { return "" }

func nJobs(n, calls int) []Job {
	var js []Job
	for i := range n {
		js = append(js, Job{ID: string(rune('a'+i%26)) + numStr(i), Seq: i, Incarnation: 1, Spec: []byte(`{}`),
			New: func() (Conversation, error) { return &nCalls{n: calls}, nil }})
	}
	return js
}

func numStr(i int) string {
	b := []byte{}
	for ; i > 0 || len(b) == 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

// limited rate-limits every call made while more than cap calls are in
// flight, until limiting is switched off.
type limited struct {
	cap      int64
	inflight atomic.Int64
	peak     atomic.Int64
	limiting atomic.Bool
	calls    atomic.Int64
}

func (l *limited) Info() provider.Info { return provider.Info{Name: "fake", Model: "fake"} }
func (l *limited) Chat(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	n := l.inflight.Add(1)
	defer l.inflight.Add(-1)
	for p := l.peak.Load(); n > p && !l.peak.CompareAndSwap(p, n); p = l.peak.Load() {
	}
	if l.calls.Add(1) > 1500 {
		l.limiting.Store(false)
	}
	time.Sleep(200 * time.Microsecond) // latency; on the fake clock under synctest
	if l.limiting.Load() && n > l.cap {
		return nil, &provider.Error{Kind: provider.RateLimited, Status: 429, RetryAfter: time.Millisecond}
	}
	return &chat.Response{Message: chat.Message{Role: chat.Assistant, Content: "ok"}}, nil
}

// TestAdaptiveConcurrency: under rate limiting the calls in flight come down
// toward what the server accepts, and go back up once it stops limiting.
func TestAdaptiveConcurrency(t *testing.T) {
	synctest.Test(t, testAdaptiveConcurrency)
}

func testAdaptiveConcurrency(t *testing.T) {
	p := &limited{cap: 4}
	p.limiting.Store(true)
	a := NewAdaptive(32)
	sk := &sink{}
	var peakLate atomic.Int64
	stats, err := runSlice(context.Background(), context.Background(), Config{RunID: "r", Concurrency: 32, Adapt: a,
		Retry: provider.RetryPolicy{MaxAttempts: 50, BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond},
		Progress: func(Progress) {
			if !p.limiting.Load() {
				if l, _, _ := a.State(); int64(l) > peakLate.Load() {
					peakLate.Store(int64(l))
				}
			}
		}}, p, sk, nJobs(600, 4))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(sk.all()); n != 600 || stats.Failed != 0 {
		t.Fatalf("%d sessions, %d failed", n, stats.Failed)
	}
	// On the bubble's fake clock every call of a round is in flight for the
	// whole 200µs at once, whatever the machine's load, so the bound must
	// come down to what the server accepts (cap), not just toward it. The
	// exact numbers of cuts and calls still vary a little with the order in
	// which goroutines run at one instant (a rate-limited and a successful
	// call released at the same time cut then raise, or raise then cut).
	if stats.ConcurrencyCuts == 0 || stats.LowestConcurrency > int(p.cap) {
		t.Errorf("rate limiting must bring the calls in flight down to %d: lowest %d after %d cuts", p.cap, stats.LowestConcurrency, stats.ConcurrencyCuts)
	}
	if limit, _, _ := a.State(); limit != 32 {
		t.Errorf("the bound must recover to 32 once limiting stops, is %d", limit)
	}
	t.Logf("lowest %d, %d cuts, %d calls, %d failed", stats.LowestConcurrency, stats.ConcurrencyCuts, stats.Attempts, stats.Failures)
}

func TestAdaptiveBound(t *testing.T) {
	a := NewAdaptive(4)
	ctx := context.Background()
	var starts []time.Time
	for range 4 {
		s, _ := a.Acquire(ctx)
		starts = append(starts, s)
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := a.Acquire(cctx); err == nil {
		t.Fatalf("a fifth call must wait")
	}
	a.Release(starts[0], true) // cut to 2; 3 in flight
	a.Release(starts[1], true) // sent before the cut: no second cut
	if l, low, cuts := a.State(); l != 2 || low != 2 || cuts != 1 {
		t.Fatalf("limit %d lowest %d cuts %d", l, low, cuts)
	}
	a.Release(starts[2], false) // success: 3
	a.Release(starts[3], false) // 4
	if l, _, _ := a.State(); l != 4 {
		t.Errorf("limit %d after two successes, want 4", l)
	}
}

// TestBudget: sessions stop being admitted, and calls stop being made,
// before the cost would pass the limit.
func TestBudget(t *testing.T) {
	b := &Budget{Limit: 1, PerSession: 0.3, MaxOutput: 100, Price: func(in, out int) float64 { return float64(in+out) / 1000 }}
	for i := range 3 {
		if !b.Admit() {
			t.Fatalf("session %d refused", i)
		}
	}
	if b.Admit() {
		t.Fatalf("a fourth session would pass the limit")
	}
	r, ok := b.Call(300) // worst case 101+100 tokens: $0.201
	if !ok {
		t.Fatal("call refused")
	}
	b.Settle(r, 100, 50) // $0.15
	if spent, refused := b.Spent(); spent != 0.15 || !refused {
		t.Errorf("spent %v refused %v", spent, refused)
	}
	b.Settle(0, 700, 0) // $0.85 by now
	if _, ok := b.Call(300); ok {
		t.Errorf("a call whose worst case passes the limit must not be made")
	}
}
