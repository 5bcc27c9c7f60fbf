package cli

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/buildlab/budge/provider/sim"
	"github.com/buildlab/budge/store"
)

// TestInterruptStopsInSeconds: Ctrl-C on a run whose calls take 30 s sends
// no new call, counts down on stderr, stops the calls in flight after the
// grace and exits within 10 s, leaving an interrupted run that a resume
// completes.
func TestInterruptStopsInSeconds(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	t.Parallel() // mostly waiting on child processes and the server
	slow := simServer(t, sim.ServerOptions{Faults: sim.Faults{Latency: 30 * time.Second}}, nil)
	dir := t.TempDir()
	cmd, _, id := startChildOut(t, "run", "--dir", dir, "--model", "openai-compatible:sim", "--base-url", slow.URL+"/v1", "--concurrency", "4", "--quiet")
	stderr := cmd.Stderr.(*strings.Builder) // read once the child has exited
	time.Sleep(500 * time.Millisecond)      // the first calls are in flight
	start := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	took := time.Since(start)
	if code := cmd.ProcessState.ExitCode(); code != ExitIncomplete || took > 10*time.Second {
		t.Fatalf("exit %d after %s, want exit 3 within 10s\n%s", code, took, stderr.String())
	}
	t.Logf("exited %s after Ctrl-C", took.Round(10*time.Millisecond))
	for _, w := range []string{"no new calls", "calls in flight stop in 2s", "stopping the calls still in flight", "--resume " + id} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
		}
	}
	wantStatus(t, dir, id, store.RunInterrupted)
	fast := simServer(t, sim.ServerOptions{}, nil)
	if code, out, errs := budge(t, "run", "--dir", dir, "--resume", id, "--base-url", fast.URL+"/v1", "--quiet"); code != ExitOK || !strings.Contains(out, "416 complete") {
		t.Fatalf("resume: exit %d\n%s\n%s", code, out, errs)
	}
}
