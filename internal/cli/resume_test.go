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

// childCmd is budge as a child process (TestMain runs it).
func childCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "BUDGE_TEST_CHILD=1")
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
	for _, b := range []string{"sqlite", "postgres"} {
		t.Run(b, func(t *testing.T) { testKillAndResume(t, storeLocation(t, b)) })
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
		st, err := store.OpenLocation(context.Background(), dir, false)
		if err != nil {
			t.Fatal(err)
		}
		stored, err := st.StoredIDs(context.Background(), id)
		st.Close()
		if err != nil {
			t.Fatal(err)
		}
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
