package provider

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// More kinds of failure, beyond those of provider.go.
const (
	// QuotaExceeded is a 429 that says the account is out of credit: waiting
	// does not help, so it is not retried.
	QuotaExceeded Kind = "quota_exceeded"
	// NotRecorded is a replayed request that has no stored response.
	NotRecorded Kind = "not_recorded"
	// ResponseTooLarge is a response body over the size limit
	// (DefaultMaxBody unless configured). It is refused unread, not "cut
	// short": asking again brings the same oversized answer, so it is not
	// retried.
	ResponseTooLarge Kind = "response_too_large"
	// SessionTooLarge ends a session whose requests and responses would
	// pass what one session may send and receive (limits.MaxSessionBytes).
	// The runner sets it, on the call it did not send or whose answer it
	// refused; it is not retried.
	SessionTooLarge Kind = "session_too_large"
)

// MaxRetryAfter caps what a server may ask the run to wait: a server that
// answers "Retry-After: 86400" gets the cap, and the run goes on.
const MaxRetryAfter = 5 * time.Minute

// HTTPFailure is what a provider saw of a failed HTTP exchange: the status,
// headers and body (possibly cut short). Every HTTP provider builds one and
// hands it to ClassifyHTTP, so all of them classify alike.
type HTTPFailure struct {
	Status int
	Header http.Header
	Body   []byte
	// Code and Message are the provider's own error code or type and
	// message, when its error body could be read.
	Code, Message string
}

var contextTooLong = regexp.MustCompile(`(?i)context[_ ]length|context window|maximum context|prompt is too long|too many tokens|token limit|input is too long|exceeds the model|reduce the length`)

// ClassifyHTTP turns an HTTP error status into a classified error. Only the
// status, the provider's code and a short excerpt of the message are kept;
// the caller redacts secrets from the message.
func ClassifyHTTP(f HTTPFailure) *Error {
	e := &Error{Status: f.Status, RetryAfter: RetryAfter(f.Header, time.Now())}
	msg := strings.TrimSpace(f.Message)
	if msg == "" {
		msg = Excerpt(f.Body, 160)
	}
	code := strings.ToLower(f.Code)
	if code != "" && !strings.Contains(strings.ToLower(msg), code) {
		msg = f.Code + ": " + msg
	}
	e.Msg = msg
	switch {
	case code == "insufficient_quota" || code == "billing_error" || strings.Contains(code, "quota"):
		e.Kind = QuotaExceeded
	case code == "context_length_exceeded" || code == "string_above_max_length" || contextTooLong.MatchString(f.Message):
		e.Kind = ContextLength
	case f.Status == http.StatusTooManyRequests || code == "rate_limit_error" || code == "rate_limit_exceeded":
		e.Kind = RateLimited
	case f.Status == http.StatusUnauthorized || f.Status == http.StatusForbidden ||
		code == "authentication_error" || code == "permission_error" || code == "invalid_api_key":
		e.Kind = Auth
	case f.Status == http.StatusRequestTimeout || f.Status == http.StatusGatewayTimeout || code == "timeout_error":
		e.Kind = Timeout
	case f.Status == http.StatusRequestEntityTooLarge || code == "request_too_large":
		e.Kind = ContextLength
	case f.Status >= 500 || f.Status == http.StatusConflict || code == "overloaded_error":
		// 500, 502, 503, 529 (overloaded), and 409 (a conflicting request
		// still in progress) pass with time. An error's type alone does
		// not make it transient: Ollama answers a request it will never
		// accept with 400 and type api_error.
		e.Kind = Transient
	case f.Status >= 400:
		e.Kind = BadRequest
	default:
		e.Kind = Unknown
	}
	return e
}

// RetryAfter reads how long a server asks to wait: retry-after-ms (sent by
// some OpenAI-compatible servers), then Retry-After in seconds or as an HTTP
// date. Zero when absent or unreadable; capped at MaxRetryAfter, however
// large the number (it is capped before it becomes a duration, which would
// overflow into a negative wait).
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	var d time.Duration
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil {
			d = seconds(ms / 1000)
		}
	}
	if v := strings.TrimSpace(h.Get("Retry-After")); d == 0 && v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil {
			d = seconds(s)
		} else if t, err := http.ParseTime(v); err == nil && t.After(now) {
			d = min(t.Sub(now), MaxRetryAfter)
		}
	}
	return max(0, min(d, MaxRetryAfter))
}

// seconds is a wait of s seconds, 0 for a negative or unreadable number
// (NaN), MaxRetryAfter for one at or beyond it (infinity included).
func seconds(s float64) time.Duration {
	switch {
	case !(s > 0):
		return 0
	case s >= MaxRetryAfter.Seconds():
		return MaxRetryAfter
	}
	return time.Duration(s * float64(time.Second))
}

// ClassifyTransport classifies an error that came from the connection rather
// than from an HTTP status: a cancelled run, a timeout, a refused connection
// (ConnRefused), a name that does not resolve, a reset connection, a body
// cut short.
func ClassifyTransport(ctx context.Context, err error) *Error {
	if pe, done := classified(err); done {
		return pe
	}
	var ne net.Error
	switch {
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled):
		return &Error{Kind: Canceled, Msg: "the run was cancelled", Err: ctx.Err()}
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return &Error{Kind: Timeout, Msg: "no answer in time", Err: cleanErr(err)}
	case errors.Is(err, io.ErrUnexpectedEOF), strings.Contains(err.Error(), "malformed HTTP"):
		return &Error{Kind: Malformed, Msg: "response body cut short", Err: cleanErr(err)}
	case errors.Is(err, syscall.ECONNREFUSED), strings.Contains(err.Error(), "connection refused"):
		return &Error{Kind: ConnRefused, Msg: "connection refused: nothing listens at that address", Err: cleanErr(err)}
	case errors.As(err, new(*net.DNSError)):
		return &Error{Kind: ConnReset, Msg: "no such host", Err: cleanErr(err)}
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed),
		strings.Contains(err.Error(), "connection reset"), strings.Contains(err.Error(), "server closed"),
		strings.Contains(err.Error(), "EOF"):
		return &Error{Kind: ConnReset, Msg: "connection lost", Err: cleanErr(err)}
	case errors.Is(err, context.Canceled):
		return &Error{Kind: Canceled, Err: err}
	}
	var oe *net.OpError
	if errors.As(err, &oe) {
		return &Error{Kind: ConnReset, Msg: "network error", Err: cleanErr(err)}
	}
	return &Error{Kind: Unknown, Err: cleanErr(err)}
}

// cleanErr drops URLs from transport errors: a base URL may carry a token in
// its query, and the message ends up in the store.
func cleanErr(err error) error {
	s := err.Error()
	if i := strings.Index(s, "\"http"); i >= 0 {
		if j := strings.Index(s[i+1:], "\""); j >= 0 {
			s = s[:i] + "<url>" + s[i+1+j+1:]
		}
	}
	return plainError(s)
}

type plainError string

func (e plainError) Error() string { return string(e) }

// Excerpt returns at most n bytes of a body as one line: an HTML error page
// becomes its title, JSON stays JSON.
func Excerpt(body []byte, n int) string {
	s := strings.TrimSpace(string(body))
	if s == "" {
		return "(empty body)"
	}
	low := strings.ToLower(s)
	if i := strings.Index(low, "<title>"); i >= 0 {
		if j := strings.Index(low[i:], "</title>"); j > 0 {
			s = "HTML page: " + strings.TrimSpace(s[i+7:i+j])
		}
	} else if strings.HasPrefix(low, "<") {
		s = "HTML page"
	}
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "..."
	}
	return s
}
