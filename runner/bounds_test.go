package runner

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/limits"
	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/store"
)

// bulky answers each session's calls with a body of its size: s00 with
// 1 MiB, so its conversation grows past the session's limit; s01 with
// 5 MiB, past the limit at once; s02 with a few bytes. It records the
// body limit each call was given.
type bulky struct {
	mu      sync.Mutex
	calls   map[string]int
	maxBody map[string][]int64
}

func (b *bulky) Info() provider.Info { return provider.Info{Name: "bulky", Model: "bulky"} }

func (b *bulky) Chat(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	key := callKey(req)
	sess := key[:strings.IndexByte(key, '/')]
	b.mu.Lock()
	b.calls[sess]++
	b.maxBody[sess] = append(b.maxBody[sess], provider.MaxBodyOf(ctx))
	b.mu.Unlock()
	n := map[string]int{"s00": 1 << 20, "s01": 5 << 20}[sess]
	content := strings.Repeat("x", n)
	return &chat.Response{Message: chat.Message{Role: chat.Assistant, Content: content}, FinishReason: "stop",
		Usage: chat.Usage{InputTokens: 7, OutputTokens: n/4 + 1}, Raw: []byte(`{"content":"` + content + `"}`)}, nil
}

// TestSessionBytesBounded: a session whose conversation grows past
// limits.MaxSessionBytes, or whose one answer does, fails with kind
// session_too_large: the request that would pass the limit is not sent,
// the answer that passes it is not kept (its tokens are counted), neither
// is retried, and the other sessions are not touched.
func TestSessionBytesBounded(t *testing.T) {
	p := &bulky{calls: map[string]int{}, maxBody: map[string][]int64{}}
	var pl plan
	jobs := pl.jobs(10, 10, 3)
	var sk sink
	cfg := Config{RunID: "r", Concurrency: 3, Retry: provider.RetryPolicy{MaxAttempts: 3}, Sleep: (&sleeps{}).sleep}
	if _, err := runSlice(context.Background(), context.Background(), cfg, p, &sk, jobs); err != nil {
		t.Fatal(err)
	}
	got := sk.byID(t)
	stored := func(se store.Session) (n int64) {
		for _, b := range se.Artifacts {
			n += int64(len(b.Data))
		}
		return n
	}

	// s00: 1 MiB answers, each sent back in the next request: the request
	// that would pass the limit is not sent.
	g := got["s00"]
	if g.Status != store.SessionFailed || g.FailureKind != string(provider.SessionTooLarge) || !strings.Contains(g.FailureMsg, "not sent") {
		t.Errorf("s00: %s %s %q, want failed, session_too_large, not sent", g.Status, g.FailureKind, g.FailureMsg)
	}
	if p.calls["s00"] >= 10 || len(g.Attempts) != p.calls["s00"] {
		t.Errorf("s00: %d calls made, %d attempts stored", p.calls["s00"], len(g.Attempts))
	}
	if n := stored(g); n > limits.MaxSessionBytes+64<<10 {
		t.Errorf("s00 stores %d bytes, over the limit %d", n, limits.MaxSessionBytes)
	}
	if pl.conv("s00").failed != 1 {
		t.Errorf("s00: Fail called %d times", pl.conv("s00").failed)
	}

	// s01: a 5 MiB answer, past the limit at once: not kept, not retried,
	// its tokens counted.
	g = got["s01"]
	if g.Status != store.SessionFailed || g.FailureKind != string(provider.SessionTooLarge) {
		t.Errorf("s01: %s %s %q, want failed with session_too_large", g.Status, g.FailureKind, g.FailureMsg)
	}
	if p.calls["s01"] != 1 || len(g.Attempts) != 1 || g.Attempts[0].Outcome != "error" || g.Attempts[0].ErrorKind != string(provider.SessionTooLarge) || g.Attempts[0].ResponseSHA != "" {
		t.Errorf("s01: %d calls, attempts %+v, want one failed attempt without a response", p.calls["s01"], g.Attempts)
	}
	if g.OutputTokens != (5<<20)/4+1 {
		t.Errorf("s01: %d output tokens counted, want the refused answer's", g.OutputTokens)
	}
	if n := stored(g); n > 64<<10 {
		t.Errorf("s01 stores %d bytes", n)
	}
	if mb := p.maxBody["s01"]; len(mb) != 1 || mb[0] <= 0 || mb[0] >= limits.MaxSessionBytes {
		t.Errorf("s01's call was given body limit %v, want what the session had left", mb)
	}

	// s02: small answers, untouched.
	if g := got["s02"]; g.Status != store.SessionComplete || len(g.Attempts) != 3 || p.calls["s02"] != 3 {
		t.Errorf("s02: %s with %d attempts, want complete with 3", g.Status, len(g.Attempts))
	}
}

// slowSink stores slowly, and records how many sessions were stored.
type slowSink struct {
	sink
	stored atomic.Int64
}

func (s *slowSink) WriteSessions(ctx context.Context, run string, ss []store.Session) error {
	time.Sleep(20 * time.Millisecond)
	s.stored.Add(int64(len(ss)))
	return s.sink.WriteSessions(ctx, run, ss)
}

// TestPendingBytesBounded: when the store is slower than the model,
// finished sessions wait within limits.MaxPendingBytes (and the sessions
// in flight) instead of piling up in memory, and all are stored.
func TestPendingBytesBounded(t *testing.T) {
	const size = 3 << 20
	var answered atomic.Int64
	var sk slowSink
	var worst atomic.Int64
	p := &fakeProvider{before: func(ctx context.Context, req *chat.Request) {
		if held := (answered.Load() - sk.stored.Load()) * size; held > worst.Load() {
			worst.Store(held)
		}
	}}
	big := &sized{fakeProvider: p, n: size, answered: &answered}
	var pl plan
	calls := make([]int, 80)
	for i := range calls {
		calls[i] = 1
	}
	cfg := Config{RunID: "r", Concurrency: 4, Retry: provider.RetryPolicy{MaxAttempts: 1}, Sleep: (&sleeps{}).sleep}
	if _, err := runSlice(context.Background(), context.Background(), cfg, big, &sk, pl.jobs(calls...)); err != nil {
		t.Fatal(err)
	}
	if n := len(sk.all()); n != 80 {
		t.Fatalf("%d sessions stored, want 80", n)
	}
	if limit := int64(limits.MaxPendingBytes + 2*cfg.Concurrency*size); worst.Load() > limit {
		t.Errorf("%d MiB of answered sessions waited for the store, want at most %d MiB", worst.Load()>>20, limit>>20)
	}
}

// sized answers with a body of n bytes.
type sized struct {
	*fakeProvider
	n        int
	answered *atomic.Int64
}

func (s *sized) Chat(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	r, err := s.fakeProvider.Chat(ctx, req)
	if err == nil {
		r.Raw = []byte(strings.Repeat("y", s.n))
		s.answered.Add(1)
	}
	return r, err
}
