package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/buildlab/budge/chat"
)

// Exchange records one HTTP exchange as the wire saw it, whatever the SDK on
// top makes of it: the status, the headers and the exact body bytes, or the
// error that cut the body short. HTTP providers install its Middleware on
// their SDK client and classify from what it recorded, so a 502 HTML page or
// a body cut mid-JSON is seen for what it is.
//
// The body is read under two limits: MaxBody, past which a 2xx body is
// refused (ResponseTooLarge) without being read to its end, and Budget, the
// bytes of all calls in flight, from which the body's bytes are reserved
// before it is read. Release gives them back.
type Exchange struct {
	Status  int
	Header  http.Header
	Body    []byte
	ReadErr error // the body could not be read to its end, or was too large
	SendErr error // no response at all

	// MaxBody is the largest body accepted (DefaultMaxBody when 0).
	MaxBody int64
	// Budget is what the body's bytes are reserved from (ResponseBudget()
	// when nil).
	Budget *Budget

	from *Budget
	held int64
}

// TooLargeError is the read error of a body over the size limit.
type TooLargeError struct {
	Limit  int64
	Length int64 // the declared Content-Length, or -1
}

func (e *TooLargeError) Error() string {
	if e.Length >= 0 {
		return fmt.Sprintf("response body of %s is over the %s limit", ByteSize(e.Length), ByteSize(e.Limit))
	}
	return fmt.Sprintf("response body is over the %s limit", ByteSize(e.Limit))
}

// ByteSize writes n bytes for a reader: 512 bytes, 3.4 MiB.
func ByteSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// Middleware has the shape of the OpenAI and Anthropic SDKs' middleware.
func (x *Exchange) Middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	// A POST carrying an idempotency key is one Go's transport may resend
	// on its own after a reset; every attempt must be one observation.
	req.Header.Del("Idempotency-Key")
	req.Header.Del("X-Idempotency-Key")
	if req.GetBody != nil && req.Body != nil && req.Body != http.NoBody {
		// The SDKs wrap the body in a reader of their own, which Go's
		// transport cannot tell is in memory: it then writes the headers
		// on their own and copies the body through a 32 KB buffer of its
		// own, a write and an allocation more on every call. The body's
		// fresh copy is a reader it knows.
		if b, err := req.GetBody(); err == nil {
			req.Body = b
		}
	}
	res, err := next(req)
	if err != nil {
		x.SendErr = err
		return nil, err
	}
	x.Status, x.Header = res.StatusCode, res.Header
	body, err := x.read(req.Context(), res)
	res.Body.Close()
	x.Body = body
	if err != nil {
		x.ReadErr = err
		return nil, err
	}
	if res.StatusCode < 300 {
		// The provider decodes x.Body; the SDK would only copy it.
		res.Body = http.NoBody
	} else {
		res.Body = io.NopCloser(bytes.NewReader(body))
	}
	return res, nil
}

// read reads res's body within the size limit, reserving its bytes from
// the budget first. An error body is cut to MaxErrorBody without error.
func (x *Exchange) read(ctx context.Context, res *http.Response) ([]byte, error) {
	b := x.Budget
	if b == nil {
		b = ResponseBudget()
	}
	limit := x.MaxBody
	if limit <= 0 {
		limit = DefaultMaxBody
	}
	if m := MaxBodyOf(ctx); m > 0 {
		limit = min(limit, m)
	}
	// A body never takes more than the whole budget (one byte is kept to
	// tell an oversized body).
	limit = min(limit, b.Total()-1)
	errorBody := res.StatusCode >= 300
	if errorBody {
		limit = min(limit, MaxErrorBody)
	}
	cl := res.ContentLength
	reserve := limit + 1 // one byte past the limit tells an oversized body
	switch {
	case errorBody:
		reserve = limit
		if cl >= 0 && cl < limit {
			reserve = cl
		}
	case cl > limit:
		return nil, &TooLargeError{Limit: limit, Length: cl}
	case cl >= 0:
		reserve = cl
	}
	got, err := b.Acquire(ctx, reserve)
	if err != nil {
		return nil, err
	}
	x.from, x.held = b, got
	body, err := readUpTo(res.Body, reserve)
	// Keep what the body holds; give back the rest at once.
	b.Release(x.held - int64(cap(body)))
	x.held = int64(cap(body))
	if err != nil {
		return body, err
	}
	if !errorBody && int64(len(body)) > limit {
		x.Release()
		return nil, &TooLargeError{Limit: limit, Length: -1}
	}
	if cl > 0 && int64(len(body)) < min(cl, reserve) {
		return body, io.ErrUnexpectedEOF
	}
	return body, nil
}

// readUpTo reads r to its end or to n bytes, whichever comes first, into a
// buffer whose capacity never exceeds n.
func readUpTo(r io.Reader, n int64) ([]byte, error) {
	buf := make([]byte, 0, min(n, 16<<10))
	for int64(len(buf)) < n {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(n, int64(2*cap(buf))))
			copy(grown, buf)
			buf = grown
		}
		m, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
	return buf, nil
}

// Release gives the body's bytes back to the budget; the body itself is
// left to its new owner.
func (x *Exchange) Release() {
	if x.from != nil {
		x.from.Release(x.held)
		x.from, x.held = nil, 0
	}
}

// HTTPClient returns the client an HTTP provider sends with: c when one is
// configured (tests), otherwise a client that keeps enough idle connections
// for a run's concurrency: the standard transport keeps two per host, so a
// run at concurrency 256 would open and close connections all the time.
func HTTPClient(c *http.Client, maxIdle int) *http.Client {
	if c != nil {
		return c
	}
	if maxIdle < 16 {
		maxIdle = 16
	}
	t := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          maxIdle,
		MaxIdleConnsPerHost:   maxIdle,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   15 * time.Second,
		ExpectContinueTimeout: time.Second,
		// Headers are not counted in the body budget: keep them small.
		MaxResponseHeaderBytes: 1 << 20,
	}
	return &http.Client{Transport: t}
}

// Failure classifies a recorded exchange: the call's context ending, a send
// or read error, no response, an HTTP error status (errorBody pulls the
// provider's error code and message out of the body) or a redirect. It
// returns nil when the exchange holds a 2xx body for the provider to decode.
func (x *Exchange) Failure(ctx context.Context, sdkErr error, errorBody func([]byte) (code, msg string)) *Error {
	switch {
	case ctx.Err() != nil:
		return ClassifyTransport(ctx, ctx.Err())
	case x.SendErr != nil:
		return ClassifyTransport(ctx, x.SendErr)
	case errors.As(x.ReadErr, new(*TooLargeError)):
		return &Error{Kind: ResponseTooLarge, Status: x.Status, Msg: x.ReadErr.Error()}
	case x.ReadErr != nil:
		e := ClassifyTransport(ctx, x.ReadErr)
		if e.Kind == ConnReset || e.Kind == Unknown {
			e.Kind, e.Msg = Malformed, "response body cut short"
		}
		e.Status = x.Status
		return e
	case x.Status == 0:
		if sdkErr == nil {
			sdkErr = errors.New("no response")
		}
		return ClassifyTransport(ctx, sdkErr)
	case x.Status >= 400:
		code, msg := errorBody(x.Body)
		return ClassifyHTTP(HTTPFailure{Status: x.Status, Header: x.Header, Body: x.Body, Code: code, Message: msg})
	case x.Status >= 300:
		return &Error{Kind: BadRequest, Status: x.Status, Msg: "unexpected redirect; check the base URL"}
	}
	return nil
}

// API is what an HTTP provider knows of its API's responses.
type API struct {
	// ErrorBody pulls the error code and message out of an error body.
	ErrorBody func(body []byte) (code, msg string)
	// Decode reads a 2xx body.
	Decode func(body []byte) (*chat.Response, error)
	// RequestIDHeader is the response header that carries the request's id.
	RequestIDHeader string
	// Redact takes the provider's secrets out of its errors and responses.
	Redact Redactor
	// MaxBody is the largest response body accepted (DefaultMaxBody when
	// 0); Budget bounds the response bytes of all calls in flight
	// (ResponseBudget() when nil).
	MaxBody int64
	Budget  *Budget
	// Timeout bounds one call (0: 5 minutes).
	Timeout time.Duration
}

// BaseURL parses an HTTP provider's base URL, reporting whether it is an
// http(s) URL with a host.
func BaseURL(s string) (*url.URL, bool) {
	u, err := url.Parse(s)
	return u, err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// Call makes one call. send makes the SDK's request under the call's
// timeout, with x.Middleware installed; the exchange it records is
// classified by Failure and a 2xx body decoded. A failure and a response
// both come back redacted: no secret the Redactor knows, nor anything shaped
// like a key, is in an error, a decoded answer or its raw body.
func (a API) Call(ctx context.Context, send func(ctx context.Context, x *Exchange) error) (*chat.Response, error) {
	timeout := a.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	x := Exchange{MaxBody: a.MaxBody, Budget: a.Budget}
	defer x.Release()
	sdkErr := send(cctx, &x)
	if e := x.Failure(ctx, sdkErr, a.ErrorBody); e != nil {
		return nil, a.Redact.Error(e)
	}
	resp, err := a.Decode(x.Body)
	if err != nil {
		return nil, a.Redact.Error(Classify(ctx, err))
	}
	if id := x.Header.Get(a.RequestIDHeader); id != "" {
		resp.Meta.RequestID = id
	}
	a.Redact.Response(resp)
	return resp, nil
}

// Fetch makes one request that is not a chat call (a batch API's) as
// Call makes chat calls, with the same middleware, limits and redaction,
// under a 5-minute bound, and decodes its 2xx body into out; what names
// the API in a decoding error. send makes the request with the exchange
// recorder x installed.
func (a API) Fetch(ctx context.Context, what string, out any, send func(ctx context.Context, x *Exchange) error) error {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	x := Exchange{MaxBody: a.MaxBody, Budget: a.Budget}
	defer x.Release()
	sdkErr := send(cctx, &x)
	if e := x.Failure(ctx, sdkErr, a.ErrorBody); e != nil {
		return a.Redact.Error(e)
	}
	if err := json.Unmarshal(x.Body, out); err != nil {
		return &Error{Kind: Malformed, Status: x.Status, Msg: what + " answer: " + err.Error()}
	}
	return nil
}

// Sleep waits d, or until ctx ends (its error then).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
