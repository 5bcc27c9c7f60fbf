package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// interruptible returns the contexts of a run: the first Ctrl-C (or SIGTERM)
// cancels drain, so no new session starts and those in flight finish; the
// second cancels hard, stopping calls in flight too. Either way what was
// observed is stored. stop releases the signal handler.
func interruptible(ctx context.Context, std IO) (hard, drain context.Context, stop func()) {
	hard, cancelHard := context.WithCancel(ctx)
	drain, cancelDrain := context.WithCancel(hard)
	sig := make(chan os.Signal, 2)
	// SIGPIPE (stdout closed by a reader such as head) is caught too, so
	// that writes fail instead of killing the process: the run then stops
	// like any interrupted run and is marked so, never left running.
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM, syscall.SIGPIPE)
	done := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case <-done:
				return
			case <-sig:
				n++
				if n == 1 {
					fmt.Fprintln(std.Err, "\ninterrupt: finishing sessions in flight; press Ctrl-C again to stop now")
					cancelDrain()
				} else {
					cancelHard()
					return
				}
			}
		}
	}()
	return hard, drain, func() {
		signal.Stop(sig)
		close(done)
		cancelDrain()
		cancelHard()
	}
}
