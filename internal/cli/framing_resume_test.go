package cli

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/provider/sim"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
	"github.com/buildlab/budge/testkit/providertest"
	"github.com/buildlab/budge/testkit/storetest"
)

// judgeServer serves the simulated framing judge over HTTP, knowing the
// sample items' answers, as `budge sim serve` does.
func judgeServer(t *testing.T, latency time.Duration, log *providertest.RequestLog) *httptest.Server {
	t.Helper()
	k, err := judgeKnowledge("sample")
	if err != nil {
		t.Fatal(err)
	}
	return simServer(t, sim.ServerOptions{Judge: k, Faults: sim.Faults{Latency: latency}}, log)
}

// simServer serves the simulator with o over HTTP until the test ends,
// keeping its request log in log when given.
func simServer(t *testing.T, o sim.ServerOptions, log *providertest.RequestLog) *httptest.Server {
	t.Helper()
	if log != nil {
		o.OnRequest = log.Add
	}
	_, hs, _ := providertest.SimServer(t, o)
	return hs
}

// inProcessFraming is the uninterrupted in-process framing run with seed 7.
func inProcessFraming(t *testing.T) *study.FramingResult {
	t.Helper()
	o := study.DefaultFramingOptions()
	o.Seed = 7
	ref, err := study.As[*study.FramingResult](study.Start(context.Background(), storetest.Open(t), o))
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// observations are a loaded run's scored sessions.
func observations(t *testing.T, r *study.FramingResult) []framing.Observation {
	t.Helper()
	obs, err := r.Observations(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return obs
}

func sameFraming(t *testing.T, got, want *study.FramingResult) {
	t.Helper()
	g, w := observations(t, got), observations(t, want)
	if len(g) != len(w) {
		t.Fatalf("%d observations, want %d", len(g), len(w))
	}
	for i := range w {
		if !reflect.DeepEqual(g[i], w[i]) {
			t.Fatalf("session %s differs:\n got %+v\nwant %+v", w[i].Session, g[i], w[i])
		}
	}
	if !reflect.DeepEqual(got.Summary, want.Summary) {
		t.Errorf("measures differ from the in-process run")
	}
}

// TestFramingOverHTTPEqualsInProcess: the simulated judge behind the
// OpenAI-compatible server gives exactly the per-session results of the
// in-process judge with the same seed.
func TestFramingOverHTTPEqualsInProcess(t *testing.T) {
	t.Parallel()
	hs := judgeServer(t, 0, nil)
	dir := t.TempDir()
	var out, errb strings.Builder
	code := Main(context.Background(), []string{"framing", "run", "--dir", dir, "--model", "openai-compatible:judge",
		"--base-url", hs.URL + "/v1", "--seed", "7", "--concurrency", "16", "--quiet"}, nil, &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	st := storetest.OpenDir(t, dir)
	id, _ := st.Resolve(context.Background(), "latest")
	got, err := study.LoadFraming(context.Background(), st, id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Manifest.Settings.Temperature == nil || *got.Manifest.Settings.Temperature != 0 {
		t.Errorf("temperature %v, want 0 sent explicitly", got.Manifest.Settings.Temperature)
	}
	if got.Manifest.Net.Adaptive == nil {
		t.Errorf("a run over HTTP records no adaptive concurrency")
	}
	sameFraming(t, got, inProcessFraming(t))

	// export writes one record per session, and show opens one with its
	// parse outcome.
	out.Reset()
	if code := Main(context.Background(), []string{"export", "--dir", dir, "latest"}, nil, &out, &errb); code != 0 {
		t.Fatalf("export: exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if n := len(observations(t, got)); len(lines) != n {
		t.Fatalf("export wrote %d records for %d sessions", len(lines), n)
	}
	var rec framing.Record
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil || rec.Status == "" || rec.Item == "" || rec.TraceRef == nil {
		t.Fatalf("first record %s: %v", lines[0], err)
	}
	out.Reset()
	if code := Main(context.Background(), []string{"show", "--dir", dir, "latest", rec.Session}, nil, &out, &errb); code != 0 {
		t.Fatalf("show: exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), `"status": "`+rec.Status+`"`) || !strings.Contains(out.String(), "messages:") {
		t.Errorf("show prints no parse outcome or transcript:\n%s", out.String())
	}
}

// TestFramingKillAndResume: a framing run over HTTP is killed with SIGKILL
// at random points and resumed until it completes; it then equals the
// uninterrupted in-process run, and no session stored before a kill was
// requested again.
func TestFramingKillAndResume(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts child processes")
	}
	log := &providertest.RequestLog{}
	hs := judgeServer(t, 3*time.Millisecond, log)
	dir := t.TempDir()
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 11))
	t.Logf("kill points drawn with seed %d", seed)
	id, snaps := killResumeLoop(t, dir, log, rng, 3, 250,
		[]string{"framing", "run", "--dir", dir, "--model", "openai-compatible:judge", "--base-url", hs.URL + "/v1", "--seed", "7", "--concurrency", "4", "--quiet"},
		func(id string) []string { return []string{"framing", "run", "--dir", dir, "--resume", id, "--quiet"} })
	st := storetest.OpenDir(t, dir)
	res, err := study.LoadFraming(context.Background(), st, id)
	if err != nil {
		t.Fatal(err)
	}
	c := res.Manifest.Counts
	if c.Missing != 0 || c.Failed != 0 || res.Run.Status != store.RunComplete {
		t.Fatalf("after the last resume: status %s, counts %+v", res.Run.Status, c)
	}
	sameFraming(t, res, inProcessFraming(t))
	session := map[int64]string{}
	for _, o := range observations(t, res) {
		session[framing.SessionSeed(7, o.Session)] = o.Session
	}
	assertNotRequestedAgain(t, snaps, log.Entries(), session)
}
