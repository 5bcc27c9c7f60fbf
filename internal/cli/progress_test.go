package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/buildlab/budge/provider/batch"
	"github.com/buildlab/budge/runner"
)

// TestProgressETA checks the time left the progress line shows: the
// sessions left at the rate so far, and nothing when it cannot be said.
func TestProgressETA(t *testing.T) {
	t.Parallel()
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

// TestBatchPrinter checks the lines a batch run's waves print on stderr.
func TestBatchPrinter(t *testing.T) {
	t.Parallel()
	var errs strings.Builder
	p := batchPrinter(IO{Err: &errs})
	p(batch.Event{Wave: 1, Requests: 416, Batches: 1, Window: 24 * time.Hour})
	p(batch.Event{Wave: 1, Note: "waiting", Counts: map[string]int{"in_progress": 1, "completed": 2}})
	p(batch.Event{Note: "collecting batch b1"})
	p(batch.Event{})
	want := "batch: wave 1: 416 request(s) in 1 batch(es); the provider's window is 24h0m0s\n" +
		"batch: wave 1: waiting (completed 2, in_progress 1)\n" +
		"batch: collecting batch b1\n"
	if errs.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", errs.String(), want)
	}
}
