package runner

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/buildlab/budge/provider"
)

// An outage is not an observation of the model: when the endpoint cannot be
// reached at all, the run pauses instead of spending the attempts of every
// call in flight on it.
//
// The rule. A failed attempt is a connection failure when its kind is
// provider.ConnRefused or provider.ConnReset (reset or aborted, a DNS failure,
// any other network error) or provider.Timeout. Every other outcome — a
// response, or an error the endpoint answered with (429, 5xx, 4xx, a body
// cut short) — shows that the endpoint is reachable, and ends the streak.
// The run enters an outage when the streak reaches OutageAfter connection
// failures in a row (default 4) from at least two different calls: one call
// failing alone, with nothing else in between, is that call's trouble and
// is left to the retry policy.
//
// In an outage no session starts; the connection failures of the streak
// that made the outage, and all those after it, do not count toward
// MaxAttempts (every attempt is still stored, with its kind); and one call
// at a time probes the endpoint, its retries spaced by an exponential
// backoff (from max(BaseDelay, 250ms), doubling, capped at max(MaxDelay, 8
// times the first)). Any answer ends the outage and the run goes on. When
// the outage has lasted OutageWait (default 2 minutes) the run stops:
// sessions in flight end as interrupted, no other session starts, and
// Stats.StoppedBy is "outage".

// Defaults of Config's outage and rate-limit fields.
const (
	DefaultOutageWait    = 2 * time.Minute
	DefaultOutageAfter   = 4
	DefaultRateLimitWait = 5 * time.Minute
)

// errOutage ends a session that was waiting out an outage when the run gave
// up on the endpoint.
var errOutage = errors.New("the endpoint stayed unreachable")

// connectionFailure reports whether a failed attempt of this kind says the
// endpoint could not be reached at all.
func connectionFailure(k provider.Kind) bool {
	return k == provider.ConnReset || k == provider.ConnRefused || k == provider.Timeout
}

// outages watches the run's attempts for an outage and, in one, holds
// calls back while one of them probes.
type outages struct {
	wait        time.Duration // <= 0: never pause
	after       int
	first, most time.Duration // probe backoff
	sleep       func(context.Context, time.Duration) error
	stopRun     context.CancelFunc
	notice      func(on bool, since time.Time)

	mu       sync.Mutex
	streak   int             // connection failures in a row
	streakID int             // names the current streak
	calls    map[string]bool // the calls of the current streak
	excused  map[int]bool    // streaks that became outages
	on       bool
	started  time.Time     // of the current or last outage
	waited   time.Duration // probe delays asked for in this outage
	probes   int
	probing  bool
	stopped  bool
	count    int
	total    time.Duration // time spent in outages
	change   chan struct{} // closed and replaced on every change
}

func newOutages(cfg Config, stopRun context.CancelFunc) *outages {
	first := max(cfg.Retry.BaseDelay, 250*time.Millisecond)
	return &outages{wait: cfg.OutageWait, after: cfg.OutageAfter, first: first, most: max(cfg.Retry.MaxDelay, 8*first),
		sleep: cfg.Sleep, stopRun: stopRun, notice: cfg.OutageNotice,
		calls: map[string]bool{}, excused: map[int]bool{}, change: make(chan struct{})}
}

func (o *outages) broadcast() {
	close(o.change)
	o.change = make(chan struct{})
}

// elapsed is how long the current outage has lasted: by the clock, or by
// the probe delays asked for when a Sleep that does not wait says more.
func (o *outages) elapsed() time.Duration {
	return max(time.Since(o.started), o.waited)
}

// admit is called before every attempt. Outside an outage it returns at
// once. In one, it waits until the outage ends, or until no other call is
// probing: then this attempt is the probe (probe is true), made after the
// next delay of the backoff. It returns errOutage once the run gave up.
func (o *outages) admit(ctx context.Context) (probe bool, err error) {
	for {
		o.mu.Lock()
		if o.stopped {
			o.mu.Unlock()
			return false, errOutage
		}
		if !o.on {
			o.mu.Unlock()
			return false, nil
		}
		if !o.probing {
			left := o.wait - o.elapsed()
			if left <= 0 {
				o.stopLocked()
				o.mu.Unlock()
				return false, errOutage
			}
			d := o.first
			for i := 0; i < o.probes && d < o.most; i++ {
				d *= 2
			}
			d = min(d, o.most, left)
			o.probes++
			o.waited += d
			o.probing = true
			o.mu.Unlock()
			if err := o.sleep(ctx, d); err != nil {
				o.mu.Lock()
				o.probing = false
				o.broadcast()
				o.mu.Unlock()
				return false, err
			}
			return true, nil
		}
		ch := o.change
		o.mu.Unlock()
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-ch:
		}
	}
}

// stopLocked gives up on the endpoint: the run's sessions are cancelled.
func (o *outages) stopLocked() {
	if o.stopped {
		return
	}
	o.stopped = true
	o.total += o.elapsed()
	o.stopRun()
	o.broadcast()
}

// report records the outcome of an attempt of call: its error kind, or ""
// when it got a response; probe says whether it was the probe. For a
// connection failure it returns the streak it belongs to and whether that
// streak is an outage (the failure does not count toward MaxAttempts).
func (o *outages) report(call string, kind provider.Kind, probe bool) (streak int, excused bool) {
	o.mu.Lock()
	var notify func()
	if probe {
		o.probing = false
	}
	switch {
	case kind == provider.Canceled:
		// Says nothing about the endpoint.
	case connectionFailure(kind):
		o.streak++
		o.calls[call] = true
		if !o.on && !o.stopped && o.wait > 0 && o.streak >= o.after && len(o.calls) >= 2 {
			o.on, o.started, o.waited, o.probes = true, time.Now(), 0, 0
			o.excused[o.streakID] = true
			o.count++
			if o.notice != nil {
				since := o.started
				notify = func() { o.notice(true, since) }
			}
		}
	default:
		if o.on && !o.stopped {
			o.on = false
			o.total += o.elapsed()
			if o.notice != nil {
				since := o.started
				notify = func() { o.notice(false, since) }
			}
		}
		o.streak = 0
		o.streakID++
		clear(o.calls)
	}
	streak, excused = o.streakID, o.excused[o.streakID]
	o.broadcast()
	o.mu.Unlock()
	if notify != nil {
		notify()
	}
	return streak, excused
}

// counted is how many of a call's connection failures, by streak, count
// toward MaxAttempts: those of streaks that did not become outages.
func (o *outages) counted(streaks []int) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, s := range streaks {
		if !o.excused[s] {
			n++
		}
	}
	return n
}

// clear waits, for the dispatcher, until no outage is on. It returns
// errOutage once the run gave up.
func (o *outages) clear(ctx context.Context) error {
	for {
		o.mu.Lock()
		stopped, on, ch := o.stopped, o.on, o.change
		o.mu.Unlock()
		switch {
		case stopped:
			return errOutage
		case !on:
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

// state reports, for Stats, whether the run gave up, how many outages
// there were, when the last one started and how long they lasted in all.
func (o *outages) state() (stopped bool, count int, started time.Time, total time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	total = o.total
	if o.on && !o.stopped {
		total += o.elapsed()
	}
	return o.stopped, o.count, o.started, total
}

// release ends a probe that was not made.
func (o *outages) release(probe bool) {
	if !probe {
		return
	}
	o.mu.Lock()
	o.probing = false
	o.broadcast()
	o.mu.Unlock()
}
