package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// interruptible returns contexts that signals cancel: the first signal
// cancels drain (and prints note, unless empty), the second cancels hard.
// With a grace above zero, hard is cancelled grace after the first signal
// too, the seconds left shown on std.Err. stop releases the signal handler.
func interruptible(ctx context.Context, std IO, note string, grace time.Duration, sigs ...os.Signal) (hard, drain context.Context, stop func()) {
	hard, cancelHard := context.WithCancel(ctx)
	drain, cancelDrain := context.WithCancel(hard)
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, sigs...)
	done := make(chan struct{})
	go func() {
		n := 0
		var tick <-chan time.Time
		var left time.Duration
		for {
			select {
			case <-done:
				return
			case <-tick:
				left -= time.Second
				if left <= 0 {
					fmt.Fprintln(std.Err, "interrupt: stopping the calls still in flight (their sessions stay resumable)")
					cancelHard()
					return
				}
				fmt.Fprintf(std.Err, "interrupt: calls in flight stop in %s\n", left)
			case <-sig:
				n++
				if n > 1 {
					fmt.Fprintln(std.Err, "interrupt: stopping now")
					cancelHard()
					return
				}
				if note != "" {
					fmt.Fprintln(std.Err, note)
				}
				cancelDrain()
				if grace > 0 {
					left = grace
					t := time.NewTicker(time.Second)
					defer t.Stop()
					tick = t.C
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

// InterruptGrace is how long a run waits, after a first Ctrl-C, for the
// calls in flight before it stops them.
const InterruptGrace = 5 * time.Second

// runInterrupts are the contexts of a run: the first Ctrl-C (or SIGTERM)
// cancels drain, so no new call is sent and the calls in flight may finish,
// for InterruptGrace at most (counted down on stderr); the second, or the
// end of the grace, cancels hard, stopping calls in flight. Either way what
// was observed is stored and the run can be resumed.
//
// SIGPIPE is ignored during a run. Go raises it for a write to any broken
// pipe or socket once it is being listened for, so treating it as Ctrl-C
// would let an endpoint that drops a connection stop the run. Ignored, a
// stdout closed by its reader (such as head) makes only the writes to it
// fail: the run finishes, is stored and marked as it ended, never left
// running, and the command then fails on its output.
func runInterrupts(ctx context.Context, std IO) (hard, drain context.Context, stop func()) {
	signal.Ignore(syscall.SIGPIPE)
	hard, drain, release := interruptible(ctx, std,
		fmt.Sprintf("\ninterrupt: no new calls; waiting up to %s for the calls in flight (Ctrl-C again stops now); the run stays resumable", InterruptGrace),
		InterruptGrace, os.Interrupt, syscall.SIGTERM)
	return hard, drain, func() {
		release()
		signal.Reset(syscall.SIGPIPE)
	}
}

// serverInterrupts is the context of a server: the first Ctrl-C (or
// SIGTERM) ends it, and the server shuts down gracefully. SIGPIPE is left
// alone: a client that hangs up must not stop the server.
func serverInterrupts(ctx context.Context, std IO) (context.Context, func()) {
	_, drain, stop := interruptible(ctx, std, "", 0, os.Interrupt, syscall.SIGTERM)
	return drain, stop
}
