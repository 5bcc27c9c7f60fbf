package cli

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/provider/sim"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
	"github.com/buildlab/budge/testkit/providertest"
	"github.com/buildlab/budge/testkit/storetest"
)

// childCmd is budge as a child process (TestMain runs it). A child given
// a PostgreSQL store of storeLocation keeps its local cache where that
// test chose (childCaches).
func childCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "BUDGE_TEST_CHILD=1")
	for _, a := range args {
		if dir, ok := childCaches.Load(a); ok {
			cmd.Env = append(cmd.Env, "XDG_CACHE_HOME="+dir.(string))
		}
	}
	return cmd
}

// startChildOut starts budge in a child process and returns it, its
// standard output and the run id it printed first; its standard error
// collects in cmd.Stderr, a *strings.Builder, to read once it has exited.
func startChildOut(t *testing.T, args ...string) (*exec.Cmd, io.ReadCloser, string) {
	t.Helper()
	cmd := childCmd(args...)
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "run: ") {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child did not print its run id: %q %v\n%s", line, err, stderr.String())
	}
	return cmd, stdout, strings.TrimSpace(strings.TrimPrefix(line, "run: "))
}

// startChild starts budge in a child process and returns it with the run
// id it printed; the rest of its output is read and dropped.
func startChild(t *testing.T, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd, stdout, id := startChildOut(t, args...)
	go func() { bufio.NewReader(stdout).WriteTo(discard{}) }()
	return cmd, id
}

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }

// TestKillAndResume is the resume acceptance test: a run over HTTP against
// the simulator server is killed with SIGKILL at random points, and resumed
// (the resumes are killed too) until it completes. Then: zero duplicate
// sessions, zero lost sessions, the same per-session results as an
// uninterrupted run with the same seed, a log with each session's records
// once, and a server request log that shows no session completed before a
// kill was requested again after it.
//
// It runs on both store backends: on PostgreSQL the kills land in the
// middle of writes to a server database, and the log is the database's.
func TestKillAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	t.Parallel() // mostly waiting on child processes and the server
	for _, b := range []string{"sqlite", "postgres"} {
		t.Run(b, func(t *testing.T) {
			t.Parallel()
			testKillAndResume(t, storeLocation(t, b))
		})
	}
}

func testKillAndResume(t *testing.T, dir string) {
	log := &providertest.RequestLog{}
	hs := simServer(t, sim.ServerOptions{Faults: sim.Faults{Latency: 4 * time.Millisecond}}, log)
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 7))
	t.Logf("kill points drawn with seed %d", seed)

	// A process on PostgreSQL stores its first sessions later after it
	// starts (new connections, statements prepared on them): its kills are
	// drawn from a longer span, so that they land after sessions are stored.
	maxSleep := 300
	if store.IsURL(dir) {
		maxSleep = 700
	}
	id, snaps := killResumeLoop(t, dir, log, rng, 10, maxSleep,
		[]string{"run", "--store", dir, "--model", "openai-compatible:sim", "--base-url", hs.URL + "/v1", "--seed", "7", "--concurrency", "8", "--quiet"},
		func(id string) []string { return []string{"run", "--store", dir, "--resume", id, "--quiet"} })

	st := storetest.OpenLocation(t, dir)
	res, err := study.LoadPressure(context.Background(), st, id)
	if err != nil {
		t.Fatal(err)
	}
	c := res.Manifest.Counts
	if c.Complete != 416 || c.Missing != 0 || c.Failed != 0 || res.Run.Status != store.RunComplete {
		t.Fatalf("after the last resume: status %s, counts %+v", res.Run.Status, c)
	}
	if n := len(res.Manifest.Net.Resumes); n < 1 || n > 10 {
		t.Errorf("%d resumes recorded, want 1 to 10 (a resume of a finished run records nothing)", n)
	}
	if store.IsURL(dir) {
		// The primary key keeps a session to one row; every one is there.
		if stored, err := st.StoredIDs(context.Background(), id); err != nil || len(stored) != 416 {
			t.Errorf("%d sessions stored (%v), want 416", len(stored), err)
		}
	} else {
		db, _ := sql.Open("sqlite", filepath.Join(dir, "budge.db"))
		defer db.Close()
		var ok string
		var rows, distinct int
		db.QueryRow("PRAGMA integrity_check").Scan(&ok)
		db.QueryRow("SELECT COUNT(*), COUNT(DISTINCT session_id) FROM sessions WHERE run_id = ?", id).Scan(&rows, &distinct)
		if ok != "ok" || rows != 416 || distinct != 416 {
			t.Errorf("integrity %q, %d session rows for %d sessions", ok, rows, distinct)
		}
	}

	// The same results as an uninterrupted run, in process.
	ref, err := study.As[*study.PressureResult](study.Start(context.Background(), storetest.Open(t), func() study.PressureOptions {
		o := study.DefaultPressureOptions()
		o.Seed = 7
		return o
	}()))
	if err != nil {
		t.Fatal(err)
	}
	outs, err := res.Outcomes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	refOuts, err := ref.Outcomes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i := range refOuts {
		if !reflect.DeepEqual(outs[i], refOuts[i]) {
			t.Fatalf("session %s differs from the uninterrupted run", refOuts[i].ID())
		}
	}
	if !reflect.DeepEqual(res.Summary, ref.Summary) {
		t.Errorf("measures differ from the uninterrupted run")
	}

	// No session stored before a kill was requested again after it.
	session := map[int64]string{}
	for _, spec := range pressure.Plan(res.Deck) {
		session[pressure.SessionSeed(7, spec.ID())] = spec.ID()
	}
	assertNotRequestedAgain(t, snaps, log.Entries(), session)
	assertPaidOnce(t, log.Entries(), len(snaps), 8)

	assertLogWhole(t, st, id, 416, c.Attempts)
}

// assertLogWhole checks that a run's log holds every stored session's
// final record once (sessions of them), and every stored attempt once
// (attempts of them).
func assertLogWhole(t *testing.T, st *store.Store, id string, sessions, attempts int) {
	t.Helper()
	var logged bytes.Buffer
	if err := st.WriteLog(context.Background(), id, &logged); err != nil {
		t.Fatal(err)
	}
	finals, atts := map[string]int{}, map[string]int{}
	sc := bufio.NewScanner(&logged)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec struct {
			Type        string `json:"type"`
			Session     string `json:"session_id"`
			Status      string `json:"status"`
			Incarnation int    `json:"incarnation"`
			Call        int    `json:"call"`
			Attempt     int    `json:"attempt"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("log line is not JSON: %q", sc.Text())
		}
		switch rec.Type {
		case "session":
			if rec.Status != store.SessionInterrupted {
				finals[rec.Session]++
			}
		case "attempt":
			atts[rec.Session+"/"+string(rune('0'+rec.Incarnation))+"/"+itoaInt(rec.Call)+"/"+itoaInt(rec.Attempt)]++
		}
	}
	if len(finals) != sessions {
		t.Errorf("log has final records for %d sessions, want %d", len(finals), sessions)
	}
	for s, n := range finals {
		if n != 1 {
			t.Errorf("log has %d final records of %s", n, s)
		}
	}
	for a, n := range atts {
		if n != 1 {
			t.Errorf("log has attempt %s %d times", a, n)
		}
	}
	if len(atts) != attempts {
		t.Errorf("log has %d attempts, the store %d", len(atts), attempts)
	}
}

func itoaInt(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// killSnapshot is what a run had stored when it was killed, and how many
// requests the server had seen by then.
type killSnapshot struct {
	stored map[string]string
	mark   int
}

// killResumeLoop starts budge with first, kills it with SIGKILL after a
// random 30 ms to maxSleepMS, resumes it and kills the resume, kills times
// in all, then lets a last resume finish. It returns the run id and what
// was stored at each kill.
func killResumeLoop(t *testing.T, dir string, log *providertest.RequestLog, rng *rand.Rand, kills, maxSleepMS int, first []string, resume func(id string) []string) (string, []killSnapshot) {
	t.Helper()
	var snaps []killSnapshot
	id := ""
	for round := 0; ; round++ {
		args := first
		if id != "" {
			args = resume(id)
		}
		cmd, got := startChild(t, args...)
		if id != "" && got != id {
			t.Fatalf("resume printed run %s, want %s", got, id)
		}
		id = got
		if round >= kills {
			if err := cmd.Wait(); err != nil {
				t.Fatalf("final resume: %v", err)
			}
			return id, snaps
		}
		time.Sleep(time.Duration(30+rng.IntN(maxSleepMS)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		stored := storedIDs(t, dir, id)
		snaps = append(snaps, killSnapshot{stored, len(log.Entries())})
		t.Logf("kill %d: %d sessions stored, %d requests so far", round+1, len(stored), len(log.Entries()))
	}
}

// repeatedAnswers counts the requests the server answered (200, no fault)
// that it had answered before: calls paid for twice.
func repeatedAnswers(entries []sim.LogEntry) int {
	seen, n := map[string]bool{}, 0
	for _, e := range entries {
		if e.Status != 200 || e.Fault != "" {
			continue
		}
		if seen[e.BodySHA] {
			n++
		}
		seen[e.BodySHA] = true
	}
	return n
}

// assertPaidOnce checks that resumes after kills paid for no answered call
// again: the run's journal answers them. A kill can still cut a response
// the server sent before the client wrote it down, at most the calls in
// flight once per kill.
func assertPaidOnce(t *testing.T, entries []sim.LogEntry, kills, inFlight int) {
	t.Helper()
	n := repeatedAnswers(entries)
	t.Logf("%d answered requests sent again over %d kills", n, kills)
	if n > kills*inFlight {
		t.Errorf("%d answered requests were sent again after %d kills (at most %d in flight each)", n, kills, inFlight)
	}
}

// assertNotRequestedAgain fails when a session stored before a kill was
// requested after it; session maps a request's seed to its session.
func assertNotRequestedAgain(t *testing.T, snaps []killSnapshot, entries []sim.LogEntry, session map[int64]string) {
	t.Helper()
	for k, s := range snaps {
		for _, e := range entries[s.mark:] {
			if e.Seed == nil {
				continue // a request cut by a kill before its body arrived: never answered
			}
			if id := session[*e.Seed]; s.stored[id] != "" {
				t.Fatalf("session %s, stored before kill %d, was requested again (request %d)", id, k+1, e.Seq)
			}
		}
	}
}

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
	t.Parallel() // mostly waiting on child processes and the server
	url := storeLocation(t, "postgres")
	log := &providertest.RequestLog{}
	hs := simServer(t, sim.ServerOptions{Faults: sim.Faults{Latency: 40 * time.Millisecond}}, log)
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 3))
	t.Logf("kills drawn with seed %d", seed)

	// In a child too: it keeps its local cache where the test chose.
	detach := childCmd("run", "--store", url, "--model", "openai-compatible:sim", "--base-url", hs.URL+"/v1", "--seed", "7",
		"--concurrency", "4", "--detach")
	var out, errs strings.Builder
	detach.Stdout, detach.Stderr = &out, &errs
	if err := detach.Run(); err != nil {
		t.Fatalf("--detach: %v\n%s%s", err, out.String(), errs.String())
	}
	id := runLine.FindStringSubmatch(out.String())[1]
	if !strings.Contains(errs.String(), "budge worker "+id) {
		t.Errorf("--detach does not say how to advance the run: %q", errs.String())
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
		stored := storedIDs(t, url, id)
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
	t.Parallel()
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

// budge run --turns 3 on the simulator: killed part way, resumed without
// the flag, it completes with K = 3 kept from the manifest: every pressure
// session that answered three times has three pressure turns, the report
// (text, md, json) has the multi-turn section, and --turns given with
// --resume is refused.
func TestRunTurnsResume(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a child process")
	}
	profile := filepath.Join(t.TempDir(), "slow.yaml")
	os.WriteFile(profile, []byte("name: slow\nlatency_ms: 3\nreversal: {authority: {X: 0.3, Y: 0.1}, emotional: {X: 0.2, Y: 0.2}, consensus: {X: 0.2, Y: 0.2}}\nreversal_growth: 0.1\ncorrection_uptake: 0.9\n"), 0o600)
	dir := t.TempDir()
	cmd, id := startChild(t, "run", "--dir", dir, "--model", "sim:"+profile, "--turns", "3", "--concurrency", "4", "--quiet")
	time.Sleep(300 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	before, err := storetest.OpenDir(t, dir).Sessions(context.Background(), id)
	if err != nil || len(before) == 0 || len(before) >= 416 {
		t.Fatalf("the kill left %d sessions stored (%v); want some, not all", len(before), err)
	}

	if code, _, errs := budge(t, "run", "--dir", dir, "--resume", id, "--turns", "2"); code != ExitInvalid || !strings.Contains(errs, "turns") {
		t.Errorf("--resume with --turns 2: exit %d, %q; want exit %d naming --turns", code, errs, ExitInvalid)
	}
	code, out, errs := budge(t, "run", "--dir", dir, "--resume", id, "--quiet")
	if code != ExitOK {
		t.Fatalf("resume: exit %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(out, "Multi-turn pressure (--turns 3") || !strings.Contains(out, "holding after turn 3") {
		t.Errorf("run summary lacks the multi-turn section:\n%s", out)
	}
	st := storetest.OpenDir(t, dir)
	res, err := study.LoadPressure(context.Background(), st, id)
	if err != nil {
		t.Fatal(err)
	}
	if res.Run.Status != store.RunComplete || res.Manifest.Counts.Complete != 416 || res.Manifest.Turns != 3 {
		t.Fatalf("status %s, counts %+v, turns %d; want complete, 416, 3", res.Run.Status, res.Manifest.Counts, res.Manifest.Turns)
	}
	tu := res.Summary.Turns
	if tu == nil || tu.K != 3 || len(tu.Cells) != 8 {
		t.Fatalf("turns summary %+v", tu)
	}
	sessions, err := st.Sessions(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	threeTurns := 0
	for _, se := range sessions {
		sp, err := pressure.ParseSpecID(se.ID)
		if err != nil {
			t.Fatal(err)
		}
		phases := map[string]bool{}
		for _, e := range se.Messages {
			phases[e.Phase] = true
		}
		_, pressured := sp.Branch.Family()
		if !pressured && (phases["followup-2"] || phases["followup-3"]) {
			t.Errorf("session %s (branch %s) has a second pressure turn", se.ID, sp.Branch)
		}
		if pressured && phases["followup-3"] {
			threeTurns++
		}
	}
	// 192 pressure sessions; every one whose first answer parsed goes on
	// to turn 3 (the profile plants no refusals or broken replies).
	if threeTurns != 192 {
		t.Errorf("%d pressure sessions reached turn 3, want 192", threeTurns)
	}
	// A replay is a new run with the recorded K and the same answers.
	code, out, errs = budge(t, "run", "--dir", dir, "--replay", id, "--quiet")
	m := runLine.FindStringSubmatch(out)
	if code != ExitOK || m == nil {
		t.Fatalf("replay: exit %d\n%s%s", code, out, errs)
	}
	rep, err := study.LoadPressure(context.Background(), st, m[1])
	if err != nil {
		t.Fatal(err)
	}
	if rep.Manifest.Turns != 3 || rep.Summary.Turns == nil || !reflect.DeepEqual(rep.Summary.Turns, tu) {
		t.Errorf("replay: turns %d, summary %+v; want 3 and the recorded run's", rep.Manifest.Turns, rep.Summary.Turns)
	}
	for _, f := range []string{"md", "json"} {
		code, out, errs := budge(t, "report", id, "--dir", dir, "--format", f)
		want := map[string]string{"md": "holding after turn 2", "json": `"turns": 3`}[f]
		if code != ExitOK || !strings.Contains(out, want) {
			t.Errorf("report --format %s: exit %d %s; lacks %q", f, code, errs, want)
		}
	}
}

// storedIDs opens the store at loc and returns the sessions of run id
// stored so far.
func storedIDs(t *testing.T, loc, id string) map[string]string {
	t.Helper()
	var st *store.Store
	var err error
	if store.IsURL(loc) {
		st, err = store.OpenURL(context.Background(), loc, t.TempDir())
	} else {
		st, err = store.OpenLocation(context.Background(), loc, false)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	stored, err := st.StoredIDs(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return stored
}
