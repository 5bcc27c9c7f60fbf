package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/store"
)

// conv is a scripted protocol: it sends calls requests, one per phase, and
// keeps what it observed.
type conv struct {
	id       string
	calls    int
	sent     int
	observed []*chat.Response
	failed   int // how often Fail was called
	entries  []chat.Entry
}

// runSlice runs jobs held in a slice (Run).
func runSlice(ctx, drain context.Context, cfg Config, p provider.Provider, sink Sink, jobs []Job) (Stats, error) {
	return Run(ctx, drain, cfg, p, sink, len(jobs), slices.Values(jobs))
}

func (c *conv) Next() *chat.Request {
	if c.failed > 0 || c.sent == c.calls {
		return nil
	}
	c.sent++
	msg := chat.Message{Role: chat.User, Content: fmt.Sprintf("%s/%d", c.id, c.sent)}
	c.entries = append(c.entries, chat.Entry{Phase: c.Phase(), Message: msg})
	msgs := make([]chat.Message, len(c.entries))
	for i, e := range c.entries {
		msgs[i] = e.Message
	}
	return &chat.Request{Model: "fake-model", Messages: chat.Clone(msgs)}
}

func (c *conv) Observe(r *chat.Response) {
	c.observed = append(c.observed, r)
	c.entries = append(c.entries, chat.Entry{Phase: c.Phase(), Message: r.Message})
}

func (c *conv) Fail()         { c.failed++ }
func (c *conv) Phase() string { return fmt.Sprintf("phase%d", c.sent) }
func (c *conv) Entries() []chat.Entry {
	return append([]chat.Entry(nil), c.entries...)
}

func (c *conv) Stop() string {
	if c.failed > 0 {
		return ""
	}
	return "scripted"
}

// plan builds jobs whose conversations are kept in convs by session id.
type plan struct {
	mu    sync.Mutex
	convs map[string]*conv
	news  atomic.Int64 // Job.New calls: sessions started
}

func (p *plan) jobs(calls ...int) []Job {
	p.convs = map[string]*conv{}
	jobs := make([]Job, len(calls))
	for i, n := range calls {
		id := fmt.Sprintf("s%02d", i)
		jobs[i] = Job{ID: id, Seq: len(calls) - 1 - i, SchedulePos: i, Incarnation: 1,
			Spec: json.RawMessage(fmt.Sprintf(`{"cell":%d}`, i)),
			New: func() (Conversation, error) {
				p.news.Add(1)
				c := &conv{id: id, calls: n}
				p.mu.Lock()
				p.convs[id] = c
				p.mu.Unlock()
				return c, nil
			}}
	}
	return jobs
}

func (p *plan) conv(id string) *conv {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.convs[id]
}

// callKey names a request by session and call number ("s03/2").
func callKey(req *chat.Request) string {
	return req.Messages[len(req.Messages)-1].Content
}

// fakeProvider answers from a script: errs[key] are the failures of
// successive attempts at that call; after them the call succeeds.
type fakeProvider struct {
	mu       sync.Mutex
	errs     map[string][]error
	attempts map[string]int
	before   func(ctx context.Context, req *chat.Request) // runs before answering, outside the lock
	nilResp  map[string]bool                              // answer (nil, nil) on the first attempt
	noRaw    bool

	inflight, maxInflight atomic.Int64
	calls                 atomic.Int64
}

func (f *fakeProvider) Info() provider.Info { return provider.Info{Name: "fake", Model: "fake-model"} }

func (f *fakeProvider) Chat(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	f.calls.Add(1)
	n := f.inflight.Add(1)
	defer f.inflight.Add(-1)
	for {
		m := f.maxInflight.Load()
		if n <= m || f.maxInflight.CompareAndSwap(m, n) {
			break
		}
	}
	if f.before != nil {
		f.before(ctx, req)
	}
	key := callKey(req)
	f.mu.Lock()
	if f.attempts == nil {
		f.attempts = map[string]int{}
	}
	f.attempts[key]++
	n = int64(f.attempts[key])
	var err error
	if q := f.errs[key]; int(n) <= len(q) {
		err = q[n-1]
	}
	nilResp := f.nilResp[key] && n == 1
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if nilResp {
		return nil, nil
	}
	r := &chat.Response{
		Message:      chat.Message{Role: chat.Assistant, Content: "answer to " + key},
		FinishReason: "stop",
		Usage:        chat.Usage{InputTokens: 10 * len(req.Messages), OutputTokens: 3},
		Meta:         chat.Meta{Provider: "fake", ModelID: "fake-model-2024", Fingerprint: "fp", RequestID: fmt.Sprintf("%s#%d", key, n)},
	}
	if !f.noRaw {
		r.Raw = []byte(fmt.Sprintf(`{"raw":%q,"attempt":%d}`, key, n))
	}
	return r, nil
}

// sink records what the runner stores.
type sink struct {
	mu      sync.Mutex
	batches [][]store.Session
	err     error
}

func (s *sink) WriteSessions(_ context.Context, _ string, ss []store.Session) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	s.batches = append(s.batches, append([]store.Session(nil), ss...))
	return nil
}

func (s *sink) all() []store.Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.Session
	for _, b := range s.batches {
		out = append(out, b...)
	}
	return out
}

func (s *sink) byID(t *testing.T) map[string]store.Session {
	t.Helper()
	out := map[string]store.Session{}
	for _, se := range s.all() {
		if _, dup := out[se.ID]; dup {
			t.Errorf("session %s stored twice", se.ID)
		}
		out[se.ID] = se
	}
	return out
}

// sleeps records the delays the runner asks for without waiting.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) all() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

func config(sl *sleeps) Config {
	return Config{RunID: "run-1", Concurrency: 4, JitterSeed: 9, Sleep: sl.sleep,
		Retry: provider.RetryPolicy{MaxAttempts: 4, BaseDelay: 10 * time.Millisecond, MaxDelay: 40 * time.Millisecond}}
}

func run(t *testing.T, cfg Config, p provider.Provider, sk Sink, jobs []Job) Stats {
	t.Helper()
	st, err := runSlice(context.Background(), context.Background(), cfg, p, sk, jobs)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return st
}

// TestRunStoresEveryJobOnceWithinConcurrency runs in a synctest bubble:
// the clock is fake, so the calls' latency and the wait for a full pool cost
// no real time and do not depend on how busy the machine is.
func TestRunStoresEveryJobOnceWithinConcurrency(t *testing.T) {
	synctest.Test(t, testRunStoresEveryJobOnceWithinConcurrency)
}

func testRunStoresEveryJobOnceWithinConcurrency(t *testing.T) {
	const conc = 4
	var full sync.Once
	fullCh := make(chan struct{})
	f := &fakeProvider{}
	f.before = func(ctx context.Context, req *chat.Request) {
		// The first calls wait until the pool is full, so a pool that runs
		// fewer sessions at once than allowed never gets going. If it never
		// fills, every goroutine of the bubble ends up blocked and the fake
		// clock jumps to the timeout at once.
		if f.inflight.Load() >= conc {
			full.Do(func() { close(fullCh) })
		}
		select {
		case <-fullCh:
		case <-time.After(5 * time.Second):
			t.Error("the pool never had Concurrency calls in flight")
		}
		time.Sleep(200 * time.Microsecond) // latency, on the bubble's fake clock
	}
	var p plan
	calls := []int{1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 3, 2, 1}
	jobs := p.jobs(calls...)
	var sl sleeps
	cfg := config(&sl)
	cfg.Concurrency = conc
	cfg.BatchSize = 3
	sk := &sink{}
	st := run(t, cfg, f, sk, jobs)

	if got := f.maxInflight.Load(); got != conc {
		t.Errorf("at most %d calls were in flight at once, want exactly the concurrency %d", got, conc)
	}
	for _, b := range sk.batches {
		if len(b) > cfg.BatchSize || len(b) == 0 {
			t.Errorf("a batch of %d sessions, want 1..%d", len(b), cfg.BatchSize)
		}
	}
	got := sk.byID(t)
	if len(got) != len(jobs) {
		t.Fatalf("stored %d sessions, want %d", len(got), len(jobs))
	}
	totalCalls, tokensIn := 0, 0
	for _, j := range jobs {
		se, ok := got[j.ID]
		if !ok {
			t.Errorf("job %s not stored", j.ID)
			continue
		}
		c := p.conv(j.ID)
		if se.Seq != j.Seq || se.SchedulePos != j.SchedulePos || string(se.Spec) != string(j.Spec) {
			t.Errorf("session %s: seq %d pos %d spec %s, want %d %d %s", j.ID, se.Seq, se.SchedulePos, se.Spec, j.Seq, j.SchedulePos, j.Spec)
		}
		if se.Status != store.SessionComplete || se.Stop != "scripted" || se.FailureKind != "" {
			t.Errorf("session %s: status %q stop %q failure %q", j.ID, se.Status, se.Stop, se.FailureKind)
		}
		if len(se.Attempts) != c.calls || len(c.observed) != c.calls {
			t.Errorf("session %s: %d attempts, %d responses observed, want %d", j.ID, len(se.Attempts), len(c.observed), c.calls)
		}
		for i, a := range se.Attempts {
			if a.Call != i+1 || a.Attempt != 1 || a.Outcome != "ok" || a.Incarnation != 1 || a.Phase != fmt.Sprintf("phase%d", i+1) {
				t.Errorf("session %s attempt %d: %+v", j.ID, i, a)
			}
		}
		if !reflect.DeepEqual(se.Messages, c.Entries()) || len(se.Messages) != 2*c.calls {
			t.Errorf("session %s: messages %+v, want the conversation's %d entries", j.ID, se.Messages, 2*c.calls)
		}
		if se.Started.IsZero() || se.Finished.Before(se.Started) {
			t.Errorf("session %s: started %v finished %v", j.ID, se.Started, se.Finished)
		}
		in := 0
		for k := 1; k <= c.calls; k++ {
			in += 10 * (2*k - 1)
		}
		if se.InputTokens != in || se.OutputTokens != 3*c.calls {
			t.Errorf("session %s: tokens %d/%d, want %d/%d", j.ID, se.InputTokens, se.OutputTokens, in, 3*c.calls)
		}
		totalCalls += c.calls
		tokensIn += in
	}
	if p.news.Load() != int64(len(jobs)) {
		t.Errorf("%d sessions started for %d jobs", p.news.Load(), len(jobs))
	}
	if st.Done != len(jobs) || st.Total != len(jobs) || st.Failed != 0 || st.Interrupted != 0 ||
		st.Attempts != totalCalls || st.Failures != 0 || st.InputTokens != tokensIn || st.OutputTokens != 3*totalCalls {
		t.Errorf("stats %+v, want %d done, %d attempts, %d input tokens", st, len(jobs), totalCalls, tokensIn)
	}
	if len(sl.all()) != 0 {
		t.Errorf("slept %v without any failure", sl.all())
	}
}

func TestRunWithStore(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	if err := st.CreateRun(ctx, store.Run{ID: "run-1", Protocol: "fake", Created: time.Now(), Status: store.RunRunning,
		DeckName: "d", DeckHash: "h", Model: "fake-model", Seed: "1", Planned: 12, Manifest: json.RawMessage(`{}`)}, "src", []byte("deck")); err != nil {
		t.Fatal(err)
	}
	var p plan
	jobs := p.jobs(2, 1, 3, 2, 1, 3, 2, 1, 3, 2, 1, 3)
	f := &fakeProvider{errs: map[string][]error{
		"s01/1": {&provider.Error{Kind: provider.Auth, Status: 401}},
		"s02/2": {&provider.Error{Kind: provider.Transient, Status: 502}},
		"s05/3": {&provider.Error{Kind: provider.Timeout}, &provider.Error{Kind: provider.Timeout}, &provider.Error{Kind: provider.Timeout}, &provider.Error{Kind: provider.Timeout}},
	}}
	var sl sleeps
	stats := run(t, config(&sl), f, st, jobs)
	got, err := st.Sessions(ctx, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(jobs) {
		t.Fatalf("store holds %d sessions, want %d", len(got), len(jobs))
	}
	for i, se := range got {
		if se.Seq != i {
			t.Errorf("session %d has seq %d", i, se.Seq)
		}
		want := store.SessionComplete
		if se.ID == "s01" || se.ID == "s05" {
			want = store.SessionFailed
		}
		if se.Status != want {
			t.Errorf("session %s: status %q, want %q", se.ID, se.Status, want)
		}
		for _, a := range se.Attempts {
			for _, sha := range []string{a.RequestSHA, a.ResponseSHA} {
				if sha == "" {
					continue
				}
				if _, err := st.Artifact(ctx, "run-1", sha); err != nil {
					t.Errorf("session %s: %v", se.ID, err)
				}
			}
		}
		trace, err := st.Artifact(ctx, "run-1", se.TraceSHA)
		if err != nil {
			t.Fatalf("session %s trace: %v", se.ID, err)
		}
		var tr struct {
			ID string `json:"session_id"`
		}
		if err := json.Unmarshal(trace, &tr); err != nil || tr.ID != se.ID {
			t.Errorf("session %s: trace %s (%v)", se.ID, trace, err)
		}
	}
	byID := map[string]store.Session{}
	for _, se := range got {
		byID[se.ID] = se
	}
	if n := len(byID["s02"].Attempts); n != 4 {
		t.Errorf("s02 has %d stored attempts, want 4 (2 calls, one retried)", n)
	}
	if n := len(byID["s05"].Attempts); n != 6 {
		t.Errorf("s05 has %d stored attempts, want 6 (2 calls ok, the third failing 4 times)", n)
	}
	if stats.Done != 12 || stats.Failed != 2 {
		t.Errorf("stats %+v", stats)
	}
}

func TestRunRetriesInfrastructureFailures(t *testing.T) {
	for _, tc := range []struct {
		kind    provider.Kind
		status  int
		nilResp bool // the second failure is a (nil, nil) answer
	}{
		{kind: provider.RateLimited, status: 429},
		{kind: provider.Transient, status: 503},
		{kind: provider.Timeout},
		{kind: provider.ConnReset},
		{kind: provider.Malformed, status: 200},
		{kind: provider.Transient, status: 500, nilResp: true},
	} {
		name := string(tc.kind)
		if tc.nilResp {
			name += "+nil-response"
		}
		t.Run(name, func(t *testing.T) {
			var p plan
			jobs := p.jobs(2)
			jobs[0].Incarnation = 3
			errs := []error{
				&provider.Error{Kind: tc.kind, Status: tc.status, Msg: "boom 1"},
				fmt.Errorf("wrapped: %w", &provider.Error{Kind: tc.kind, Status: tc.status, Msg: "boom 2"}),
			}
			f := &fakeProvider{errs: map[string][]error{"s00/1": errs}}
			if tc.nilResp {
				// First attempt: a nil response; then one scripted error.
				f.errs = map[string][]error{"s00/1": {nil, errs[0]}}
				f.nilResp = map[string]bool{"s00/1": true}
			}
			var sl sleeps
			sk := &sink{}
			st := run(t, config(&sl), f, sk, jobs)
			se := sk.byID(t)["s00"]
			c := p.conv("s00")
			if se.Status != store.SessionComplete || c.failed != 0 || len(c.observed) != 2 {
				t.Fatalf("status %q, Fail called %d times, %d responses observed", se.Status, c.failed, len(c.observed))
			}
			if len(se.Attempts) != 4 {
				t.Fatalf("%d attempts stored, want 4: %+v", len(se.Attempts), se.Attempts)
			}
			wantMsgs := []string{"boom 1", "boom 2"}
			wantKinds := []provider.Kind{tc.kind, tc.kind}
			wantStatus := []int{tc.status, tc.status}
			if tc.nilResp {
				wantMsgs = []string{"provider returned no response", "boom 1"}
				wantKinds = []provider.Kind{provider.Malformed, tc.kind}
				wantStatus = []int{0, tc.status}
			}
			for i, a := range se.Attempts[:2] {
				if a.Call != 1 || a.Attempt != i+1 || a.Incarnation != 3 || a.Phase != "phase1" {
					t.Errorf("failed attempt %d numbered %+v", i, a)
				}
				if a.Outcome != "error" || a.ErrorKind != string(wantKinds[i]) || a.HTTPStatus != wantStatus[i] ||
					!strings.Contains(a.ErrorMsg, wantMsgs[i]) || !strings.HasPrefix(a.ErrorMsg, string(wantKinds[i])) {
					t.Errorf("failed attempt %d stored as %+v", i, a)
				}
				if a.ResponseSHA != "" || a.InputTokens != 0 {
					t.Errorf("failed attempt %d has a response: %+v", i, a)
				}
			}
			ok := se.Attempts[2]
			if ok.Call != 1 || ok.Attempt != 3 || ok.Outcome != "ok" || ok.ErrorKind != "" || ok.ResponseSHA == "" || ok.RequestID != "s00/1#3" {
				t.Errorf("successful retry stored as %+v", ok)
			}
			if ok.Started.Before(se.Attempts[1].Started) || se.Attempts[1].Started.Before(se.Attempts[0].Started) {
				t.Errorf("attempts not in time order: %+v", se.Attempts[:3])
			}
			if se.Attempts[0].RequestSHA != se.Attempts[1].RequestSHA || se.Attempts[1].RequestSHA != ok.RequestSHA {
				t.Errorf("attempts of one call have different request hashes: %+v", se.Attempts[:3])
			}
			second := se.Attempts[3]
			if second.Call != 2 || second.Attempt != 1 || second.Outcome != "ok" || second.RequestSHA == ok.RequestSHA {
				t.Errorf("second call stored as %+v", second)
			}
			if n := len(sl.all()); n != 2 {
				t.Errorf("slept %d times, want 2 (before each retry)", n)
			}
			if st.Attempts != 4 || st.Failures != 2 || st.Failed != 0 || st.Done != 1 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

func TestRunGivesUpAfterMaxAttempts(t *testing.T) {
	var p plan
	jobs := p.jobs(3, 1)
	fail := &provider.Error{Kind: provider.ConnReset, Msg: "reset"}
	f := &fakeProvider{errs: map[string][]error{"s00/2": {fail, fail, fail, fail, fail, fail}}}
	var sl sleeps
	sk := &sink{}
	cfg := config(&sl)
	cfg.Retry.MaxAttempts = 3
	st := run(t, cfg, f, sk, jobs)
	got := sk.byID(t)
	se, ok := got["s00"]
	if !ok {
		t.Fatal("a session whose call failed for good was dropped")
	}
	if se.Status != store.SessionFailed || se.FailedPhase != "phase2" || se.FailureKind != string(provider.ConnReset) ||
		!strings.Contains(se.FailureMsg, "reset") {
		t.Errorf("session stored as status %q phase %q kind %q msg %q", se.Status, se.FailedPhase, se.FailureKind, se.FailureMsg)
	}
	if len(se.Attempts) != 4 {
		t.Fatalf("%d attempts, want 1 ok + 3 failed: %+v", len(se.Attempts), se.Attempts)
	}
	for i, a := range se.Attempts[1:] {
		if a.Call != 2 || a.Attempt != i+1 || a.Outcome != "error" || a.ErrorKind != string(provider.ConnReset) {
			t.Errorf("attempt %+v", a)
		}
	}
	c := p.conv("s00")
	if c.failed != 1 || len(c.observed) != 1 {
		t.Errorf("Fail called %d times, %d responses observed; want 1 and 1", c.failed, len(c.observed))
	}
	if len(se.Messages) != 3 || se.Stop != "" {
		t.Errorf("messages %+v stop %q: want the transcript up to the failed call", se.Messages, se.Stop)
	}
	if f.attempts["s00/2"] != 3 || f.attempts["s00/3"] != 0 {
		t.Errorf("provider saw %v", f.attempts)
	}
	if n := len(sl.all()); n != 2 {
		t.Errorf("slept %d times, want 2", n)
	}
	if got["s01"].Status != store.SessionComplete {
		t.Errorf("the other session: %q", got["s01"].Status)
	}
	if st.Done != 2 || st.Failed != 1 || st.Attempts != 5 || st.Failures != 3 {
		t.Errorf("stats %+v", st)
	}
}

func TestRunDoesNotRetryOtherFailures(t *testing.T) {
	for _, err := range []error{
		&provider.Error{Kind: provider.BadRequest, Status: 400, Msg: "bad field"},
		&provider.Error{Kind: provider.Auth, Status: 401, Msg: "bad key"},
		&provider.Error{Kind: provider.ContextLength, Status: 400, Msg: "too long"},
		errors.New("something odd"),
	} {
		kind := provider.Classify(context.Background(), err).Kind
		t.Run(string(kind), func(t *testing.T) {
			var p plan
			jobs := p.jobs(2)
			f := &fakeProvider{errs: map[string][]error{"s00/1": {err}}}
			var sl sleeps
			sk := &sink{}
			st := run(t, config(&sl), f, sk, jobs)
			se := sk.byID(t)["s00"]
			if len(se.Attempts) != 1 {
				t.Fatalf("%d attempts, want 1: %+v", len(se.Attempts), se.Attempts)
			}
			a := se.Attempts[0]
			if a.Outcome != "error" || a.ErrorKind != string(kind) || !strings.Contains(a.ErrorMsg, err.Error()[strings.LastIndex(err.Error(), " ")+1:]) {
				t.Errorf("attempt %+v", a)
			}
			if se.Status != store.SessionFailed || se.FailedPhase != "phase1" || se.FailureKind != string(kind) || se.FailureMsg != a.ErrorMsg {
				t.Errorf("session status %q phase %q kind %q msg %q", se.Status, se.FailedPhase, se.FailureKind, se.FailureMsg)
			}
			c := p.conv("s00")
			if c.failed != 1 || len(c.observed) != 0 {
				t.Errorf("Fail called %d times, %d observed", c.failed, len(c.observed))
			}
			if f.calls.Load() != 1 || len(sl.all()) != 0 {
				t.Errorf("%d provider calls, slept %v: want one call and no wait", f.calls.Load(), sl.all())
			}
			if st.Failed != 1 || st.Done != 1 || st.Failures != 1 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

func TestRunBackoff(t *testing.T) {
	// Every call fails until the policy gives up; 50 sessions give 50
	// samples of each delay.
	const n = 50
	calls := make([]int, n)
	for i := range calls {
		calls[i] = 1
	}
	var p plan
	jobs := p.jobs(calls...)
	errs := map[string][]error{}
	for _, j := range jobs {
		errs[j.ID+"/1"] = []error{
			&provider.Error{Kind: provider.Transient}, &provider.Error{Kind: provider.Transient},
			&provider.Error{Kind: provider.Transient}, &provider.Error{Kind: provider.Transient},
			&provider.Error{Kind: provider.Transient}, &provider.Error{Kind: provider.Transient},
		}
	}
	// The sleep hook cannot see the session, so sessions run one at a time
	// and each records which one is current.
	var mu sync.Mutex
	per := map[string][]time.Duration{}
	var cur atomic.Value
	f := &fakeProvider{errs: errs}
	cfg := Config{RunID: "run-1", Concurrency: 1, JitterSeed: 9,
		Retry: provider.RetryPolicy{MaxAttempts: 6, BaseDelay: 10 * time.Millisecond, MaxDelay: 40 * time.Millisecond}}
	for i := range jobs {
		newConv := jobs[i].New
		id := jobs[i].ID
		jobs[i].New = func() (Conversation, error) { cur.Store(id); return newConv() }
	}
	cfg.Sleep = func(ctx context.Context, d time.Duration) error {
		id := cur.Load().(string)
		mu.Lock()
		per[id] = append(per[id], d)
		mu.Unlock()
		return ctx.Err()
	}
	sk := &sink{}
	run(t, cfg, f, sk, jobs)

	caps := []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond, 40 * time.Millisecond, 40 * time.Millisecond}
	maxSeen := make([]time.Duration, len(caps))
	for _, j := range jobs {
		ds := per[j.ID]
		if len(ds) != len(caps) {
			t.Fatalf("session %s slept %d times, want %d", j.ID, len(ds), len(caps))
		}
		for k, d := range ds {
			if d <= 0 || d > caps[k] {
				t.Errorf("session %s: delay %d is %v, want within (0, %v]", j.ID, k+1, d, caps[k])
			}
			maxSeen[k] = max(maxSeen[k], d)
		}
		if se := sk.byID(t)[j.ID]; se.Status != store.SessionFailed || len(se.Attempts) != 6 {
			t.Errorf("session %s: status %q with %d attempts", j.ID, se.Status, len(se.Attempts))
		}
	}
	// The delays grow: the longest of 50 jittered waits is near its cap.
	for k, m := range maxSeen {
		if m <= caps[k]/2 {
			t.Errorf("delay %d: longest of %d was %v, want above %v", k+1, n, m, caps[k]/2)
		}
	}
	if maxSeen[1] <= caps[0] || maxSeen[2] <= caps[1] {
		t.Errorf("delays do not grow: longest per retry %v", maxSeen)
	}

	// The same jitter seed gives the same delays, one session at a time.
	first := per
	per = map[string][]time.Duration{}
	p2 := plan{}
	jobs2 := p2.jobs(calls...)
	for i := range jobs2 {
		newConv := jobs2[i].New
		id := jobs2[i].ID
		jobs2[i].New = func() (Conversation, error) { cur.Store(id); return newConv() }
	}
	f.attempts = nil
	run(t, cfg, f, &sink{}, jobs2)
	if !reflect.DeepEqual(first, per) {
		t.Error("the same JitterSeed gave different delays")
	}
}

func TestRunHonoursRetryAfter(t *testing.T) {
	var p plan
	jobs := p.jobs(1)
	f := &fakeProvider{errs: map[string][]error{"s00/1": {
		&provider.Error{Kind: provider.RateLimited, Status: 429, RetryAfter: 7 * time.Second},
		&provider.Error{Kind: provider.RateLimited, Status: 429, RetryAfter: 15 * time.Millisecond},
	}}}
	var sl sleeps
	sk := &sink{}
	run(t, config(&sl), f, sk, jobs)
	ds := sl.all()
	if len(ds) != 2 {
		t.Fatalf("slept %v, want two waits", ds)
	}
	if ds[0] != 7*time.Second {
		t.Errorf("first wait %v, want the Retry-After of 7s", ds[0])
	}
	if ds[1] < 15*time.Millisecond || ds[1] > 20*time.Millisecond {
		t.Errorf("second wait %v, want at least the Retry-After of 15ms and at most the 20ms delay", ds[1])
	}
	if se := sk.byID(t)["s00"]; se.Status != store.SessionComplete || len(se.Attempts) != 3 {
		t.Errorf("session %q with %d attempts", se.Status, len(se.Attempts))
	}
}

// blocker is a provider whose calls report that they started and then wait
// for release or for their context.
type blocker struct {
	fakeProvider
	started chan string
	release chan struct{}
	err     func(ctx context.Context) error // what a call returns once its context is done
}

func newBlocker() *blocker {
	b := &blocker{started: make(chan string, 100), release: make(chan struct{})}
	b.before = func(ctx context.Context, req *chat.Request) {
		b.started <- callKey(req)
		select {
		case <-b.release:
		case <-ctx.Done():
		}
	}
	return b
}

func (b *blocker) Chat(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	r, err := b.fakeProvider.Chat(ctx, req)
	if err != nil && ctx.Err() != nil && b.err != nil {
		return nil, b.err(ctx)
	}
	return r, err
}

func waitStarted(t *testing.T, b *blocker, n int) []string {
	t.Helper()
	var keys []string
	for range n {
		select {
		case k := <-b.started:
			keys = append(keys, k)
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d calls started, want %d", len(keys), n)
		}
	}
	return keys
}

// blockedRun is a Run of six two-call sessions against a blocker, started
// in a goroutine of the test's synctest bubble.
type blockedRun struct {
	b    *blocker
	p    plan
	sl   sleeps
	sk   sink
	jobs []Job
	done chan struct{}
	st   Stats
	err  error
}

func startBlocked(ctx, drain context.Context, concurrency int, callErr func(context.Context) error) *blockedRun {
	r := &blockedRun{b: newBlocker(), done: make(chan struct{})}
	r.b.err = callErr
	r.jobs = r.p.jobs(2, 2, 2, 2, 2, 2)
	cfg := config(&r.sl)
	cfg.Concurrency = concurrency
	go func() {
		r.st, r.err = runSlice(ctx, drain, cfg, r.b, &r.sk, r.jobs)
		close(r.done)
	}()
	return r
}

// wait waits for Run to return and fails the test if it is stuck or failed.
func (r *blockedRun) wait(t *testing.T, after string) Stats {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(5 * time.Second): // on the fake clock: fires only if Run is stuck
		t.Fatalf("Run did not return after %s", after)
	}
	if r.err != nil {
		t.Fatalf("Run: %v", r.err)
	}
	return r.st
}

// TestRunCancelInterruptsSessionsInFlight runs each case in a synctest
// bubble, so it can wait until the dispatcher is blocked on a free slot
// (synctest.Wait) instead of sleeping and hoping it got there.
func TestRunCancelInterruptsSessionsInFlight(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  func(ctx context.Context) error
		kind provider.Kind
	}{
		{"context error", nil, provider.Canceled},
		// A provider that reports its own kind once the run is cancelled is
		// still not retried.
		{"transient error", func(context.Context) error { return &provider.Error{Kind: provider.Transient, Msg: "aborted"} }, provider.Transient},
	} {
		// Each case runs in its own bubble.
		body := func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r := startBlocked(ctx, context.Background(), 3, tc.err)
			b, p, jobs := r.b, &r.p, r.jobs
			waitStarted(t, b, 3)
			// Every goroutine of the bubble is now blocked: the three calls
			// on their release, the writer on its results, and the
			// dispatcher on a free slot for the fourth session.
			synctest.Wait()
			if n, in := p.news.Load(), b.inflight.Load(); n != 3 || in != 3 {
				t.Fatalf("%d sessions started, %d calls in flight before cancelling, want 3 and 3", n, in)
			}
			cancel()
			st := r.wait(t, "cancellation")
			got := r.sk.byID(t)
			if len(got) != 3 {
				t.Errorf("stored %d sessions (%v), want the 3 in flight", len(got), keys(got))
			}
			if n := p.news.Load(); n != 3 {
				t.Errorf("%d sessions started, want 3: none may start after cancellation", n)
			}
			for id, se := range got {
				if se.Status != store.SessionInterrupted {
					t.Errorf("session %s: status %q, want interrupted", id, se.Status)
				}
				if len(se.Attempts) == 0 {
					t.Errorf("session %s: no attempts kept", id)
					continue
				}
				a := se.Attempts[len(se.Attempts)-1]
				if len(se.Attempts) != 1 || a.Outcome != "error" || a.ErrorKind != string(tc.kind) {
					t.Errorf("session %s: attempts %+v, want one %s error", id, se.Attempts, tc.kind)
				}
				if _, ok := se.Artifacts[a.RequestSHA]; !ok {
					t.Errorf("session %s: the request of the interrupted attempt is not kept", id)
				}
			}
			if slept := r.sl.all(); len(slept) != 0 {
				t.Errorf("slept %v after cancellation: a retry was prepared", slept)
			}
			if st.Interrupted != len(got) || st.Done != 0 || st.Total != len(jobs) {
				t.Errorf("stats %+v", st)
			}
		}
		t.Run(tc.name, func(t *testing.T) { synctest.Test(t, body) })
	}
}

func keys(m map[string]store.Session) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestRunCancelDuringBackoff(t *testing.T) {
	var p plan
	jobs := p.jobs(1)
	f := &fakeProvider{errs: map[string][]error{"s00/1": {&provider.Error{Kind: provider.Transient, Status: 503}}}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := config(nil)
	slept := 0
	cfg.Sleep = func(ctx context.Context, d time.Duration) error {
		slept++
		cancel()
		<-ctx.Done()
		return ctx.Err()
	}
	sk := &sink{}
	st, err := runSlice(ctx, context.Background(), cfg, f, sk, jobs)
	if err != nil {
		t.Fatal(err)
	}
	se := sk.byID(t)["s00"]
	if se.Status != store.SessionInterrupted || len(se.Attempts) != 1 || se.Attempts[0].ErrorKind != string(provider.Transient) {
		t.Errorf("session %q attempts %+v, want interrupted with the one failed attempt", se.Status, se.Attempts)
	}
	if f.calls.Load() != 1 || slept != 1 {
		t.Errorf("%d calls, %d sleeps: no retry may follow cancellation", f.calls.Load(), slept)
	}
	if st.Interrupted != 1 || st.Done != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestRunDrainLetsCallsInFlightFinish: draining (a first Ctrl-C) starts no
// session and sends no call, not even the next turn of a session in
// flight; the calls in flight finish and are kept, their sessions stored as
// interrupted for a resume. It runs in a synctest bubble, like
// TestRunCancelInterruptsSessionsInFlight.
func TestRunDrainLetsCallsInFlightFinish(t *testing.T) {
	synctest.Test(t, testRunDrainLetsCallsInFlightFinish)
}

func testRunDrainLetsCallsInFlightFinish(t *testing.T) {
	drain, stopNew := context.WithCancel(context.Background())
	defer stopNew()
	r := startBlocked(context.Background(), drain, 2, nil)
	b, p, jobs := r.b, &r.p, r.jobs
	first := waitStarted(t, b, 2)
	// The two calls wait for their release and the dispatcher for a free
	// slot for the third session: the bubble is blocked.
	synctest.Wait()
	if n, in := p.news.Load(), b.inflight.Load(); n != 2 || in != 2 {
		t.Fatalf("%d sessions started, %d calls in flight before draining, want 2 and 2", n, in)
	}
	stopNew()
	close(b.release)
	st := r.wait(t, "draining")
	if n := p.news.Load(); n != 2 {
		t.Errorf("%d sessions started, want the 2 in flight when draining began", n)
	}
	got := r.sk.byID(t)
	if len(got) != 2 {
		t.Errorf("stored %v, want the 2 sessions in flight (%v)", keys(got), first)
	}
	for _, k := range first {
		id := strings.SplitN(k, "/", 2)[0]
		se, ok := got[id]
		if !ok {
			t.Errorf("session %s, in flight when draining began, was not stored", id)
			continue
		}
		if se.Status != store.SessionInterrupted || len(se.Attempts) != 1 || se.Attempts[0].Outcome != "ok" {
			t.Errorf("session %s: status %q with %d attempts, want interrupted with its first call answered and kept", id, se.Status, len(se.Attempts))
		}
	}
	if n := b.calls.Load(); n != 2 {
		t.Errorf("%d calls sent, want only the 2 in flight when draining began", n)
	}
	if st.Interrupted != len(got) || st.Total != len(jobs) || st.Done != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestRunArtifacts(t *testing.T) {
	var p plan
	jobs := p.jobs(2, 1)
	f := &fakeProvider{errs: map[string][]error{"s00/2": {&provider.Error{Kind: provider.Timeout}}}}
	var sl sleeps
	sk := &sink{}
	run(t, config(&sl), f, sk, jobs)
	got := sk.byID(t)

	// Without a raw body the response is stored as its JSON encoding.
	g := &fakeProvider{noRaw: true}
	var p2 plan
	sk2 := &sink{}
	run(t, config(&sl), g, sk2, p2.jobs(1))
	got["noraw"] = sk2.byID(t)["s00"]

	for id, se := range got {
		want := map[string]bool{}
		for sha, b := range se.Artifacts {
			if store.ArtifactID(b.Data) != sha {
				t.Errorf("session %s: artifact %s holds data hashing to %s", id, sha, store.ArtifactID(b.Data))
			}
			if b.Encoding != "identity" && b.Encoding != "deflate" {
				t.Errorf("session %s: artifact encoding %q", id, b.Encoding)
			}
		}
		for _, a := range se.Attempts {
			want[a.RequestSHA] = true
			blob, ok := se.Artifacts[a.RequestSHA]
			if !ok {
				t.Fatalf("session %s call %d attempt %d: request %s not among the artifacts", id, a.Call, a.Attempt, a.RequestSHA)
			}
			var req chat.Request
			if err := json.Unmarshal(blob.Data, &req); err != nil || req.Model != "fake-model" ||
				callKey(&req) != fmt.Sprintf("s%s/%d", idNum(id), a.Call) {
				t.Errorf("session %s call %d: request artifact %s (%v)", id, a.Call, blob.Data, err)
			}
			if a.Outcome != "ok" {
				if a.ResponseSHA != "" {
					t.Errorf("session %s: failed attempt has a response %s", id, a.ResponseSHA)
				}
				continue
			}
			want[a.ResponseSHA] = true
			resp, ok := se.Artifacts[a.ResponseSHA]
			if !ok {
				t.Fatalf("session %s call %d: response %s not among the artifacts", id, a.Call, a.ResponseSHA)
			}
			if id == "noraw" {
				var r chat.Response
				if err := json.Unmarshal(resp.Data, &r); err != nil || r.Message.Content != "answer to s00/1" || r.Meta.RequestID != a.RequestID {
					t.Errorf("encoded response artifact %s (%v)", resp.Data, err)
				}
			} else if w := fmt.Sprintf(`{"raw":%q,"attempt":%d}`, fmt.Sprintf("%s/%d", id, a.Call), a.Attempt); string(resp.Data) != w {
				t.Errorf("session %s: response artifact %s, want the raw body %s", id, resp.Data, w)
			}
		}
		want[se.TraceSHA] = true
		if len(se.Artifacts) != len(want) {
			t.Errorf("session %s: %d artifacts, want %d (requests, responses, trace)", id, len(se.Artifacts), len(want))
		}
		trace, ok := se.Artifacts[se.TraceSHA]
		if !ok {
			t.Fatalf("session %s: trace %q not among the artifacts", id, se.TraceSHA)
		}
		var tr struct {
			ID       string          `json:"session_id"`
			Spec     json.RawMessage `json:"spec"`
			Status   string          `json:"status"`
			Messages int             `json:"messages"`
			Attempts []store.Attempt `json:"attempts"`
		}
		if err := json.Unmarshal(trace.Data, &tr); err != nil {
			t.Fatalf("session %s: trace is not JSON: %v", id, err)
		}
		if tr.ID != se.ID || tr.Status != se.Status || string(tr.Spec) != string(se.Spec) || tr.Messages != len(se.Messages) || len(tr.Attempts) != len(se.Attempts) {
			t.Errorf("session %s: trace %s", id, trace.Data)
		}
		for i, a := range tr.Attempts {
			if a.RequestSHA != se.Attempts[i].RequestSHA || a.ResponseSHA != se.Attempts[i].ResponseSHA {
				t.Errorf("session %s: trace attempt %d %+v, want %+v", id, i, a, se.Attempts[i])
			}
		}
	}
	s0 := got["s00"]
	if len(s0.Attempts) != 3 || s0.Attempts[1].RequestSHA != s0.Attempts[2].RequestSHA || s0.Attempts[0].RequestSHA == s0.Attempts[1].RequestSHA {
		t.Errorf("s00 attempts %+v: want a retried second call sharing its request", s0.Attempts)
	}
}

// idNum returns the numeric part of a session id ("s01" -> "01").
func idNum(id string) string {
	if id == "noraw" {
		return "00"
	}
	return strings.TrimPrefix(id, "s")
}

func TestRunProgress(t *testing.T) {
	var p plan
	jobs := p.jobs(1, 2, 1, 2, 1, 2, 1, 2)
	auth := &provider.Error{Kind: provider.Auth}
	busy := &provider.Error{Kind: provider.RateLimited}
	f := &fakeProvider{errs: map[string][]error{
		"s01/2": {auth},
		"s04/1": {busy, busy},
		"s06/1": {busy, auth},
		"s07/1": {busy, busy, busy, busy},
	}}
	var sl sleeps
	cfg := config(&sl)
	cfg.BatchSize = 1
	var mu sync.Mutex
	var reports []Progress
	cfg.Progress = func(pr Progress) {
		mu.Lock()
		reports = append(reports, pr)
		mu.Unlock()
	}
	st := run(t, cfg, f, &sink{}, jobs)
	if len(reports) == 0 {
		t.Fatal("Progress never called")
	}
	for i := 1; i < len(reports); i++ {
		a, b := reports[i-1], reports[i]
		if b.Done < a.Done || b.Failed < a.Failed || b.Attempts < a.Attempts || b.Failures < a.Failures || b.Elapsed < a.Elapsed {
			t.Errorf("progress went backwards: %+v then %+v", a, b)
		}
	}
	last := reports[len(reports)-1]
	// 12 planned calls. s01's second call fails for good (1 attempt); s04's
	// only call takes 3 attempts (+2); s06's only call 2 (+1); s07 fails
	// its first call 4 times and never makes its second (+2).
	want := Progress{Done: 8, Total: 8, Failed: 3, Attempts: 12 + 2 + 1 + 2, Failures: 1 + 2 + 2 + 4}
	last.Elapsed = 0
	if last != want {
		t.Errorf("last progress %+v, want %+v", last, want)
	}
	st.Elapsed = 0
	if st.Progress != want {
		t.Errorf("returned stats %+v, want %+v", st.Progress, want)
	}
	if len(reports) != len(jobs) {
		t.Errorf("%d progress reports with a batch size of 1, want %d", len(reports), len(jobs))
	}
}

// logger collects the JSONL log.
type logger struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	flushes int
	err     error
}

func (l *logger) WriteLines(b []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !bytes.HasSuffix(b, []byte("\n")) {
		return fmt.Errorf("lines %q do not end in a newline", b)
	}
	l.buf.Write(b)
	return l.err
}

func (l *logger) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushes++
	return nil
}

func TestRunLog(t *testing.T) {
	var p plan
	jobs := p.jobs(1, 2, 3, 1)
	f := &fakeProvider{errs: map[string][]error{
		"s01/1": {&provider.Error{Kind: provider.Transient, Status: 502}},
		"s03/1": {&provider.Error{Kind: provider.BadRequest, Status: 400}},
	}}
	var sl sleeps
	cfg := config(&sl)
	lg := &logger{}
	cfg.Log = lg
	sk := &sink{}
	st := run(t, cfg, f, sk, jobs)
	stored := sk.byID(t)

	lines := strings.Split(strings.TrimSuffix(lg.buf.String(), "\n"), "\n")
	if want := st.Attempts + len(jobs); len(lines) != want {
		t.Fatalf("%d log lines, want %d (one per attempt and per session):\n%s", len(lines), want, lg.buf.String())
	}
	attempts := map[string]int{}
	sessionsSeen := map[string]bool{}
	for _, line := range lines {
		var rec struct {
			Type    string `json:"type"`
			Run     string `json:"run_id"`
			Session string `json:"session_id"`
			Status  string `json:"status"`
			Trace   string `json:"trace_sha256"`
			Failure string `json:"failure_kind"`
			Call    int    `json:"call"`
			Attempt int    `json:"attempt"`
			Outcome string `json:"outcome"`
			Request string `json:"request_sha256"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
		if rec.Run != "run-1" {
			t.Errorf("log line %s: run id %q", line, rec.Run)
		}
		se, ok := stored[rec.Session]
		if !ok {
			t.Errorf("log line for unknown session: %s", line)
			continue
		}
		switch rec.Type {
		case "attempt":
			if sessionsSeen[rec.Session] {
				t.Errorf("attempt logged after its session's line: %s", line)
			}
			a := se.Attempts[attempts[rec.Session]]
			if rec.Call != a.Call || rec.Attempt != a.Attempt || rec.Outcome != a.Outcome || rec.Request != a.RequestSHA {
				t.Errorf("attempt line %s, want %+v", line, a)
			}
			attempts[rec.Session]++
		case "session":
			if sessionsSeen[rec.Session] {
				t.Errorf("session logged twice: %s", line)
			}
			sessionsSeen[rec.Session] = true
			if rec.Status != se.Status || rec.Trace != se.TraceSHA || rec.Failure != se.FailureKind {
				t.Errorf("session line %s, want status %q trace %q failure %q", line, se.Status, se.TraceSHA, se.FailureKind)
			}
			if attempts[rec.Session] != len(se.Attempts) {
				t.Errorf("session %s: %d attempt lines before its session line, want %d", rec.Session, attempts[rec.Session], len(se.Attempts))
			}
		default:
			t.Errorf("log line of type %q", rec.Type)
		}
	}
	if len(sessionsSeen) != len(jobs) {
		t.Errorf("sessions logged: %v", sessionsSeen)
	}
	if lg.flushes == 0 {
		t.Error("the log was never flushed")
	}
	// What Run logs is what LogLines gives a resumed run to complete a log
	// with: the store's format, session by session in storage order.
	var want []byte
	for _, se := range sk.all() {
		want = append(want, LogLines(cfg.RunID, se)...)
	}
	if lg.buf.String() != string(want) {
		t.Errorf("Run logged:\n%s\nLogLines of the stored sessions:\n%s", lg.buf.String(), want)
	}
}

func TestRunReportsStorageFailures(t *testing.T) {
	var p plan
	jobs := p.jobs(1, 1, 1, 1, 1)
	boom := errors.New("disk full")
	var sl sleeps
	cfg := config(&sl)
	cfg.BatchSize = 2
	_, err := runSlice(context.Background(), context.Background(), cfg, &fakeProvider{}, &sink{err: boom}, jobs)
	if !errors.Is(err, boom) {
		t.Errorf("Run = %v, want the sink's error", err)
	}

	lg := &logger{err: errors.New("log closed")}
	cfg.Log = lg
	sk := &sink{}
	_, err = runSlice(context.Background(), context.Background(), cfg, &fakeProvider{}, sk, p.jobs(1, 1))
	if err == nil || !strings.Contains(err.Error(), "log closed") {
		t.Errorf("Run with a failing log = %v, want its error", err)
	}
	if len(sk.all()) != 2 {
		t.Errorf("a failing log lost stored sessions: %d stored", len(sk.all()))
	}
}

// A run whose results cannot be stored stops: sessions it could not store
// are not worth paying for.
func TestRunStopsWhenResultsCannotBeStored(t *testing.T) {
	var p plan
	n := make([]int, 200)
	for i := range n {
		n[i] = 1
	}
	var sl sleeps
	cfg := config(&sl)
	cfg.BatchSize, cfg.Concurrency = 1, 2
	f := &fakeProvider{before: func(ctx context.Context, _ *chat.Request) { time.Sleep(time.Millisecond) }}
	_, err := runSlice(context.Background(), context.Background(), cfg, f, &sink{err: errors.New("disk full")}, p.jobs(n...))
	if err == nil {
		t.Fatal("Run stored nothing and returned no error")
	}
	if c := f.calls.Load(); c > 20 {
		t.Errorf("%d calls made after the first write failed; want the run to stop (at most a few in flight)", c)
	}
}

// Sessions the sink refused are not done: neither the returned stats nor
// the progress callback may count them.
func TestRunDoesNotCountUnstoredSessions(t *testing.T) {
	var p plan
	jobs := p.jobs(1, 1, 1, 1, 1)
	var sl sleeps
	cfg := config(&sl)
	cfg.BatchSize = 2
	var reports []Progress
	cfg.Progress = func(pr Progress) { reports = append(reports, pr) }
	st, err := runSlice(context.Background(), context.Background(), cfg, &fakeProvider{}, &sink{err: errors.New("disk full")}, jobs)
	if err == nil {
		t.Fatal("Run reported no error")
	}
	if st.Done != 0 || st.InputTokens != 0 {
		t.Errorf("stats %+v count sessions that were not stored", st)
	}
	for _, pr := range reports {
		if pr.Done != 0 {
			t.Errorf("progress %+v reports sessions that were not stored", pr)
		}
	}
}
