package runner

import (
	"context"
	"sync"
	"time"

	"github.com/buildlab/budge/provider"
)

// Pace holds a run to at most a number of calls per second. Calls are
// counted in one-second windows; a process takes a few calls at a time
// from a Grants, which is this process's own count or, for workers of one
// run on several machines, a count in the shared store, so that the limit
// holds for the run as a whole. A call that finds its window used up
// waits for the next.
type Pace struct {
	grant Grants
	batch int

	mu     sync.Mutex
	left   int       // calls granted to this process and not made
	window time.Time // the window they were granted in
	waits  int
}

// Grants hands out calls: up to want of the window now is in, and when the
// next window starts.
type Grants func(ctx context.Context, want int) (granted int, window, next time.Time, err error)

// NewPace paces calls through g, taking batch calls at a time (at least 1).
func NewPace(g Grants, batch int) *Pace {
	return &Pace{grant: g, batch: max(1, batch)}
}

// Wait returns when a call may be made, or with ctx's error.
func (p *Pace) Wait(ctx context.Context) error {
	for {
		p.mu.Lock()
		if p.left > 0 && time.Since(p.window) >= time.Second {
			// Calls granted in a window that is over are not carried on.
			p.left = 0
		}
		if p.left > 0 {
			p.left--
			p.mu.Unlock()
			return nil
		}
		granted, window, next, err := p.grant(ctx, p.batch)
		if err != nil {
			p.mu.Unlock()
			return err
		}
		if granted > 0 {
			p.left, p.window = granted-1, window
			p.mu.Unlock()
			return nil
		}
		p.waits++
		p.mu.Unlock()
		if err := provider.Sleep(ctx, time.Until(next)); err != nil {
			return err
		}
	}
}

// Waits is how often a call found the limit reached and waited.
func (p *Pace) Waits() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waits
}
