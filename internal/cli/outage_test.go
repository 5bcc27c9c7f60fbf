package cli

import (
	"context"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/buildlab/budge/provider/sim"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
	"github.com/buildlab/budge/testkit/storetest"
)

// flakyEndpoint is the simulator server at a fixed address that can be
// taken down (connections refused) and brought back. busy is closed once
// it has answered 20 chat requests: the run is past its preflight and in
// the middle of its calls.
type flakyEndpoint struct {
	t    *testing.T
	addr string
	h    http.Handler
	mu   sync.Mutex
	srv  *http.Server
	busy chan struct{}
}

func newFlakyEndpoint(t *testing.T, f sim.Faults) *flakyEndpoint {
	busy := make(chan struct{})
	var n atomic.Int64
	s, err := sim.NewServer(sim.ServerOptions{Faults: f, OnRequest: func(sim.LogEntry) {
		if n.Add(1) == 20 { // exactly one request is the 20th
			close(busy)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &flakyEndpoint{t: t, addr: ln.Addr().String(), h: s.Handler(), busy: busy}
	e.serve(ln)
	t.Cleanup(e.down)
	return e
}

func (e *flakyEndpoint) serve(ln net.Listener) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.srv = &http.Server{Handler: e.h}
	go e.srv.Serve(ln)
}

func (e *flakyEndpoint) down() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.srv != nil {
		e.srv.Close()
		e.srv = nil
	}
}

func (e *flakyEndpoint) up() {
	ln, err := net.Listen("tcp", e.addr)
	if err != nil {
		e.t.Fatalf("the endpoint cannot come back at %s: %v", e.addr, err)
	}
	e.serve(ln)
}

func (e *flakyEndpoint) url() string { return "http://" + e.addr + "/v1" }

// outageRun runs budge run against e while the endpoint goes down, once
// the run is calling it, for the given time, and returns the exit code and output.
func outageRun(t *testing.T, e *flakyEndpoint, dir string, outage time.Duration, extra ...string) (int, string, string) {
	t.Helper()
	go func() {
		<-e.busy
		e.down()
		time.Sleep(outage)
		e.up()
	}()
	args := append([]string{"run", "--dir", dir, "--model", "openai-compatible:sim", "--base-url", e.url(), "--seed", "7", "--concurrency", "8", "--quiet"}, extra...)
	return budge(t, args...)
}

// loadSame loads a run and checks it has the results of an uninterrupted
// in-process run with the same seed, with no session failed.
func loadSame(t *testing.T, dir, id string) *study.PressureResult {
	t.Helper()
	st := storetest.OpenLocation(t, dir)
	res, err := study.LoadPressure(context.Background(), st, id)
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Manifest.Counts; c.Failed != 0 || c.Missing != 0 || res.Run.Status != store.RunComplete {
		t.Fatalf("status %s, counts %+v: an outage must turn no cell into a failure", res.Run.Status, c)
	}
	o := study.DefaultPressureOptions()
	o.Seed = 7
	ref, err := study.As[*study.PressureResult](study.Start(context.Background(), storetest.Open(t), o))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Summary, ref.Summary) {
		t.Errorf("measures differ from an uninterrupted in-process run")
	}
	return res
}

// A 3 s outage is waited out: the run completes with no failed session,
// the measures of a run without one, and the outage on record. (Longer
// outages and the pause rule are runner's tests, on a fake clock:
// runner.TestOutageIsWaitedOut, TestOutageStopsTheRun, TestOutageRule.)
func TestOutageIsWaitedOut(t *testing.T) {
	if testing.Short() {
		t.Skip("takes seconds of real time")
	}
	t.Parallel()
	outageWaitedOut(t, 3*time.Second)
}

func outageWaitedOut(t *testing.T, d time.Duration) {
	e := newFlakyEndpoint(t, sim.Faults{Latency: 5 * time.Millisecond})
	dir := t.TempDir()
	code, out, errs := outageRun(t, e, dir, d)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	res := loadSame(t, dir, runLine.FindStringSubmatch(out)[1])
	if len(res.Manifest.Net.Outages) == 0 || !strings.Contains(out, "endpoint unreachable") {
		t.Errorf("the outage must be on record: %+v\n%s", res.Manifest.Net.Outages, out)
	}
}

// An outage longer than --outage-wait stops the run as interrupted, cells
// untouched; a resume once the endpoint is back completes it with the
// measures of a run without an outage.
func TestLongOutageInterruptsThenResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("takes seconds of real time")
	}
	t.Parallel() // mostly waiting for the endpoint
	e := newFlakyEndpoint(t, sim.Faults{Latency: 5 * time.Millisecond})
	dir := t.TempDir()
	code, out, errs := outageRun(t, e, dir, 5*time.Second, "--outage-wait", "1s")
	if code != ExitIncomplete || !strings.Contains(errs, "outage") || !strings.Contains(errs, "--resume") {
		t.Fatalf("want exit %d naming the outage and --resume, got %d\n%s", ExitIncomplete, code, errs)
	}
	id := runLine.FindStringSubmatch(out)[1]
	st := storetest.OpenDir(t, dir)
	first, err := study.LoadPressure(context.Background(), st, id)
	if err != nil {
		t.Fatal(err)
	}
	if c := first.Manifest.Counts; c.Failed != 0 || c.Missing == 0 || first.Run.Status != store.RunInterrupted {
		t.Fatalf("after the outage: status %s, counts %+v; want interrupted with no failed session", first.Run.Status, c)
	}
	time.Sleep(5 * time.Second) // the endpoint comes back
	if code, out, errs := budge(t, "run", "--dir", dir, "--resume", id, "--quiet"); code != ExitOK {
		t.Fatalf("resume: exit %d\n%s\n%s", code, out, errs)
	}
	loadSame(t, dir, id)
}

// storeLocation is a new, empty store's location on a backend. A
// PostgreSQL store's local cache, in the children given it, is the test's
// own (childCaches); the test itself opens it with storetest, which gives
// it one too.
func storeLocation(t *testing.T, backend string) string {
	if backend == "sqlite" {
		return t.TempDir()
	}
	url := storetest.PostgresURL(t)
	childCaches.Store(url, t.TempDir())
	return url
}

// childCaches are the local cache directories (XDG_CACHE_HOME) of the
// PostgreSQL stores of storeLocation, by URL: tests on one server share
// its database, which names the default cache, and set no environment so
// that they can run in parallel.
var childCaches sync.Map
