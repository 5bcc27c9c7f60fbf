package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// interruptible returns contexts that signals cancel: the first signal
// cancels drain (and prints note, unless empty), the second cancels hard.
// stop releases the signal handler.
func interruptible(ctx context.Context, std IO, note string, sigs ...os.Signal) (hard, drain context.Context, stop func()) {
	hard, cancelHard := context.WithCancel(ctx)
	drain, cancelDrain := context.WithCancel(hard)
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, sigs...)
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
					if note != "" {
						fmt.Fprintln(std.Err, note)
					}
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

// runInterrupts are the contexts of a run: the first Ctrl-C (or SIGTERM)
// cancels drain, so no new session starts and those in flight finish; the
// second cancels hard, stopping calls in flight too. Either way what was
// observed is stored.
//
// SIGPIPE is ignored during a run. Go raises it for a write to any broken
// pipe or socket once it is being listened for, so treating it as Ctrl-C
// would let an endpoint that drops a connection stop the run. Ignored, a
// stdout closed by its reader (such as head) makes only the writes to it
// fail: the run finishes, is stored and marked as it ended, never left
// running, and the command then fails on its output.
func runInterrupts(ctx context.Context, std IO) (hard, drain context.Context, stop func()) {
	signal.Ignore(syscall.SIGPIPE)
	hard, drain, release := interruptible(ctx, std, "\ninterrupt: finishing sessions in flight; press Ctrl-C again to stop now",
		os.Interrupt, syscall.SIGTERM)
	return hard, drain, func() {
		release()
		signal.Reset(syscall.SIGPIPE)
	}
}

// serverInterrupts is the context of a server: the first Ctrl-C (or
// SIGTERM) ends it, and the server shuts down gracefully. SIGPIPE is left
// alone: a client that hangs up must not stop the server.
func serverInterrupts(ctx context.Context, std IO) (context.Context, func()) {
	_, drain, stop := interruptible(ctx, std, "", os.Interrupt, syscall.SIGTERM)
	return drain, stop
}
