package cli

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/buildlab/budge/provider/sim"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
	"github.com/buildlab/budge/testkit/paralleltest"
	"github.com/buildlab/budge/testkit/pgtest"
	"github.com/buildlab/budge/testkit/providertest"
	"github.com/buildlab/budge/testkit/storetest"
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
// (storetest.PostgresURL) is stopped when they end. Up to four parallel
// tests run at once on any machine: most wait on child processes, servers
// and outages rather than compute.
func TestMain(m *testing.M) {
	if os.Getenv("BUDGE_TEST_CHILD") == "1" {
		os.Exit(Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	paralleltest.AtLeast(4)
	os.Exit(pgtest.Main(m))
}

// TestKillDoesNotCorruptStore kills runs with SIGKILL at several points and
// checks that what was stored before the kill is intact and reportable, and
// that the cells that never finished are reported as missing.
func TestKillDoesNotCorruptStore(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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

// batchServer is budge sim serve in the test, with its batch settings.
func batchServer(t *testing.T, o sim.BatchOptions, log *providertest.RequestLog) (*sim.Server, *httptest.Server) {
	t.Helper()
	so := sim.ServerOptions{Batch: o}
	if log != nil {
		so.OnRequest = log.Add
	}
	srv, hs, _ := providertest.SimServer(t, so)
	return srv, hs
}

// batchModel is the flags that reach the test server in one style.
func batchModel(t *testing.T, style, url string) []string {
	if style == "anthropic" {
		t.Setenv("ANTHROPIC_API_KEY", "batch-test-credential")
		// The Messages API has no seed: the simulator answers by content.
		return []string{"--model", "anthropic:sim", "--base-url", url, "--structured-output", "json_schema"}
	}
	return []string{"--model", "openai-compatible:sim", "--base-url", url + "/v1"}
}

// A batch run killed with SIGKILL during a wave, and again later, then
// resumed: no request is answered twice by the server (nothing paid
// twice), every batch the killed processes submitted is collected rather
// than sent again, and the sessions are those of the same seed without
// --batch.
func TestBatchResumeAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	t.Parallel() // mostly waiting on child processes and the server
	log := &providertest.RequestLog{}
	srv, hs := batchServer(t, sim.BatchOptions{Delay: 700 * time.Millisecond}, log)
	dir := t.TempDir()
	model := batchModel(t, "openai", hs.URL)
	cmd, id := startChild(t, append([]string{"run", "--dir", dir, "--seed", "13", "--batch", "--quiet"}, model...)...)
	// During the first wave: the batch is submitted and in progress.
	waitFor(t, func() bool { return srv.BatchCounts()["openai"] >= 1 })
	time.Sleep(100 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	first := srv.BatchCounts()["openai"]

	// The resume collects the killed process's batch; kill it during its
	// second wave.
	cmd, got := startChild(t, "run", "--dir", dir, "--resume", id, "--quiet")
	if got != id {
		t.Fatalf("resume printed run %s, want %s", got, id)
	}
	waitFor(t, func() bool { return srv.BatchCounts()["openai"] >= first+1 })
	time.Sleep(300 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	code, out, errs := budge(t, "run", "--dir", dir, "--resume", id)
	if code != ExitOK {
		t.Fatalf("last resume: exit %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(errs, "collecting batch") {
		t.Errorf("the last resume did not collect a batch of the killed process:\n%s", errs)
	}
	st := storetest.OpenDir(t, dir)
	res, err := study.LoadPressure(context.Background(), st, id)
	if err != nil {
		t.Fatal(err)
	}
	if res.Run.Status != store.RunComplete || res.Manifest.Counts.Complete != 416 {
		t.Fatalf("status %s, counts %+v", res.Run.Status, res.Manifest.Counts)
	}
	seen := map[string]int{}
	for _, e := range log.Entries() {
		if e.Fault == "batch" {
			seen[e.BodySHA]++
		}
	}
	for sha, n := range seen {
		if n > 1 {
			t.Errorf("request %s answered %d times", sha[:12], n)
		}
	}
	if bi := res.Manifest.Net.Batch; bi.Requests != len(seen) || bi.Batches != srv.BatchCounts()["openai"] {
		t.Errorf("manifest: %d requests in %d batches; the server answered %d requests in %d batches", bi.Requests, bi.Batches, len(seen), srv.BatchCounts()["openai"])
	}
	if res.Manifest.Net.Batch.Reattached == 0 {
		t.Errorf("no batch of a killed process was collected: %+v", res.Manifest.Net.Batch)
	}
	t.Logf("%d batches at the server, %d requests answered once each, batch record %+v", srv.BatchCounts()["openai"], len(seen), *res.Manifest.Net.Batch)

	refDir := t.TempDir()
	code, out, errs = budge(t, append([]string{"run", "--dir", refDir, "--seed", "13", "--quiet"}, model...)...)
	if code != ExitOK {
		t.Fatalf("direct: exit %d\n%s%s", code, out, errs)
	}
	sameTranscripts(t, st, id, storetest.OpenDir(t, refDir), runLine.FindStringSubmatch(out)[1])
}

// waitFor polls cond for up to 30 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Ctrl-C twice during a wave stops the run now: its open batch is
// cancelled at the provider and stored as cancelled, the run is marked
// interrupted, and a resume sends the cancelled requests again in new
// batches and completes the run with the sessions of the same seed.
func TestBatchInterruptCancelsOpenBatches(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	t.Parallel() // mostly waiting on child processes and the server
	// The first batch stays open until it is cancelled; the later ones
	// finish at once.
	srv, hs := batchServer(t, sim.BatchOptions{Delay: 50 * time.Millisecond, Hold: []int{1}}, nil)
	dir := t.TempDir()
	model := batchModel(t, "openai", hs.URL)
	cmd, id := startChild(t, append([]string{"run", "--dir", dir, "--seed", "19", "--batch", "--quiet"}, model...)...)
	waitFor(t, func() bool { return srv.BatchCounts()["openai"] >= 1 })
	cmd.Process.Signal(syscall.SIGINT)
	time.Sleep(50 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != ExitIncomplete {
		t.Fatalf("interrupted batch run: exit %d (%v), want %d", code, err, ExitIncomplete)
	}
	if got := srv.BatchStates(); got["cancelled"] != 1 || got["in_progress"] != 0 {
		t.Fatalf("batches at the server after the interrupt: %v, want the one open batch cancelled", got)
	}
	st := storetest.OpenDir(t, dir)
	var rows []store.BatchRow
	if err := st.Batches(context.Background(), id, func(r store.BatchRow) error {
		rows = append(rows, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].State != "cancelled" {
		t.Fatalf("stored batches: %+v, want one, cancelled", rows)
	}
	res, err := study.LoadPressure(context.Background(), st, id)
	if err != nil {
		t.Fatal(err)
	}
	if res.Run.Status != store.RunInterrupted {
		t.Fatalf("run status %s, want interrupted", res.Run.Status)
	}

	code, out, errs := budge(t, "run", "--dir", dir, "--resume", id)
	if code != ExitOK {
		t.Fatalf("resume: exit %d\n%s%s", code, out, errs)
	}
	if n := srv.BatchStates()["cancelled"]; n != 1 {
		t.Errorf("%d cancelled batches after the resume, want 1", n)
	}
	refDir := t.TempDir()
	code, out, errs = budge(t, append([]string{"run", "--dir", refDir, "--seed", "19", "--quiet"}, model...)...)
	if code != ExitOK {
		t.Fatalf("direct: exit %d\n%s%s", code, out, errs)
	}
	sameTranscripts(t, storetest.OpenDir(t, dir), id, storetest.OpenDir(t, refDir), runLine.FindStringSubmatch(out)[1])
}

// Against budge sim serve, a framing run's openai-compatible:sim is the
// default judge, as --model sim is in process: the same sessions as
// openai-compatible:judge.
func TestFramingOnSimServeSimIsTheJudge(t *testing.T) {
	t.Parallel()
	k, err := judgeKnowledge("sample")
	if err != nil {
		t.Fatal(err)
	}
	hs := simServer(t, sim.ServerOptions{Judge: k}, nil)
	dir := t.TempDir()
	var ids []string
	for _, model := range []string{"openai-compatible:sim", "openai-compatible:judge"} {
		code, out, errs := budge(t, "framing", "run", "--dir", dir, "--model", model, "--base-url", hs.URL+"/v1", "--data", "sample", "--seed", "6", "--quiet")
		if code != ExitOK {
			t.Fatalf("%s: exit %d\n%s%s", model, code, out, errs)
		}
		ids = append(ids, runLine.FindStringSubmatch(out)[1])
	}
	st := storetest.OpenDir(t, dir)
	sameTranscripts(t, st, ids[0], st, ids[1])
}
