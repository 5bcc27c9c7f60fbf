package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// A preflight is what budge asks an endpoint before a run, a resume or a
// worker sends it anything: whether the model exists there, whether the key
// is taken, whether anything listens at the address at all and whether it
// speaks the provider's API. A run whose every call would fail for one of
// these reasons stops in seconds, with the server's own words, instead of
// storing every session as failed.

// PreflightTimeout bounds each request of a preflight.
const PreflightTimeout = 10 * time.Second

// Preflighter is a provider that can check its endpoint before a run.
type Preflighter interface {
	// Preflight asks the endpoint about the model: a nil error, or a
	// *PreflightError (fatal or a note to show).
	Preflight(ctx context.Context) error
}

// Preflight runs p's preflight when it has one. A fatal problem comes back
// as err (a *PreflightError); one that may pass (a rate limit, a server
// error, no answer in time) as note, for the caller to show before going on.
func Preflight(ctx context.Context, p Provider) (note string, err error) {
	pf, ok := p.(Preflighter)
	if !ok || p.Info().InProcess {
		return "", nil
	}
	err = pf.Preflight(ctx)
	if pe, ok := errors.AsType[*PreflightError](err); ok && !pe.Fatal {
		return pe.Error(), nil
	}
	return "", err
}

// PreflightError says why an endpoint cannot serve a run: the problem, what
// the server (or the network) said, and what to try.
type PreflightError struct {
	// Fatal says no call of the run could succeed: the run must not start.
	Fatal   bool
	Problem string // "the model does not exist at http://...", ...
	Said    string // the server's own message, or the network error
	// Network says Said is the network's error: no server answered.
	Network bool
	Try     string
	Kind    Kind // the classified failure, when there was one
}

func (e *PreflightError) Error() string {
	s := "preflight: " + e.Problem
	switch {
	case e.Said != "" && e.Network:
		s += "\n  the network said: " + e.Said
	case e.Said != "":
		s += "\n  the server said: " + e.Said
	}
	if e.Try != "" {
		s += "\n  try: " + e.Try
	}
	if !e.Fatal {
		s += "\n  (going on; --no-preflight skips this check)"
	}
	return s
}

// Answer is one preflight request's outcome: the status and body the wire
// carried, and the failure classified as a run's call would be (nil for a
// 2xx).
type Answer struct {
	Status int
	Body   []byte
	Err    *Error
}

// json says the body looks like JSON (an error body may be cut short, so
// only its start is looked at).
func (a Answer) json() bool {
	b := bytes.TrimSpace(a.Body)
	return len(b) > 0 && (b[0] == '{' || b[0] == '[')
}

// said is the server's message, or the network error.
func (a Answer) said() string {
	if a.Err == nil {
		return fmt.Sprintf("HTTP %d: %s", a.Status, Excerpt(a.Body, 200))
	}
	return a.Err.Error()
}

// Probe sends one preflight request as Call sends a chat request (the same
// middleware, limits and redaction) under PreflightTimeout, and returns what
// came back.
func (a API) Probe(ctx context.Context, send func(ctx context.Context, x *Exchange) error) Answer {
	limit := PreflightTimeout
	if a.Timeout > 0 {
		limit = min(limit, a.Timeout)
	}
	cctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	x := Exchange{MaxBody: a.MaxBody, Budget: a.Budget}
	defer x.Release()
	sdkErr := send(cctx, &x)
	ans := Answer{Status: x.Status, Body: a.Redact.Redact(append([]byte(nil), x.Body...))}
	if e := x.Failure(cctx, sdkErr, a.ErrorBody); e != nil {
		if ctx.Err() == nil && cctx.Err() != nil {
			e = &Error{Kind: Timeout, Msg: fmt.Sprintf("no answer within %s", limit)}
		}
		ans.Err = a.Redact.Error(e)
	}
	return ans
}

// Check is the preflight every HTTP provider makes, in two steps: a lookup
// of the model that costs nothing (the model listing, or the model's own
// page), then, unless the lookup found the model, one minimal chat call.
type Check struct {
	API    string // "OpenAI-compatible", "Anthropic"
	URL    string // the base URL, without secrets
	Model  string // the model id sent
	KeyVar string // the variable the key is read from
	HasKey bool
	// Lookup asks about the model. known says the endpoint knows it; ids
	// are the models it lists (shown when the model is missing); ok says
	// the answer had the API's shape.
	Lookup     func(ctx context.Context) (a Answer, known bool, ids []string, ok bool)
	LookupName string // "GET /models"
	// Chat makes one minimal chat call; a 2xx it cannot decode is a
	// Malformed Err with the status.
	Chat     func(ctx context.Context) Answer
	ChatName string // "POST /chat/completions"
}

// Run makes the check.
func (c Check) Run(ctx context.Context) error {
	look, known, ids, shaped := c.Lookup(ctx)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if e := c.unreachable(look); e != nil {
		return e
	}
	switch {
	case look.Err == nil && shaped && known:
		return nil
	case look.Err == nil && !shaped && !look.json():
		// A web page, not an API.
		return c.notAPI(fmt.Sprintf("%s answered HTTP %d with %s", c.LookupName, look.Status, Excerpt(look.Body, 120)))
	}
	// A listing the model is missing from, or JSON not shaped like the
	// API's listing (some servers that chat well list nothing useful), is
	// settled by one chat call.
	ans := c.Chat(ctx)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if ans.Err == nil {
		return nil
	}
	if e := c.unreachable(ans); e != nil {
		return e
	}
	e := ans.Err
	notFound := ans.Status == http.StatusNotFound
	switch {
	case ans.Status >= 200 && ans.Status < 300:
		what := fmt.Sprintf("%s answered HTTP %d with %s", c.ChatName, ans.Status, Excerpt(ans.Body, 120))
		if look.Err == nil && !shaped {
			what += fmt.Sprintf("; %s answered HTTP %d with %s", c.LookupName, look.Status, Excerpt(look.Body, 120))
		}
		return c.notAPI(what)
	case (notFound || ans.Status == http.StatusMethodNotAllowed || ans.Status == http.StatusNotImplemented) && !ans.json():
		return c.notAPI(fmt.Sprintf("%s answered HTTP %d with %s; %s answered %s", c.ChatName, ans.Status, Excerpt(ans.Body, 120), c.LookupName, look.said()))
	case notFound || e.Kind == BadRequest && strings.Contains(strings.ToLower(e.Msg), "model") && (strings.Contains(e.Msg, "not found") || strings.Contains(e.Msg, "not exist")):
		try := fmt.Sprintf("check the model name after the provider in --model (sent as %q)", c.Model)
		if len(ids) > 0 {
			try += "; the server lists: " + listed(ids, 12)
		}
		return &PreflightError{Fatal: true, Kind: e.Kind, Problem: fmt.Sprintf("the model %q does not exist at %s", c.Model, c.URL), Said: ans.said(), Try: try}
	}
	return &PreflightError{Kind: e.Kind, Problem: fmt.Sprintf("a test call to %s at %s failed", c.Model, c.URL), Said: ans.said(),
		Try: "if the run's calls fail the same way, stop it (Ctrl-C) and fix the cause"}
}

// unreachable is the fatal problem of an answer that says the endpoint
// cannot be used at all: nothing listens, the name does not resolve, the
// URL's scheme is not the server's (http:// for an HTTPS server or the
// other way round), its certificate is not trusted, the key is refused.
// nil otherwise.
func (c Check) unreachable(a Answer) *PreflightError {
	if a.Err == nil {
		return nil
	}
	e := a.Err
	switch {
	case a.Status == http.StatusBadRequest && strings.Contains(string(a.Body), "HTTP request to an HTTPS server"):
		return &PreflightError{Fatal: true, Kind: e.Kind, Problem: "the server at " + c.URL + " speaks HTTPS, not plain HTTP", Said: a.said(),
			Try: "write https:// instead of http:// in --base-url (or the endpoint's base_url)"}
	case e.Kind == ConnRefused:
		return &PreflightError{Fatal: true, Kind: e.Kind, Problem: "nothing listens at " + c.URL + " (connection refused)", Said: netErr(e), Network: true,
			Try: "check the host and port of --base-url (or the endpoint's base_url) and that the server is running"}
	case e.Msg == "no such host":
		return &PreflightError{Fatal: true, Kind: e.Kind, Problem: "the host of " + c.URL + " is not known (no such host)", Said: netErr(e), Network: true,
			Try: "check the host name in --base-url (or the endpoint's base_url)"}
	case strings.Contains(netErr(e), "server gave HTTP response to HTTPS client"):
		return &PreflightError{Fatal: true, Kind: e.Kind, Problem: "the server at " + c.URL + " speaks plain HTTP, not HTTPS", Said: netErr(e), Network: true,
			Try: "write http:// instead of https:// in --base-url (or the endpoint's base_url)"}
	case strings.Contains(netErr(e), "x509:"):
		return &PreflightError{Fatal: true, Kind: e.Kind, Problem: "the TLS certificate of " + c.URL + " is not trusted", Said: netErr(e), Network: true,
			Try: "check the host name in --base-url against the server's certificate, or install the CA that signed it"}
	case e.Kind == Auth:
		try := "check the key in " + c.KeyVar
		if !c.HasKey {
			try = "the server wants a key: set " + c.KeyVar + " in the environment"
		}
		return &PreflightError{Fatal: true, Kind: e.Kind, Problem: c.URL + " refused the key", Said: a.said(), Try: try}
	}
	return nil
}

// netErr is the network's own error under a classified one.
func netErr(e *Error) string {
	if e.Err != nil {
		return e.Err.Error()
	}
	return e.Error()
}

func (c Check) notAPI(what string) *PreflightError {
	return &PreflightError{Fatal: true, Kind: BadRequest, Problem: c.URL + " is not an " + c.API + " server", Said: what,
		Try: "point --base-url at the API's root (for an OpenAI-compatible server usually http://HOST:PORT/v1)"}
}

// listed is at most n of ids, comma-separated, with how many more.
func listed(ids []string, n int) string {
	if len(ids) <= n {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:n], ", "), len(ids)-n)
}
