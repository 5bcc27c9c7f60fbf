package provider

import (
	"context"

	"github.com/buildlab/budge/chat"
)

// key is the context key of the value of type T that a With function
// sets; each value has a type of its own.
type key[T any] struct{}

func with[T any](ctx context.Context, v T) context.Context {
	return context.WithValue(ctx, key[T]{}, v)
}

func valueOf[T any](ctx context.Context) (T, bool) {
	v, ok := ctx.Value(key[T]{}).(T)
	return v, ok
}

type repeat int

// WithRepeat tells providers which repeat of a session a call belongs to.
// A response cache keys on it, so that repeats stay independent samples
// even for a provider that ignores seeds.
func WithRepeat(ctx context.Context, n int) context.Context {
	return with(ctx, repeat(n))
}

// Repeat returns the repeat index set by WithRepeat, or 0.
func Repeat(ctx context.Context) int {
	n, _ := valueOf[repeat](ctx)
	return int(n)
}

// Call names one attempt of one model call of a session: the session's
// place in the run's plan, which of its calls (its turn) and which attempt
// of that call, in which incarnation of the session. A batching provider
// derives its request ids from it, so results map back exactly.
type Call struct {
	Session     string
	Seq         int
	Turn        int
	Attempt     int
	Incarnation int
}

// WithCall tells providers which call an attempt is.
func WithCall(ctx context.Context, c Call) context.Context {
	return with(ctx, c)
}

// CallOf returns the call set by WithCall; ok is false without one.
func CallOf(ctx context.Context) (Call, bool) {
	return valueOf[Call](ctx)
}

type maxBody int64

// WithMaxBody lowers the largest response body a call accepts to n bytes
// (a session near the end of what it may hold): a body over it fails with
// kind ResponseTooLarge without being read to its end. It never raises a
// provider's own limit.
func WithMaxBody(ctx context.Context, n int64) context.Context {
	return with(ctx, maxBody(n))
}

// MaxBodyOf returns the limit set by WithMaxBody, or 0 without one.
func MaxBodyOf(ctx context.Context) int64 {
	n, _ := valueOf[maxBody](ctx)
	return int64(n)
}

type encoded struct {
	req  *chat.Request
	body []byte
}

// WithEncoded hands providers body, the json.Marshal encoding of req, which
// the caller made anyway (to store it): a provider that keys a request by
// its encoding need not encode it again. body must not change afterwards.
func WithEncoded(ctx context.Context, req *chat.Request, body []byte) context.Context {
	return with(ctx, encoded{req, body})
}

// EncodedOf returns the encoding WithEncoded set for req; ok is false
// without one, or when it was set for another request (a provider in
// between sent a request of its own).
func EncodedOf(ctx context.Context, req *chat.Request) ([]byte, bool) {
	e, ok := valueOf[encoded](ctx)
	if !ok || e.req != req {
		return nil, false
	}
	return e.body, true
}
