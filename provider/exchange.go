package provider

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/buildlab/budge/chat"
)

// MaxBody bounds how much of a response body a provider reads.
const MaxBody = 32 << 20

// Exchange records one HTTP exchange as the wire saw it, whatever the SDK on
// top makes of it: the status, the headers and the exact body bytes, or the
// error that cut the body short. HTTP providers install its Middleware on
// their SDK client and classify from what it recorded, so a 502 HTML page or
// a body cut mid-JSON is seen for what it is.
type Exchange struct {
	Status  int
	Header  http.Header
	Body    []byte
	ReadErr error // the body could not be read to its end
	SendErr error // no response at all
}

// Middleware has the shape of the OpenAI and Anthropic SDKs' middleware.
func (x *Exchange) Middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	// A POST carrying an idempotency key is one Go's transport may resend
	// on its own after a reset; every attempt must be one observation.
	req.Header.Del("Idempotency-Key")
	req.Header.Del("X-Idempotency-Key")
	res, err := next(req)
	if err != nil {
		x.SendErr = err
		return nil, err
	}
	x.Status, x.Header = res.StatusCode, res.Header
	body, err := io.ReadAll(io.LimitReader(res.Body, MaxBody))
	res.Body.Close()
	x.Body = body
	if err != nil {
		x.ReadErr = err
		return nil, err
	}
	if res.ContentLength > 0 && int64(len(body)) < res.ContentLength {
		x.ReadErr = io.ErrUnexpectedEOF
		return nil, io.ErrUnexpectedEOF
	}
	res.Body = io.NopCloser(bytes.NewReader(body))
	return res, nil
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
	// Redact takes the provider's secrets out of its errors.
	Redact Redactor
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
// classified by Failure and a 2xx body decoded. A failure comes back
// redacted.
func (a API) Call(ctx context.Context, send func(ctx context.Context, x *Exchange) error) (*chat.Response, error) {
	timeout := a.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var x Exchange
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
	return resp, nil
}
