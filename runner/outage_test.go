package runner

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/store"
)

// endpoint is a scripted network endpoint on the bubble's fake clock: every
// call takes latency; while down says so, the connection is refused; else
// fault, when set, may fail the attempt.
type endpoint struct {
	latency time.Duration
	down    func(now time.Time) bool
	fault   func(key string, attempt int) error

	mu       sync.Mutex
	attempts map[string]int
	started  []time.Time // of every call
	refused  []time.Time // of every refused call, when it started
	injected map[provider.Kind]int
}

func (e *endpoint) Info() provider.Info { return provider.Info{Name: "fake", Model: "fake-model"} }

// probes counts the calls refused after an outage began, beyond the calls
// already in flight when it did.
func (e *endpoint) probes(outage time.Time) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, s := range e.refused {
		if s.After(outage.Add(e.latency)) {
			n++
		}
	}
	return n
}

func refusedErr() error {
	return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
}

func (e *endpoint) Chat(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	now := time.Now()
	key := callKey(req)
	e.mu.Lock()
	if e.attempts == nil {
		e.attempts, e.injected = map[string]int{}, map[provider.Kind]int{}
	}
	e.attempts[key]++
	n := e.attempts[key]
	e.started = append(e.started, now)
	down := e.down != nil && e.down(now)
	if down {
		e.refused = append(e.refused, now)
	}
	e.mu.Unlock()
	if err := provider.Sleep(ctx, e.latency); err != nil {
		return nil, provider.ClassifyTransport(ctx, err)
	}
	if down {
		return nil, provider.ClassifyTransport(ctx, refusedErr())
	}
	if e.fault != nil {
		if err := e.fault(key, n); err != nil {
			e.mu.Lock()
			e.injected[provider.Classify(ctx, err).Kind]++
			e.mu.Unlock()
			return nil, err
		}
	}
	return &chat.Response{Message: chat.Message{Role: chat.Assistant, Content: "answer to " + key}, FinishReason: "stop",
		Usage: chat.Usage{InputTokens: 5, OutputTokens: 2}, Raw: fmt.Appendf(nil, `{"key":%q,"attempt":%d}`, key, n)}, nil
}

// timedJobs are sessions of calls calls each that note when they start.
func timedJobs(p *plan, sessions, calls int) (jobs []Job, starts func() []time.Time) {
	var mu sync.Mutex
	var at []time.Time
	n := make([]int, sessions)
	for i := range n {
		n[i] = calls
	}
	jobs = p.jobs(n...)
	for i := range jobs {
		newConv := jobs[i].New
		jobs[i].New = func() (Conversation, error) {
			mu.Lock()
			at = append(at, time.Now())
			mu.Unlock()
			return newConv()
		}
	}
	return jobs, func() []time.Time {
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Time(nil), at...)
	}
}

// netConfig is a run as budge makes it against an endpoint: the default
// retry policy, real (fake-clock) sleeps.
func netConfig(conc int) Config {
	return Config{RunID: "run-1", Concurrency: conc, JitterSeed: 5, Retry: provider.DefaultRetryPolicy()}
}

// checkAttempts fails unless the store holds every attempt the endpoint
// saw, the failed ones with their kind.
func checkAttempts(t *testing.T, got map[string]store.Session, e *endpoint, st Stats) {
	t.Helper()
	stored, failed, refused := 0, 0, 0
	for id, se := range got {
		for _, a := range se.Attempts {
			stored++
			if a.Outcome != "ok" {
				failed++
				if a.ErrorKind == string(provider.ConnRefused) {
					refused++
				}
				if a.ErrorKind == "" {
					t.Errorf("session %s: failed attempt without a kind: %+v", id, a)
				}
			}
		}
	}
	e.mu.Lock()
	calls, nRefused := len(e.started), len(e.refused)
	e.mu.Unlock()
	if stored != calls || st.Attempts != calls || st.Failures != failed {
		t.Errorf("the endpoint saw %d calls; the store holds %d attempts (%d failed); stats say %d attempts, %d failures",
			calls, stored, failed, st.Attempts, st.Failures)
	}
	if refused < nRefused {
		t.Errorf("%d refused calls, %d stored as connection failures", nRefused, refused)
	}
}

// TestOutageIsWaitedOut: the endpoint refuses every connection for 3 s of a
// run. The run pauses (no session starts), probes, and goes on when the
// endpoint is back: no session fails, every attempt is stored. Without
// pausing, the same outage fails sessions.
func TestOutageIsWaitedOut(t *testing.T) {
	for _, tc := range []struct {
		pause       bool
		maxAttempts int
	}{{true, 4}, {true, 2}, {false, 4}} {
		t.Run(fmt.Sprintf("pause=%v,attempts=%d", tc.pause, tc.maxAttempts), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testOutageIsWaitedOut(t, tc.pause, tc.maxAttempts) })
		})
	}
}

func testOutageIsWaitedOut(t *testing.T, pause bool, maxAttempts int) {
	t0 := time.Now()
	from, to := t0.Add(time.Second), t0.Add(4*time.Second)
	e := &endpoint{latency: 100 * time.Millisecond, down: func(now time.Time) bool { return !now.Before(from) && now.Before(to) }}
	var p plan
	jobs, starts := timedJobs(&p, 60, 3)
	cfg := netConfig(8)
	cfg.Retry.MaxAttempts = maxAttempts
	if !pause {
		cfg.OutageWait = -1
	}
	var notices []bool
	cfg.OutageNotice = func(on bool, since time.Time) { notices = append(notices, on) }
	sk := &sink{}
	st := run(t, cfg, e, sk, jobs)
	got := sk.byID(t)
	if !pause {
		if st.Failed == 0 || st.Outages != 0 {
			t.Errorf("without pausing a 3 s outage failed %d sessions (%d outages); the test cannot tell pausing from luck", st.Failed, st.Outages)
		}
		return
	}
	if st.Failed != 0 || st.Done != len(jobs) || st.Interrupted != 0 || len(got) != len(jobs) || st.StoppedBy != "" {
		t.Errorf("stats %+v: want all %d sessions complete", st, len(jobs))
	}
	for id, se := range got {
		if se.Status != store.SessionComplete {
			t.Errorf("session %s: %s", id, se.Status)
		}
	}
	if st.Outages != 1 || st.OutageStarted.Before(from) || st.OutageStarted.After(from.Add(time.Second)) {
		t.Errorf("%d outages, the last started at +%v; want one, starting soon after +1s", st.Outages, st.OutageStarted.Sub(t0))
	}
	if st.OutageTime < 2*time.Second || st.OutageTime > 8*time.Second {
		t.Errorf("outage lasted %v, want about 3 s", st.OutageTime)
	}
	end := st.OutageStarted.Add(st.OutageTime)
	for _, s := range starts() {
		if !s.Before(st.OutageStarted) && s.Before(end) {
			t.Errorf("a session started at +%v, during the outage (+%v to +%v)", s.Sub(t0), st.OutageStarted.Sub(t0), end.Sub(t0))
		}
	}
	if fmt.Sprint(notices) != "[true false]" {
		t.Errorf("outage notices %v, want on then off", notices)
	}
	// One call at a time probed the endpoint during the outage.
	probes := e.probes(st.OutageStarted)
	if probes < 2 || probes > 6 {
		t.Errorf("%d calls probed the endpoint during the outage, want a few spaced by a backoff", probes)
	}
	checkAttempts(t, got, e, st)
}

// TestOutageStopsTheRun: the endpoint goes away for good. After OutageWait
// the run stops: no session failed, none started after the outage began,
// those in flight are interrupted, and Stats says the outage stopped it.
func TestOutageStopsTheRun(t *testing.T) {
	synctest.Test(t, testOutageStopsTheRun)
}

func testOutageStopsTheRun(t *testing.T) {
	t0 := time.Now()
	from := t0.Add(time.Second)
	e := &endpoint{latency: 100 * time.Millisecond, down: func(now time.Time) bool { return !now.Before(from) }}
	var p plan
	jobs, starts := timedJobs(&p, 60, 3)
	cfg := netConfig(8)
	cfg.OutageWait = 10 * time.Second
	lg := &logger{}
	cfg.Log = lg
	sk := &sink{}
	st := run(t, cfg, e, sk, jobs)
	got := sk.byID(t)

	if st.StoppedBy != "outage" || st.Outages != 1 || st.OutageStarted.Before(from) || st.OutageStarted.After(from.Add(time.Second)) {
		t.Fatalf("stopped by %q after %d outages, the last from +%v; want the outage from +1s", st.StoppedBy, st.Outages, st.OutageStarted.Sub(t0))
	}
	if d := st.OutageTime; d < cfg.OutageWait || d > cfg.OutageWait+time.Second {
		t.Errorf("outage lasted %v before the run stopped, want OutageWait %v", d, cfg.OutageWait)
	}
	if stop := t0.Add(st.Elapsed); stop.Before(st.OutageStarted.Add(cfg.OutageWait)) || stop.After(st.OutageStarted.Add(cfg.OutageWait+time.Second)) {
		t.Errorf("the run ended at +%v, want OutageWait after the outage began (+%v)", st.Elapsed, st.OutageStarted.Sub(t0))
	}
	started := starts()
	for _, s := range started {
		if !s.Before(st.OutageStarted) {
			t.Errorf("a session started at +%v, after the outage began at +%v", s.Sub(t0), st.OutageStarted.Sub(t0))
		}
	}
	if len(started) >= len(jobs) || len(got) != len(started) {
		t.Errorf("%d of %d sessions started, %d stored: want every started one stored, and not all started", len(started), len(jobs), len(got))
	}
	interrupted := 0
	for id, se := range got {
		switch se.Status {
		case store.SessionComplete:
		case store.SessionInterrupted:
			interrupted++
			last := se.Attempts[len(se.Attempts)-1]
			if last.Outcome != "error" || last.ErrorKind != string(provider.ConnRefused) {
				t.Errorf("interrupted session %s: last attempt %+v, want the refused connection", id, last)
			}
		default:
			t.Errorf("session %s: %s, want complete or interrupted", id, se.Status)
		}
	}
	if st.Failed != 0 || interrupted == 0 || interrupted > cfg.Concurrency || st.Interrupted != interrupted || st.Done != len(got)-interrupted {
		t.Errorf("stats %+v; %d interrupted sessions stored", st, interrupted)
	}
	probes := e.probes(st.OutageStarted)
	// Probes from +0.5 s doubling: +0.5, 1.5, 3.5, 7.5, 10 s.
	if probes < 3 || probes > 8 {
		t.Errorf("%d probes in a %v outage, want a few spaced by a backoff", probes, cfg.OutageWait)
	}
	checkAttempts(t, got, e, st)
	// What was logged is what was stored.
	var want []byte
	for _, se := range sk.all() {
		want = append(want, LogLines(cfg.RunID, se)...)
	}
	if lg.buf.String() != string(want) {
		t.Error("the log does not match the stored sessions")
	}
}

// mixFault is the README fault mix, drawn from a seed, the call and the
// attempt (not from the order calls happen to run in): 20% 429 with
// Retry-After, 5% 5xx, 2% connection resets, 2% bodies cut short.
func mixFault(seed uint64) func(key string, attempt int) error {
	return func(key string, attempt int) error {
		h := fnv.New64a()
		io.WriteString(h, key)
		u := rand.New(rand.NewPCG(seed, h.Sum64()^uint64(attempt)<<48)).Float64()
		switch {
		case u < 0.20:
			return &provider.Error{Kind: provider.RateLimited, Status: 429, RetryAfter: time.Second, Msg: "slow down"}
		case u < 0.25:
			return &provider.Error{Kind: provider.Transient, Status: 503, Msg: "unavailable"}
		case u < 0.27:
			return provider.ClassifyTransport(context.Background(), syscall.ECONNRESET)
		case u < 0.29:
			return provider.ClassifyTransport(context.Background(), io.ErrUnexpectedEOF)
		}
		return nil
	}
}

// TestFaultMixCompletes: at the default MaxAttempts of 4, the README fault
// mix over 300 sessions fails none: the 429s are waited out without
// spending attempts. Counting them as attempts fails some.
func TestFaultMixCompletes(t *testing.T) {
	for _, wait := range []bool{true, false} {
		t.Run(fmt.Sprintf("wait=%v", wait), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testFaultMixCompletes(t, wait) })
		})
	}
}

func testFaultMixCompletes(t *testing.T, wait bool) {
	e := &endpoint{latency: 50 * time.Millisecond, fault: mixFault(11)}
	var p plan
	jobs, _ := timedJobs(&p, 300, 3)
	cfg := netConfig(16)
	cfg.Adapt = NewAdaptive(16)
	if !wait {
		cfg.RateLimitWait = -1
	}
	sk := &sink{}
	st := run(t, cfg, e, sk, jobs)
	got := sk.byID(t)
	e.mu.Lock()
	injected := fmt.Sprint(e.injected)
	e.mu.Unlock()
	t.Logf("%d failed, %d attempts, %d failures, %d 429s waited out, %d cuts, injected %s", st.Failed, st.Attempts, st.Failures, st.RateLimitWaits, st.ConcurrencyCuts, injected)
	if !wait {
		if st.Failed == 0 || st.RateLimitWaits != 0 {
			t.Errorf("counting 429s as attempts failed %d sessions (%d waits); the test cannot tell waiting from luck", st.Failed, st.RateLimitWaits)
		}
		return
	}
	if st.Failed != 0 || st.Done != len(jobs) || len(got) != len(jobs) {
		t.Errorf("stats %+v: want all %d sessions complete", st, len(jobs))
	}
	if st.RateLimitWaits == 0 || st.ConcurrencyCuts == 0 {
		t.Errorf("%d 429s waited out, %d concurrency cuts: want both", st.RateLimitWaits, st.ConcurrencyCuts)
	}
	checkAttempts(t, got, e, st)
	byKind := map[provider.Kind]int{}
	for _, se := range got {
		for _, a := range se.Attempts {
			if a.Outcome != "ok" {
				byKind[provider.Kind(a.ErrorKind)]++
			}
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, k := range []provider.Kind{provider.RateLimited, provider.Transient, provider.ConnReset, provider.Malformed} {
		if byKind[k] != e.injected[k] || byKind[k] == 0 {
			t.Errorf("stored %d failed attempts of kind %s, injected %d", byKind[k], k, e.injected[k])
		}
	}
}

// TestModelErrorsStillFail: what is not an outage is not waited out. A
// 400 fails at once; a persistent 503, a 429 without Retry-After, and a
// call whose connection fails alone while others are answered fail after
// MaxAttempts; a 429 with Retry-After fails once its wait budget is spent.
func TestModelErrorsStillFail(t *testing.T) {
	synctest.Test(t, testModelErrorsStillFail)
}

func testModelErrorsStillFail(t *testing.T) {
	always := func(err error) []error {
		errs := make([]error, 50)
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	f := &fakeProvider{errs: map[string][]error{
		"s00/1": {&provider.Error{Kind: provider.BadRequest, Status: 400, Msg: "bad field"}},
		"s01/1": always(&provider.Error{Kind: provider.Transient, Status: 503}),
		"s02/1": always(&provider.Error{Kind: provider.RateLimited, Status: 429}),
		"s03/1": always(&provider.Error{Kind: provider.RateLimited, Status: 429, RetryAfter: 2 * time.Minute}),
		"s04/1": always(provider.ClassifyTransport(context.Background(), refusedErr())),
	}}
	f.before = func(context.Context, *chat.Request) { time.Sleep(50 * time.Millisecond) }
	var p plan
	jobs := p.jobs(1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2)
	cfg := netConfig(8)
	sk := &sink{}
	st := run(t, cfg, f, sk, jobs)
	got := sk.byID(t)
	n := cfg.Retry.MaxAttempts
	for id, want := range map[string]int{"s00": 1, "s01": n, "s02": n, "s03": 2 + n, "s04": n} {
		se := got[id]
		if se.Status != store.SessionFailed || len(se.Attempts) != want || p.conv(id).failed != 1 {
			t.Errorf("session %s: %s with %d attempts, want failed after %d", id, se.Status, len(se.Attempts), want)
		}
	}
	if st.Failed != 5 || st.Done != len(jobs) || st.Outages != 0 || st.RateLimitWaits != 2 || st.StoppedBy != "" {
		t.Errorf("stats %+v: want 5 failed, no outage, the two 429s of s03 waited out", st)
	}
}

// TestOutageRule: what makes an outage, and which failures it excuses.
func TestOutageRule(t *testing.T) {
	stopped := false
	o := newOutages(Config{OutageWait: time.Minute, OutageAfter: 4, Retry: provider.DefaultRetryPolicy(),
		Sleep: func(context.Context, time.Duration) error { return nil }}, func() { stopped = true })
	// One call failing alone is not an outage, however often.
	var a []int
	for range 6 {
		s, ex := o.report("a/1", provider.ConnReset, false)
		a = append(a, s)
		if ex {
			t.Fatal("one call's failures made an outage")
		}
	}
	// An answer ends the streak; 429s and 5xx are answers.
	o.report("b/1", provider.RateLimited, false)
	o.report("c/1", provider.Timeout, false)
	o.report("d/1", provider.Transient, false)
	o.report("c/1", provider.Timeout, false)
	o.report("e/1", provider.ConnReset, false)
	o.report("c/1", provider.Timeout, false)
	o.report("b/1", "", false)
	if _, count, _, _ := o.state(); count != 0 {
		t.Fatal("an outage across an answer")
	}
	// The fourth connection failure in a row, from two calls, makes one;
	// the call's earlier failures of the streak stop counting.
	first, _ := o.report("f/1", provider.ConnReset, false)
	if o.counted([]int{first}) != 1 || o.counted(a) != 6 {
		t.Fatal("failures counted wrongly before the outage")
	}
	o.report("f/1", provider.ConnReset, false)
	if _, ex := o.report("g/1", provider.ConnReset, false); ex {
		t.Fatal("an outage before the fourth failure")
	}
	s, ex := o.report("f/1", provider.ConnReset, false)
	if !ex || s != first || o.counted([]int{first, first, s}) != 0 {
		t.Fatalf("the fourth failure from two calls: excused %v, counted %d", ex, o.counted([]int{first, s}))
	}
	// One probe at a time; an answer ends the outage.
	ctx := context.Background()
	if probe, err := o.admit(ctx); !probe || err != nil {
		t.Fatalf("admit = %v, %v; want the probe", probe, err)
	}
	held := make(chan bool)
	go func() {
		probe, _ := o.admit(ctx)
		held <- probe
	}()
	o.report("f/1", "", true)
	if probe := <-held; probe {
		t.Error("a call waiting out the outage was made the probe after the endpoint answered")
	}
	if _, count, _, _ := o.state(); count != 1 || stopped {
		t.Errorf("%d outages, stopped %v", count, stopped)
	}
}

// TestRateLimitWaitBoundsEveryWait: a server that asks for a wait far
// beyond --rate-limit-wait (its Retry-After read as the 5-minute cap) never
// makes a call sleep longer than --rate-limit-wait, whether the wait is
// taken without spending an attempt or before a counted retry; the call
// fails once its attempts are spent.
func TestRateLimitWaitBoundsEveryWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		errs := make([]error, 50)
		for i := range errs {
			errs[i] = &provider.Error{Kind: provider.RateLimited, Status: 429, RetryAfter: provider.MaxRetryAfter}
		}
		f := &fakeProvider{errs: map[string][]error{"s00/1": errs}}
		var p plan
		jobs := p.jobs(1)
		cfg := netConfig(1)
		cfg.RateLimitWait = 20 * time.Second
		var longest time.Duration
		var waits int
		cfg.Sleep = func(ctx context.Context, d time.Duration) error {
			waits++
			longest = max(longest, d)
			return nil
		}
		sk := &sink{}
		st := run(t, cfg, f, sk, jobs)
		if longest > cfg.RateLimitWait || waits < cfg.Retry.MaxAttempts-1 {
			t.Errorf("%d waits, the longest %v; want every wait within --rate-limit-wait %v", waits, longest, cfg.RateLimitWait)
		}
		if se := sk.byID(t)["s00"]; se.Status != store.SessionFailed || st.Failed != 1 {
			t.Errorf("session %s, %d failed; want it failed once its attempts are spent", se.Status, st.Failed)
		}
	})
}

// FuzzRateLimitWaitBound: whatever a server sends as Retry-After or
// Retry-After-Ms (numbers of any size, dates, garbage), on a 429 or a 503,
// no call sleeps longer than --rate-limit-wait (20s here), whether it
// waits without spending an attempt or before a counted retry.
func FuzzRateLimitWaitBound(f *testing.F) {
	for _, s := range []string{"3", "0.5", "1e300", "-1e300", "99999999999999", "99999999", "-7", "NaN", "+Inf", "0x10", "1_000",
		"Fri, 31 Dec 9999 23:59:59 GMT", "Thu, 01 Jan 1970 00:00:00 GMT", "Mon, 02 Jan 2006 15:04:05 MST", "soon", ""} {
		f.Add(s, "", true)
		f.Add("", s, false)
		f.Add(s, s, true)
	}
	f.Fuzz(func(t *testing.T, ra, ms string, limited bool) {
		synctest.Test(t, func(t *testing.T) {
			h := http.Header{}
			h.Set("Retry-After", ra)
			h.Set("Retry-After-Ms", ms)
			wait := provider.RetryAfter(h, time.Now())
			kind, status := provider.RateLimited, 429
			if !limited {
				kind, status = provider.Transient, 503
			}
			errs := make([]error, 12)
			for i := range errs {
				errs[i] = &provider.Error{Kind: kind, Status: status, RetryAfter: wait}
			}
			fp := &fakeProvider{errs: map[string][]error{"s00/1": errs}}
			var p plan
			cfg := netConfig(1)
			cfg.RateLimitWait = 20 * time.Second
			var longest time.Duration
			cfg.Sleep = func(ctx context.Context, d time.Duration) error {
				longest = max(longest, d)
				return nil
			}
			run(t, cfg, fp, &sink{}, p.jobs(1))
			if longest > cfg.RateLimitWait {
				t.Errorf("Retry-After %q, Retry-After-Ms %q (%d): a wait of %v, over --rate-limit-wait %v", ra, ms, status, longest, cfg.RateLimitWait)
			}
		})
	})
}
