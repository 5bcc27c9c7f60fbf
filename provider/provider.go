// Package provider defines how budge talks to a model: the Provider
// interface, the kinds of failure a call can end in, and the retry policy
// that decides which of those failures are worth another attempt.
//
// Concrete providers live in subpackages: sim (in process, and behind an
// OpenAI-compatible HTTP server), openai, anthropic, replay (recorded
// answers and the response cache); endpoint turns model names into them and
// providertest is the conformance suite of the HTTP ones. classify.go sorts
// HTTP and transport failures into kinds, the same way for every provider.
// Nothing in store, score, stats or report imports this package's
// subpackages: a finished run is re-scored from what the store holds.
package provider

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/buildlab/budge/chat"
)

// Provider answers chat requests.
type Provider interface {
	// Chat sends one request. A non-nil error is an *Error or is wrapped
	// into one by Classify.
	Chat(ctx context.Context, req *chat.Request) (*chat.Response, error)
	// Info describes the provider for the run's fingerprint.
	Info() Info
}

// Info is the static description of a provider, recorded in every run.
type Info struct {
	Name  string `json:"name"`  // "sim", "openai", ...
	Model string `json:"model"` // the model as named by the user
	// Tools says whether the provider can call tools. When false the
	// evidence is delivered in marked messages instead.
	Tools bool `json:"tools"`
	// Detail is provider-specific configuration worth fingerprinting
	// (a simulator profile's knobs, a base URL without credentials).
	Detail string `json:"detail,omitempty"`
	// InProcess says the provider answers in budge's own process, with no
	// network between (the simulator, a replay): a run needs no adaptive
	// concurrency for it. It is not recorded: a manifest's Info keeps the
	// shape it always had.
	InProcess bool `json:"-"`
	// AnswerKey says the provider was handed the answer key of the deck it
	// answers (sim:oracle): its results test the deck and the instrument,
	// not a model, and every report of its runs says so.
	AnswerKey bool `json:"answer_key,omitempty"`
}

// Kind classifies a failed call.
type Kind string

const (
	RateLimited Kind = "rate_limited"
	Transient   Kind = "transient_server_error"
	Timeout     Kind = "timeout"
	ConnReset   Kind = "connection_reset"
	// ConnRefused is a connection the endpoint's host refused: nothing
	// listens at that address (a wrong port, a server not started).
	ConnRefused   Kind = "connection_refused"
	Malformed     Kind = "malformed_body"
	ContextLength Kind = "context_too_long"
	Auth          Kind = "auth"
	BadRequest    Kind = "bad_request"
	Canceled      Kind = "canceled"
	Unknown       Kind = "unknown"
)

// Infrastructure reports whether a failure of this kind says nothing about
// the model's answer and may be tried again.
func (k Kind) Infrastructure() bool {
	switch k {
	case RateLimited, Transient, Timeout, ConnReset, ConnRefused, Malformed:
		return true
	}
	return false
}

// Error is a classified provider failure.
type Error struct {
	Kind       Kind
	Status     int           // HTTP status when there was one
	RetryAfter time.Duration // from a Retry-After header, when given
	Msg        string
	Err        error
}

func (e *Error) Error() string {
	s := string(e.Kind)
	if e.Status != 0 {
		s += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Classify returns err as an *Error, giving unclassified errors a kind from
// the context's state.
func Classify(ctx context.Context, err error) *Error {
	if pe, done := classified(err); done {
		return pe
	}
	switch {
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return &Error{Kind: Canceled, Err: err}
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Kind: Timeout, Err: err}
	case errors.Is(err, context.Canceled):
		return &Error{Kind: Canceled, Err: err}
	}
	return &Error{Kind: Unknown, Err: err}
}

// classified returns err as the *Error it already is, if it is one; done
// is also set for no error at all (nil).
func classified(err error) (pe *Error, done bool) {
	pe, ok := errors.AsType[*Error](err)
	return pe, ok || err == nil
}

// RetryPolicy is declared once per run and applied identically to every
// call. Every attempt, failed or not, is an observation in the store.
type RetryPolicy struct {
	MaxAttempts int           `json:"max_attempts"`
	BaseDelay   time.Duration `json:"base_delay_ns"`
	MaxDelay    time.Duration `json:"max_delay_ns"`
}

// DefaultRetryPolicy is what a run uses unless told otherwise.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{MaxAttempts: 6, BaseDelay: 500 * time.Millisecond, MaxDelay: 30 * time.Second}
}

// Validate reports every problem with the policy.
func (p RetryPolicy) Validate() []error {
	var errs []error
	if p.MaxAttempts < 1 {
		errs = append(errs, fmt.Errorf("retry policy: max attempts must be at least 1, got %d", p.MaxAttempts))
	}
	if p.BaseDelay < 0 || p.MaxDelay < 0 {
		errs = append(errs, fmt.Errorf("retry policy: delays must not be negative"))
	}
	return errs
}

// Retry reports whether attempt n (1-based) that failed with e should be
// followed by another, and how long to wait first.
func (p RetryPolicy) Retry(n int, e *Error, rng *rand.Rand) (bool, time.Duration) {
	if e == nil || !e.Kind.Infrastructure() || n >= p.MaxAttempts {
		return false, 0
	}
	d := p.BaseDelay << (n - 1)
	if d > p.MaxDelay || d <= 0 {
		d = p.MaxDelay
	}
	// Full jitter keeps many workers from retrying in lockstep.
	if d > 0 && rng != nil {
		d = time.Duration(rng.Int64N(int64(d)) + 1)
	}
	if e.RetryAfter > d {
		d = e.RetryAfter
	}
	return true, d
}
