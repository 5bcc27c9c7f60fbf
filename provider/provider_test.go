package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestKindInfrastructure(t *testing.T) {
	for _, tc := range []struct {
		kind Kind
		want bool
	}{
		{RateLimited, true},
		{Transient, true},
		{Timeout, true},
		{ConnReset, true},
		{Malformed, true},
		{ContextLength, false},
		{Auth, false},
		{BadRequest, false},
		{Canceled, false},
		{Unknown, false},
		{ResponseTooLarge, false},
		{Kind(""), false},
		{Kind("something_else"), false},
	} {
		if got := tc.kind.Infrastructure(); got != tc.want {
			t.Errorf("Kind(%q).Infrastructure() = %v, want %v", tc.kind, got, tc.want)
		}
	}
}

func TestErrorText(t *testing.T) {
	inner := errors.New("read: connection reset by peer")
	for _, tc := range []struct {
		name string
		err  *Error
		want string
	}{
		{"kind only", &Error{Kind: Timeout}, "timeout"},
		{"status and message", &Error{Kind: RateLimited, Status: 429, Msg: "slow down"}, "rate_limited (HTTP 429): slow down"},
		{"message only", &Error{Kind: Malformed, Msg: "provider returned no response"}, "malformed_body: provider returned no response"},
		{"wrapped error", &Error{Kind: ConnReset, Err: inner}, "connection_reset: read: connection reset by peer"},
		{"everything", &Error{Kind: Transient, Status: 503, Msg: "upstream", Err: inner}, "transient_server_error (HTTP 503): upstream: read: connection reset by peer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("Error() = %q, want %q", got, tc.want)
			}
		})
	}
	e := &Error{Kind: ConnReset, Err: inner}
	if !errors.Is(e, inner) {
		t.Errorf("errors.Is(%v, inner) = false; Unwrap must expose the wrapped error", e)
	}
}

func TestClassify(t *testing.T) {
	live := context.Background()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()

	if got := Classify(live, nil); got != nil {
		t.Errorf("Classify(nil) = %v, want nil", got)
	}

	pe := &Error{Kind: RateLimited, Status: 429, RetryAfter: 3 * time.Second, Msg: "slow down"}
	if got := Classify(canceled, pe); got != pe {
		t.Errorf("Classify(*Error) = %#v, want the same *Error passed through", got)
	}
	if got := Classify(live, fmt.Errorf("calling model: %w", pe)); got != pe {
		t.Errorf("Classify(wrapped *Error) = %#v, want the wrapped *Error itself", got)
	}

	other := io.ErrUnexpectedEOF
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		want Kind
	}{
		{"canceled context, its own error", canceled, context.Canceled, Canceled},
		{"canceled context, wrapped ctx error", canceled, fmt.Errorf("post: %w", context.Canceled), Canceled},
		{"expired run context, its own deadline", expired, context.DeadlineExceeded, Canceled},
		{"live context, call deadline", live, context.DeadlineExceeded, Timeout},
		{"live context, wrapped call deadline", live, fmt.Errorf("post: %w", context.DeadlineExceeded), Timeout},
		{"live context, canceled elsewhere", live, context.Canceled, Canceled},
		{"live context, unknown error", live, other, Unknown},
		{"canceled context, unrelated error", canceled, other, Unknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Classify(tc.ctx, tc.err)
			if got == nil {
				t.Fatal("Classify returned nil for a non-nil error")
			}
			if got.Kind != tc.want {
				t.Errorf("Kind = %q, want %q", got.Kind, tc.want)
			}
			if !errors.Is(got, tc.err) {
				t.Errorf("classified error %v does not wrap the original %v", got, tc.err)
			}
			if !strings.Contains(got.Error(), tc.err.Error()) {
				t.Errorf("Error() = %q does not mention the original %q", got.Error(), tc.err.Error())
			}
		})
	}
}

func TestRetryPolicyValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    RetryPolicy
		want int
	}{
		{"default", DefaultRetryPolicy(), 0},
		{"single attempt, no delays", RetryPolicy{MaxAttempts: 1}, 0},
		{"zero attempts", RetryPolicy{MaxAttempts: 0, BaseDelay: time.Second, MaxDelay: time.Second}, 1},
		{"negative attempts", RetryPolicy{MaxAttempts: -2}, 1},
		{"negative base", RetryPolicy{MaxAttempts: 3, BaseDelay: -1}, 1},
		{"negative max", RetryPolicy{MaxAttempts: 3, MaxDelay: -1}, 1},
		{"both wrong", RetryPolicy{MaxAttempts: 0, BaseDelay: -1, MaxDelay: -1}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := tc.p.Validate()
			if len(errs) != tc.want {
				t.Errorf("Validate(%+v) = %v, want %d errors", tc.p, errs, tc.want)
			}
			for _, err := range errs {
				if !strings.HasPrefix(err.Error(), "retry policy: ") {
					t.Errorf("error %q does not say it is about the retry policy", err)
				}
			}
		})
	}
	if p := DefaultRetryPolicy(); p.MaxAttempts < 2 || p.BaseDelay <= 0 || p.MaxDelay < p.BaseDelay {
		t.Errorf("DefaultRetryPolicy() = %+v: want retries with positive, capped delays", p)
	}
}

func TestRetryPolicyRetryWithoutJitter(t *testing.T) {
	p := RetryPolicy{MaxAttempts: 5, BaseDelay: 100 * time.Millisecond, MaxDelay: 350 * time.Millisecond}
	transient := &Error{Kind: Transient}
	for _, tc := range []struct {
		name  string
		p     RetryPolicy
		n     int
		err   *Error
		again bool
		wait  time.Duration
	}{
		{"nil error", p, 1, nil, false, 0},
		{"bad request", p, 1, &Error{Kind: BadRequest}, false, 0},
		{"auth", p, 1, &Error{Kind: Auth, Status: 401}, false, 0},
		{"context length", p, 1, &Error{Kind: ContextLength}, false, 0},
		{"canceled", p, 1, &Error{Kind: Canceled}, false, 0},
		{"unknown", p, 1, &Error{Kind: Unknown}, false, 0},
		{"first failure", p, 1, transient, true, 100 * time.Millisecond},
		{"second failure doubles", p, 2, transient, true, 200 * time.Millisecond},
		{"third failure capped", p, 3, transient, true, 350 * time.Millisecond},
		{"fourth failure capped", p, 4, transient, true, 350 * time.Millisecond},
		{"last attempt", p, 5, transient, false, 0},
		{"past the last attempt", p, 9, transient, false, 0},
		{"rate limited", p, 1, &Error{Kind: RateLimited}, true, 100 * time.Millisecond},
		{"timeout", p, 2, &Error{Kind: Timeout}, true, 200 * time.Millisecond},
		{"connection reset", p, 1, &Error{Kind: ConnReset}, true, 100 * time.Millisecond},
		{"malformed", p, 1, &Error{Kind: Malformed}, true, 100 * time.Millisecond},
		{"retry-after above the delay", p, 1, &Error{Kind: RateLimited, RetryAfter: 2 * time.Second}, true, 2 * time.Second},
		{"retry-after below the delay", p, 2, &Error{Kind: RateLimited, RetryAfter: 50 * time.Millisecond}, true, 200 * time.Millisecond},
		{"single attempt policy", RetryPolicy{MaxAttempts: 1, BaseDelay: time.Second, MaxDelay: time.Second}, 1, transient, false, 0},
		{"shift overflow is capped", RetryPolicy{MaxAttempts: 1000, BaseDelay: time.Second, MaxDelay: time.Minute}, 200, transient, true, time.Minute},
		{"large shift is capped", RetryPolicy{MaxAttempts: 1000, BaseDelay: 500 * time.Millisecond, MaxDelay: 30 * time.Second}, 40, transient, true, 30 * time.Second},
		{"no delays", RetryPolicy{MaxAttempts: 3}, 1, transient, true, 0},
		{"no delays, retry-after", RetryPolicy{MaxAttempts: 3}, 1, &Error{Kind: RateLimited, RetryAfter: time.Second}, true, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			again, wait := tc.p.Retry(tc.n, tc.err, nil)
			if again != tc.again || wait != tc.wait {
				t.Errorf("Retry(%d, %v) = (%v, %v), want (%v, %v)", tc.n, tc.err, again, wait, tc.again, tc.wait)
			}
		})
	}
}

func TestRetryPolicyJitter(t *testing.T) {
	p := RetryPolicy{MaxAttempts: 10, BaseDelay: 10 * time.Millisecond, MaxDelay: 80 * time.Millisecond}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 1; n < p.MaxAttempts; n++ {
		limit := min(p.BaseDelay<<(n-1), p.MaxDelay)
		var lo, hi time.Duration = limit, 0
		for range 500 {
			again, wait := p.Retry(n, &Error{Kind: Transient}, rng)
			if !again {
				t.Fatalf("Retry(%d) gave up before MaxAttempts", n)
			}
			if wait < 1 || wait > limit {
				t.Fatalf("Retry(%d) waits %v, want within [1ns, %v]", n, wait, limit)
			}
			lo, hi = min(lo, wait), max(hi, wait)
		}
		// Full jitter spreads over the whole range: 500 draws that all fall in
		// one half would mean the delay is not jittered (or not growing).
		if hi <= limit/2 || lo >= limit/2 {
			t.Errorf("attempt %d: waits span [%v, %v], want spread over (0, %v]", n, lo, hi, limit)
		}
	}

	// A Retry-After larger than the jittered delay wins exactly; a smaller
	// one is still a floor.
	for range 200 {
		_, wait := p.Retry(1, &Error{Kind: RateLimited, RetryAfter: time.Second}, rng)
		if wait != time.Second {
			t.Fatalf("wait = %v with Retry-After 1s above the 10ms delay, want exactly 1s", wait)
		}
		_, wait = p.Retry(4, &Error{Kind: RateLimited, RetryAfter: 30 * time.Millisecond}, rng)
		if wait < 30*time.Millisecond || wait > 80*time.Millisecond {
			t.Fatalf("wait = %v with Retry-After 30ms and an 80ms delay, want within [30ms, 80ms]", wait)
		}
	}

	// The same seed gives the same delays.
	a, b := rand.New(rand.NewPCG(7, 7)), rand.New(rand.NewPCG(7, 7))
	for n := 1; n < p.MaxAttempts; n++ {
		_, wa := p.Retry(n, &Error{Kind: Timeout}, a)
		_, wb := p.Retry(n, &Error{Kind: Timeout}, b)
		if wa != wb {
			t.Fatalf("attempt %d: same seed gave %v and %v", n, wa, wb)
		}
	}
}

// TestInfoJSONShape: Info is stored in every run's manifest; InProcess is
// what a provider says of itself at run time and is never recorded.
func TestInfoJSONShape(t *testing.T) {
	b, err := json.Marshal(Info{Name: "sim", Model: "sim:default", Tools: true, Detail: "d", InProcess: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"name":"sim","model":"sim:default","tools":true,"detail":"d"}`; string(b) != want {
		t.Errorf("Info JSON = %s, want %s", b, want)
	}
	var back Info
	if err := json.Unmarshal([]byte(`{"name":"replay","model":"m","tools":false,"InProcess":true}`), &back); err != nil || back.InProcess {
		t.Errorf("InProcess read back from a manifest: %+v, %v", back, err)
	}
}

func TestClassifyHTTP(t *testing.T) {
	for _, c := range []struct {
		status    int
		code, msg string
		want      Kind
		infra     bool
	}{
		{429, "", "", RateLimited, true},
		{429, "insufficient_quota", "You exceeded your current quota", QuotaExceeded, false},
		{500, "", "", Transient, true},
		{502, "", "", Transient, true},
		{503, "", "", Transient, true},
		{529, "overloaded_error", "Overloaded", Transient, true},
		{409, "", "", Transient, true},
		{504, "", "", Timeout, true},
		{408, "", "", Timeout, true},
		{401, "", "", Auth, false},
		{403, "permission_error", "", Auth, false},
		{400, "context_length_exceeded", "", ContextLength, false},
		{400, "", "This model's maximum context length is 8192 tokens", ContextLength, false},
		{400, "invalid_request_error", "prompt is too long: 201000 tokens > 200000 maximum", ContextLength, false},
		{413, "request_too_large", "", ContextLength, false},
		{400, "", "bad role", BadRequest, false},
		{400, "api_error", "model does not support tools", BadRequest, false}, // Ollama
		{404, "", "no such model", BadRequest, false},
		{422, "", "", BadRequest, false},
	} {
		e := ClassifyHTTP(HTTPFailure{Status: c.status, Code: c.code, Message: c.msg})
		if e.Kind != c.want || e.Kind.Infrastructure() != c.infra || e.Status != c.status {
			t.Errorf("%d %q %q: got %s (infra %v), want %s", c.status, c.code, c.msg, e.Kind, e.Kind.Infrastructure(), c.want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	h := func(kv ...string) http.Header {
		x := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			x.Set(kv[i], kv[i+1])
		}
		return x
	}
	for _, c := range []struct {
		h    http.Header
		want time.Duration
	}{
		{h(), 0},
		{h("Retry-After", "3"), 3 * time.Second},
		{h("Retry-After", "0.5"), 500 * time.Millisecond},
		{h("Retry-After-Ms", "120", "Retry-After", "9"), 120 * time.Millisecond},
		{h("Retry-After", now.Add(20*time.Second).Format(http.TimeFormat)), 20 * time.Second},
		{h("Retry-After", now.Add(-time.Hour).Format(http.TimeFormat)), 0},
		{h("Retry-After", "86400"), MaxRetryAfter},
		{h("Retry-After", "soon"), 0},
		// Numbers too large for a duration are capped, not overflowed
		// into a negative wait.
		{h("Retry-After", "1e300"), MaxRetryAfter},
		{h("Retry-After-Ms", "99999999999999"), MaxRetryAfter},
		{h("Retry-After", "+Inf"), MaxRetryAfter},
		{h("Retry-After", "NaN"), 0},
		{h("Retry-After", "-5"), 0},
		{h("Retry-After-Ms", "-1e300", "Retry-After", "2"), 2 * time.Second},
		{h("Retry-After", "Fri, 31 Dec 9999 23:59:59 GMT"), MaxRetryAfter},
	} {
		if got := RetryAfter(c.h, now); got != c.want {
			t.Errorf("RetryAfter(%v) = %v, want %v", c.h, got, c.want)
		}
	}
}

func TestClassifyTransport(t *testing.T) {
	live := context.Background()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		ctx  context.Context
		err  error
		want Kind
	}{
		{cancelled, errors.New("anything"), Canceled},
		{live, context.DeadlineExceeded, Timeout},
		{live, fmt.Errorf("read: %w", syscall.ECONNRESET), ConnReset},
		{live, &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, ConnRefused},
		{live, &net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "nohost.invalid", IsNotFound: true}}, ConnReset},
		{live, io.EOF, ConnReset},
		{live, io.ErrUnexpectedEOF, Malformed},
		{live, errors.New(`Post "http://x/?key=SECRET": net/http: HTTP/1.x transport connection broken: malformed HTTP response "SSH"`), Malformed},
	} {
		e := ClassifyTransport(c.ctx, c.err)
		if e.Kind != c.want {
			t.Errorf("%v: %s, want %s", c.err, e.Kind, c.want)
		}
		if strings.Contains(e.Error(), "SECRET") {
			t.Errorf("URL kept in %v", e)
		}
	}
}

func TestRetryPolicy(t *testing.T) {
	p := RetryPolicy{MaxAttempts: 4, BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, k := range []Kind{ContextLength, Auth, BadRequest, Canceled, QuotaExceeded, NotRecorded, ResponseTooLarge, Unknown} {
		if again, _ := p.Retry(1, &Error{Kind: k}, rng); again {
			t.Errorf("%s must not be retried", k)
		}
	}
	for n := 1; n < 4; n++ {
		again, d := p.Retry(n, &Error{Kind: Transient}, rng)
		if !again || d <= 0 || d > p.BaseDelay<<(n-1) {
			t.Errorf("attempt %d: again %v delay %v", n, again, d)
		}
	}
	if again, _ := p.Retry(4, &Error{Kind: Transient}, rng); again {
		t.Errorf("attempts are bounded")
	}
	if _, d := p.Retry(1, &Error{Kind: RateLimited, RetryAfter: 3 * time.Second}, rng); d != 3*time.Second {
		t.Errorf("Retry-After must be honoured, waited %v", d)
	}
}

// Whatever a server sends as Retry-After or Retry-After-Ms (numbers of any
// size, dates, garbage), the wait read is between 0 and MaxRetryAfter.
func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"3", "0.5", "1e300", "99999999999999", "-7", "NaN", "+Inf", "0x10", "Fri, 31 Dec 9999 23:59:59 GMT",
		"Thu, 01 Jan 1970 00:00:00 GMT", "soon", ""} {
		f.Add(s, s)
	}
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, ra, ms string) {
		h := http.Header{}
		h.Set("Retry-After", ra)
		h.Set("Retry-After-Ms", ms)
		if d := RetryAfter(h, now); d < 0 || d > MaxRetryAfter {
			t.Errorf("Retry-After %q, Retry-After-Ms %q: wait %v", ra, ms, d)
		}
	})
}
