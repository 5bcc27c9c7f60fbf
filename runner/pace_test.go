package runner

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/buildlab/budge/chat"
)

// A paced run makes at most its calls per second in every one-second
// window, however many sessions are in flight.
func TestPaceHoldsCallsPerSecond(t *testing.T) {
	var p plan
	jobs := p.jobs(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1)
	var mu sync.Mutex
	perWindow := map[time.Time]int{}
	f := &fakeProvider{before: func(context.Context, *chat.Request) {
		mu.Lock()
		perWindow[time.Now().Truncate(time.Second)]++
		mu.Unlock()
	}}
	var sl sleeps
	cfg := config(&sl)
	cfg.Concurrency = 16
	cfg.Pace = NewPace(LocalGrants(10), 3)
	stats := run(t, cfg, f, &sink{}, jobs)
	if stats.Done != len(jobs) {
		t.Fatalf("%d of %d sessions done", stats.Done, len(jobs))
	}
	for w, n := range perWindow {
		if n > 10 {
			t.Errorf("%d calls in the second from %s, want at most 10", n, w.Format("15:04:05"))
		}
	}
	if len(perWindow) < 3 || cfg.Pace.Waits() == 0 {
		t.Errorf("25 calls at 10 a second took %d windows and %d waits", len(perWindow), cfg.Pace.Waits())
	}
}

// LocalGrants is the count of one process: perSecond calls in each
// one-second window of its clock.
func LocalGrants(perSecond int) Grants {
	var mu sync.Mutex
	var window time.Time
	used := 0
	return func(_ context.Context, want int) (int, time.Time, time.Time, error) {
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		if w := now.Truncate(time.Second); !w.Equal(window) {
			window, used = w, 0
		}
		n := min(want, perSecond-used)
		used += n
		return n, window, window.Add(time.Second), nil
	}
}
