package runner

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider"
)

// Adaptive bounds the provider calls in flight and adapts the bound to rate
// limiting: a rate-limited call halves it (once per round: calls sent
// before the last cut do not cut again), and every call that succeeds
// raises it by one, back up to the run's concurrency. The session pool stays
// at the run's concurrency; only calls wait here.
type Adaptive struct {
	mu       sync.Mutex
	max      float64
	limit    float64
	inflight int
	lastCut  time.Time
	wake     chan struct{}
	cuts     int
	lowest   int
}

// NewAdaptive starts at max calls in flight.
func NewAdaptive(max int) *Adaptive {
	if max < 1 {
		max = 1
	}
	return &Adaptive{max: float64(max), limit: float64(max), wake: make(chan struct{}), lowest: max}
}

// Acquire waits for a slot and returns the time the call may start.
func (a *Adaptive) Acquire(ctx context.Context) (time.Time, error) {
	for {
		a.mu.Lock()
		if a.inflight < int(a.limit) {
			a.inflight++
			a.mu.Unlock()
			return time.Now(), nil
		}
		ch := a.wake
		a.mu.Unlock()
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-ch:
		}
	}
}

// Release returns a slot; rateLimited says the call was refused with 429.
func (a *Adaptive) Release(started time.Time, rateLimited bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.inflight--
	switch {
	case rateLimited && started.After(a.lastCut):
		a.limit = max(1, a.limit/2)
		a.lastCut = time.Now()
		a.cuts++
		a.lowest = min(a.lowest, int(a.limit))
	case !rateLimited && a.limit < a.max:
		a.limit = min(a.max, a.limit+1)
	}
	close(a.wake)
	a.wake = make(chan struct{})
}

// State reports the current bound, the lowest it went and how often it was cut.
func (a *Adaptive) State() (limit, lowest, cuts int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return int(a.limit), a.lowest, a.cuts
}

// chatOnce makes one call, paced and through the adaptive bound when
// there are those.
func chatOnce(ctx context.Context, cfg Config, p provider.Provider, req *chat.Request) (*chat.Response, error) {
	if cfg.Pace != nil {
		if err := cfg.Pace.Wait(ctx); err != nil {
			return nil, &provider.Error{Kind: provider.Canceled, Err: err}
		}
	}
	if cfg.Adapt == nil {
		return p.Chat(ctx, req)
	}
	started, err := cfg.Adapt.Acquire(ctx)
	if err != nil {
		return nil, &provider.Error{Kind: provider.Canceled, Err: err}
	}
	r, err := p.Chat(ctx, req)
	var pe *provider.Error
	cfg.Adapt.Release(started, err != nil && errors.As(err, &pe) && pe.Kind == provider.RateLimited)
	return r, err
}
