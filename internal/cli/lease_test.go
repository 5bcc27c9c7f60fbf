package cli

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/buildlab/budge/provider/providertest"
	"github.com/buildlab/budge/provider/sim"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/store/pgtest"
	"github.com/buildlab/budge/store/storetest"
	"github.com/buildlab/budge/study"
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

// TestMain lets the test binary act as budge in a child process, so a test
// can kill a real run with SIGKILL; the PostgreSQL server the tests share
// (storetest.PostgresURL) is stopped when they end.
func TestMain(m *testing.M) {
	if os.Getenv("BUDGE_TEST_CHILD") == "1" {
		os.Exit(Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(pgtest.Main(m))
}

// TestKillDoesNotCorruptStore kills runs with SIGKILL at several points and
// checks that what was stored before the kill is intact and reportable, and
// that the cells that never finished are reported as missing.
func TestKillDoesNotCorruptStore(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	profile := filepath.Join(t.TempDir(), "slow.yaml")
	os.WriteFile(profile, []byte("name: slow\nlatency_ms: 4\nreversal: {authority: {X: 0.3, Y: 0.1}}\ncorrection_uptake: 0.9\n"), 0o600)
	// Each run is killed once it has stored at least this many of its 416
	// sessions (the first as soon as the run exists), so every kill lands
	// mid-run, whatever the machine's speed.
	for _, stored := range []int{0, 60, 200} {
		t.Run(fmt.Sprintf("after %d stored", stored), func(t *testing.T) {
			dir := t.TempDir()
			cmd, id := startChild(t, "run", "--dir", dir, "--model", "sim:"+profile, "--concurrency", "4", "--quiet")
			db, _ := sql.Open("sqlite", filepath.Join(dir, "budge.db"))
			defer db.Close()
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
				var n int
				if db.QueryRow("SELECT count(*) FROM sessions WHERE run_id = ?", id).Scan(&n) == nil && n >= stored {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the run did not store %d sessions within a minute", stored)
				}
			}
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
				t.Fatalf("the run ended (%v) before the kill: the kill must land mid-run", cmd.ProcessState)
			}

			st := storetest.OpenDir(t, dir)
			var ok string
			if err := db.QueryRow("PRAGMA integrity_check").Scan(&ok); err != nil || ok != "ok" {
				t.Fatalf("integrity_check = %q, %v", ok, err)
			}
			res, err := study.LoadPressure(context.Background(), st, id)
			if err != nil {
				t.Fatalf("a killed run must still load: %v", err)
			}
			c := res.Manifest.Counts
			if c.Complete+c.Failed+c.Missing != c.Planned || c.Planned != 416 {
				t.Fatalf("counts do not add up: %+v", c)
			}
			sessions, err := st.Sessions(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			for _, se := range sessions {
				if len(se.Messages) == 0 || len(se.Attempts) == 0 {
					t.Fatalf("session %s stored without messages or attempts", se.ID)
				}
				if _, err := st.Artifact(context.Background(), id, se.TraceSHA); err != nil {
					t.Fatalf("session %s: trace artifact: %v", se.ID, err)
				}
				for _, a := range se.Attempts {
					if _, err := st.Artifact(context.Background(), id, a.RequestSHA); err != nil {
						t.Fatalf("session %s: request artifact: %v", se.ID, err)
					}
				}
			}
			missing := 0
			outs, err := res.Outcomes(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range outs {
				if o.InitialStatus == "missing" {
					missing++
				}
			}
			if missing != c.Missing {
				t.Errorf("missing cells scored %d, counted %d", missing, c.Missing)
			}
			if c.Missing == 0 || len(sessions) < stored {
				t.Errorf("killed after %d stored: %d stored, %d missing; the kill must leave missing sessions", stored, len(sessions), c.Missing)
			}
			t.Logf("killed after %d stored: %d stored, %d missing", stored, len(sessions), c.Missing)
			code, out, errs := budge(t, "report", id, "--dir", dir)
			if code != ExitOK || !strings.Contains(out, fmt.Sprintf("%d missing", c.Missing)) {
				t.Errorf("report of a killed run: exit %d\n%s%s", code, out, errs)
			}
		})
	}
}

// A run whose stdout reader goes away (budge run | head -1) is not killed
// by SIGPIPE: it finishes, is stored complete, and exits as the run ended.
func TestClosedStdoutFinishesTheRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	dir := t.TempDir()
	cmd, stdout, id := startChildOut(t, "run", "--dir", dir, "--quiet")
	stdout.Close() // the reader goes away, as head does
	err := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		t.Fatalf("the run was killed by %v", ws.Signal())
	}
	if err != nil {
		t.Errorf("a complete run whose reader went away exits 0 (the run says how it ended), got %v", err)
	}
	wantStatus(t, dir, id, store.RunComplete)
}

// wantStatus checks the stored status of run id in the store at dir.
func wantStatus(t *testing.T, dir, id, want string) {
	t.Helper()
	run, err := storetest.OpenDir(t, dir).GetRun(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != want {
		t.Errorf("run %s is %s, want %s", id, run.Status, want)
	}
}

// A run killed while running is listed as stopped (its process is gone),
// so it is resumed rather than waited for.
func TestRunsShowsKilledRunStopped(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	dir := t.TempDir()
	log := &providertest.RequestLog{}
	hs := simServer(t, sim.ServerOptions{Faults: sim.Faults{Latency: 10 * time.Millisecond}}, log)
	cmd, id := startChild(t, "run", "--dir", dir, "--model", "openai-compatible:sim", "--base-url", hs.URL+"/v1", "--concurrency", "2", "--quiet")
	time.Sleep(100 * time.Millisecond)
	code, out, _ := budge(t, "runs", "--dir", dir)
	if code != ExitOK || !strings.Contains(out, id) || !strings.Contains(out, "running") {
		t.Fatalf("while it runs: %s", out)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if _, out, _ := budge(t, "runs", "--dir", dir); !strings.Contains(out, "stopped") || strings.Contains(out, "running") {
		t.Errorf("after the kill the run must be listed as stopped:\n%s", out)
	}
	wantStatus(t, dir, id, store.RunRunning) // as stored: a resume finishes it
}

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
