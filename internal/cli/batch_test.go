package cli

import (
	"context"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/buildlab/budge/provider/providertest"
	"github.com/buildlab/budge/provider/sim"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/store/storetest"
	"github.com/buildlab/budge/study"
)

// batchServer is budge sim serve in the test, with its batch settings.
func batchServer(t *testing.T, o sim.BatchOptions, log *providertest.RequestLog) (*sim.Server, *httptest.Server) {
	t.Helper()
	so := sim.ServerOptions{Batch: o}
	if log != nil {
		so.OnRequest = log.Add
	}
	srv, err := sim.NewServer(so)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
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
	rows, err := st.Batches(context.Background(), id)
	if err != nil {
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
