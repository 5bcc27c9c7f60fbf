package cli

import (
	"context"
	"math/rand/v2"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/provider/providertest"
	"github.com/buildlab/budge/provider/sim"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/store/storetest"
	"github.com/buildlab/budge/study"
)

// TestWorkersSurviveKill is the workers' acceptance test: a run stored
// with --detach on PostgreSQL is advanced by three `budge worker`
// processes against the simulator server with latency, and one of them is
// killed with SIGKILL at random moments (and started again) while they
// work. The run completes with every cell stored exactly once, the same
// sessions and measures as one process running the same seed, the lost
// incarnations on record, and a server request log in which no session
// stored before a kill is requested after it.
func TestWorkersSurviveKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	url := storeLocation(t, "postgres")
	log := &providertest.RequestLog{}
	hs := simServer(t, sim.ServerOptions{Faults: sim.Faults{Latency: 40 * time.Millisecond}}, log)
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 3))
	t.Logf("kills drawn with seed %d", seed)

	code, out, errs := budge(t, "run", "--store", url, "--model", "openai-compatible:sim", "--base-url", hs.URL+"/v1", "--seed", "7",
		"--concurrency", "4", "--detach")
	if code != ExitOK {
		t.Fatalf("--detach: exit %d\n%s%s", code, out, errs)
	}
	id := runLine.FindStringSubmatch(out)[1]
	if !strings.Contains(errs, "budge worker "+id) {
		t.Errorf("--detach does not say how to advance the run: %q", errs)
	}
	worker := func() *exec.Cmd {
		cmd, got := startChild(t, "worker", id, "--store", url, "--lease", "2s", "--quiet")
		if got != id {
			t.Fatalf("worker printed run %s, want %s", got, id)
		}
		return cmd
	}
	workers := []*exec.Cmd{worker(), worker(), worker()}
	var snaps []killSnapshot
	for k := 0; k < 4; k++ {
		time.Sleep(time.Duration(200+rng.IntN(1200)) * time.Millisecond)
		v := rng.IntN(len(workers))
		workers[v].Process.Signal(syscall.SIGKILL)
		workers[v].Wait()
		st, err := store.OpenLocation(context.Background(), url, false)
		if err != nil {
			t.Fatal(err)
		}
		stored, err := st.StoredIDs(context.Background(), id)
		st.Close()
		if err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, killSnapshot{stored, len(log.Entries())})
		t.Logf("kill %d (worker %d): %d sessions stored, %d requests so far", k+1, v, len(stored), len(log.Entries()))
		if len(stored) == 416 {
			workers = slices.Delete(workers, v, v+1)
			break
		}
		workers[v] = worker()
	}
	for i, w := range workers {
		done := make(chan error, 1)
		go func() { done <- w.Wait() }()
		select {
		case err := <-done:
			if err != nil && !strings.Contains(err.Error(), "killed") {
				t.Errorf("worker %d: %v", i, err)
			}
		case <-time.After(2 * time.Minute):
			w.Process.Kill()
			t.Fatalf("worker %d did not finish", i)
		}
	}

	st := storetest.OpenLocation(t, url)
	res, err := study.LoadPressure(context.Background(), st, id)
	if err != nil {
		t.Fatal(err)
	}
	c := res.Manifest.Counts
	if res.Run.Status != store.RunComplete || c.Complete != 416 || c.Missing != 0 || c.Failed != 0 {
		t.Fatalf("status %s, counts %+v", res.Run.Status, c)
	}
	if stored, err := st.StoredIDs(context.Background(), id); err != nil || len(stored) != 416 {
		t.Errorf("%d sessions stored (%v), want 416", len(stored), err)
	}
	cells, err := st.Cells(context.Background(), id)
	if err != nil || cells != (store.CellCounts{Done: 416}) {
		t.Errorf("cells %+v (%v), want 416 done", cells, err)
	}
	if n := len(res.Manifest.Net.Workers); n < 3 {
		t.Errorf("%d workers recorded in the manifest, want at least 3", n)
	}
	lost := res.Manifest.Net.FailedByKind[store.WorkerLost]
	t.Logf("%d worker(s), %d lost incarnation(s) on record", len(res.Manifest.Net.Workers), lost)

	// The same sessions and measures as one process with the same seed.
	refSt := storetest.Open(t)
	ref, err := study.As[*study.PressureResult](study.Start(context.Background(), refSt, func() study.PressureOptions {
		o := study.DefaultPressureOptions()
		o.Seed = 7
		return o
	}()))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Summary, ref.Summary) {
		t.Errorf("measures differ from the single-process run")
	}
	sameTranscripts(t, st, id, refSt, ref.Run.ID)

	session := map[int64]string{}
	for _, spec := range pressure.Plan(res.Deck) {
		session[pressure.SessionSeed(7, spec.ID())] = spec.ID()
	}
	assertNotRequestedAgain(t, snaps, log.Entries(), session)
	assertLogWhole(t, st, id, 416, c.Attempts)
}

// sameTranscripts fails unless two runs hold the same sessions with the
// same messages.
func sameTranscripts(t *testing.T, a *store.Store, aID string, b *store.Store, bID string) {
	t.Helper()
	ctx := context.Background()
	as, err := a.Sessions(ctx, aID)
	if err != nil {
		t.Fatal(err)
	}
	bs, err := b.Sessions(ctx, bID)
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != len(bs) {
		t.Fatalf("%d sessions against %d", len(as), len(bs))
	}
	for i := range as {
		x, y := as[i], bs[i]
		if x.ID != y.ID || x.Status != y.Status || len(x.Messages) != len(y.Messages) {
			t.Fatalf("session %d: %s (%s, %d messages) against %s (%s, %d messages)", i, x.ID, x.Status, len(x.Messages), y.ID, y.Status, len(y.Messages))
		}
		for k := range x.Messages {
			if x.Messages[k].Content != y.Messages[k].Content {
				t.Fatalf("session %s message %d differs:\n%s\n%s", x.ID, k, x.Messages[k].Content, y.Messages[k].Content)
			}
		}
	}
}

// budge worker without RUN advances every run with cells left, oldest
// first, to the measures one process gets with the same seed, and then has
// nothing to do; a detached run is listed as waiting for a worker until
// one takes it.
func TestWorkerServesEveryOpenRun(t *testing.T) {
	dir := t.TempDir()
	var ids []string
	for _, args := range [][]string{{"run"}, {"framing", "run", "--data", "sample"}} {
		code, out, errs := budge(t, append(args, "--store", dir, "--seed", "5", "--detach")...)
		if code != ExitOK {
			t.Fatalf("%v --detach: exit %d %s", args, code, errs)
		}
		ids = append(ids, runLine.FindStringSubmatch(out)[1])
	}
	if _, out, _ := budge(t, "runs", "--store", dir); strings.Count(out, "waiting for worker") != 2 {
		t.Errorf("detached runs before any worker:\n%s", out)
	}
	code, out, errs := budge(t, "worker", "--store", dir, "--quiet")
	if code != ExitOK {
		t.Fatalf("worker: exit %d\n%s%s", code, out, errs)
	}
	first, second := strings.Index(out, "run "+ids[0]+": complete"), strings.Index(out, "run "+ids[1]+": complete")
	if first < 0 || second < first {
		t.Errorf("the worker did not complete both runs, oldest first:\n%s", out)
	}
	if _, out, _ := budge(t, "runs", "--store", dir); strings.Count(out, "complete") != 2 {
		t.Errorf("runs after the worker:\n%s", out)
	}
	if code, _, errs := budge(t, "worker", "--store", dir); code != ExitOK || !strings.Contains(errs, "no run has cells left") {
		t.Errorf("a worker with nothing to do: exit %d %q", code, errs)
	}
	// The same results as one process with the same seed.
	code, out, _ = budge(t, "run", "--store", dir, "--seed", "5", "--quiet", "--format", "md")
	if code != ExitOK {
		t.Fatal(out)
	}
	_, rep, _ := budge(t, "report", ids[0], "--store", dir, "--format", "md")
	norm := func(s, id string) string {
		s = strings.ReplaceAll(s, id, "RUN")
		return s[strings.Index(s, "## Measures"):]
	}
	if norm(rep, ids[0]) != norm(out, runLine.FindStringSubmatch(out)[1]) {
		t.Errorf("the worker's run measures differ from a single process's:\n%s", firstDiff(norm(rep, ids[0]), norm(out, runLine.FindStringSubmatch(out)[1])))
	}
}
