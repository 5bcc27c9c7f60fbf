package provider

import (
	"context"
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
		{live, &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, ConnReset},
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

func TestRedactor(t *testing.T) {
	key := "fakekey-AbCdEfGhIjKlMnOpQrStUvWx"
	r := NewRedactor(key, "")
	for _, s := range []string{
		"Incorrect API key provided: " + key,
		"Incorrect API key provided: fakekey-AbCd****UvWx and " + key[8:20],
		"Authorization: Bearer abcdefghijklmnop",
		`{"x-api-key": "zzzzzzzzzzzz"}`,
	} {
		out := r.String(s)
		if strings.Contains(out, key[8:16]) || strings.Contains(out, "abcdefghijklmnop") || strings.Contains(out, "zzzzzzzzzzzz") {
			t.Errorf("not redacted: %q -> %q", s, out)
		}
	}
	e := r.Error(&Error{Kind: Auth, Msg: "bad key " + key, Err: errors.New("key=" + key)})
	if strings.Contains(e.Error(), key) {
		t.Errorf("error not redacted: %v", e)
	}
}

func TestRetryPolicy(t *testing.T) {
	p := RetryPolicy{MaxAttempts: 4, BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, k := range []Kind{ContextLength, Auth, BadRequest, Canceled, QuotaExceeded, NotRecorded, Unknown} {
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
