package cli

import (
	"testing"
	"time"

	"github.com/buildlab/budge/runner"
)

// TestProgressETA checks the time left the progress line shows: the
// sessions left at the rate so far, and nothing when it cannot be said.
func TestProgressETA(t *testing.T) {
	for _, c := range []struct {
		p    runner.Progress
		want string
	}{
		{runner.Progress{Done: 256, Total: 416, Elapsed: 113 * time.Millisecond}, " · ETA 100ms"},
		{runner.Progress{Done: 100, Total: 400, Elapsed: 10 * time.Second}, " · ETA 30s"},
		{runner.Progress{Done: 10, Total: 1000, Interrupted: 10, Elapsed: time.Minute}, " · ETA 1h38m0s"},
		{runner.Progress{Done: 0, Total: 400, Elapsed: time.Second}, ""},
		{runner.Progress{Done: 400, Total: 400, Elapsed: time.Second}, ""},
	} {
		if got := eta(c.p); got != c.want {
			t.Errorf("eta(%+v) = %q, want %q", c.p, got, c.want)
		}
	}
}
