package provider

import (
	"context"
	"sync/atomic"

	"github.com/buildlab/budge/limits"
	"golang.org/x/sync/semaphore"
)

// Response size limits. A chat answer is kilobytes; a body of megabytes is
// a misbehaving server, and many of them at once must not exhaust memory.
const (
	// DefaultMaxBody is the largest response body a provider accepts, unless
	// its configuration says otherwise (openai.Config.MaxBody,
	// anthropic.Config.MaxBody, endpoint.Options.MaxBody). A 2xx body over
	// the limit fails with kind ResponseTooLarge; it is not read to its end.
	DefaultMaxBody = limits.MaxResponseBody
	// DefaultResponseBudget is how many response bytes all the calls of a
	// process may hold at once.
	DefaultResponseBudget = 256 << 20
	// MaxErrorBody is how much of an error body (a status of 300 or more)
	// is read: only an excerpt of it is kept.
	MaxErrorBody = 64 << 10
)

// Budget bounds the response bytes held at once by the calls that share
// it. A call reserves what a body may take before reading it: its
// Content-Length when the server declares one, or the whole size limit when
// it does not (a compressed or chunked body), then gives back what the body
// did not use as soon as it is read, and the rest when the call returns.
// A call that finds the budget spent waits, first come first served, within
// its own timeout. A call holds nothing while it waits, so calls cannot
// deadlock each other.
type Budget struct {
	total   int64
	sem     *semaphore.Weighted
	inUse   atomic.Int64
	high    atomic.Int64
	waiting atomic.Int64
}

// NewBudget returns a budget of total bytes (at least 1 MiB).
func NewBudget(total int64) *Budget {
	total = max(total, 1<<20)
	return &Budget{total: total, sem: semaphore.NewWeighted(total)}
}

var responseBudget atomic.Pointer[Budget]

func init() { responseBudget.Store(NewBudget(DefaultResponseBudget)) }

// ResponseBudget is the process's budget, shared by every provider that is
// not given its own.
func ResponseBudget() *Budget { return responseBudget.Load() }

// Acquire reserves n bytes (at most the whole budget), waiting until they
// are free or ctx ends. It returns the bytes reserved, to give back to
// Release.
func (b *Budget) Acquire(ctx context.Context, n int64) (int64, error) {
	n = min(max(n, 0), b.total)
	if n == 0 {
		return 0, nil
	}
	if !b.sem.TryAcquire(n) {
		b.waiting.Add(1)
		err := b.sem.Acquire(ctx, n)
		b.waiting.Add(-1)
		if err != nil {
			return 0, err
		}
	}
	used := b.inUse.Add(n)
	for {
		h := b.high.Load()
		if used <= h || b.high.CompareAndSwap(h, used) {
			break
		}
	}
	return n, nil
}

// Release gives back n bytes.
func (b *Budget) Release(n int64) {
	if n <= 0 {
		return
	}
	b.inUse.Add(-n)
	b.sem.Release(n)
}

// Total is the budget's size in bytes.
func (b *Budget) Total() int64 { return b.total }

// InUse is how many bytes are reserved now.
func (b *Budget) InUse() int64 { return b.inUse.Load() }

// HighWater is the most bytes ever reserved at once.
func (b *Budget) HighWater() int64 { return b.high.Load() }

// Waiting is how many calls are waiting for bytes now.
func (b *Budget) Waiting() int { return int(b.waiting.Load()) }
