package cli

import (
	"bytes"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/buildlab/budge/provider/providertest"
	"github.com/buildlab/budge/provider/sim"
	"github.com/buildlab/budge/store"
)

// Two resumes of one interrupted run at once: one proceeds, the other is
// refused with who holds the run, and no answered call is paid for twice.
func TestConcurrentResumesOneProceeds(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	t.Parallel() // mostly waiting on child processes and the server
	log := &providertest.RequestLog{}
	hs := simServer(t, sim.ServerOptions{Faults: sim.Faults{Latency: 10 * time.Millisecond}}, log)
	dir := t.TempDir()
	cmd, id := startChild(t, "run", "--dir", dir, "--model", "openai-compatible:sim", "--base-url", hs.URL+"/v1", "--seed", "7", "--concurrency", "4", "--quiet")
	time.Sleep(150 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	// Calls the killed process had in flight still finish at the server
	// (and are logged) after it died; they belong to it, not to the
	// resumes: mark the log once it has stopped growing.
	mark := len(log.Entries())
	for still := 0; still < 5; {
		time.Sleep(20 * time.Millisecond)
		if n := len(log.Entries()); n != mark {
			mark, still = n, 0
		} else {
			still++
		}
	}

	type result struct {
		code   int
		stderr string
	}
	done := make(chan result, 2)
	for range 2 {
		go func() {
			c := childCmd("run", "--dir", dir, "--resume", id, "--quiet")
			var stderr bytes.Buffer
			c.Stderr = &stderr
			err := c.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				code = -1
			}
			done <- result{code, stderr.String()}
		}()
	}
	a, b := <-done, <-done
	if a.code != 0 {
		a, b = b, a
	}
	if a.code != 0 || b.code == 0 || !strings.Contains(b.stderr, "in use by") || !strings.Contains(b.stderr, "pid") {
		t.Fatalf("want one resume to finish and the other refused naming the holder:\nfirst: exit %d %s\nsecond: exit %d %s", a.code, a.stderr, b.code, b.stderr)
	}
	t.Logf("refused: exit %d: %s", b.code, strings.TrimSpace(b.stderr))
	if n := repeatedAnswers(log.Entries()[mark:]); n != 0 {
		t.Errorf("%d answered requests were sent twice by the two resumes", n)
	}
	wantStatus(t, dir, id, store.RunComplete)
}
