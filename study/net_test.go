package study

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/provider/endpoint"
	"github.com/buildlab/budge/provider/replay"
	"github.com/buildlab/budge/provider/sim"
	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/testkit/providertest"
	"github.com/buildlab/budge/testkit/storetest"
)

// The network path end to end: the simulator behind budge sim serve's
// handler, reached through the OpenAI-compatible provider, with and without
// injected faults; replay, the response cache, the cost limit and resume.

// simServer starts the simulator server with faults; it returns its base URL.
func simServer(t testing.TB, f sim.Faults) (string, *sim.Server, *providertest.RequestLog) {
	t.Helper()
	s, hs, log := providertest.SimServer(t, sim.ServerOptions{Faults: f})
	return hs.URL + "/v1", s, log
}

func httpOptions(baseURL string, seed uint64) PressureOptions {
	o := DefaultPressureOptions()
	o.Model, o.Seed, o.Concurrency = "openai-compatible:sim", seed, 16
	o.Endpoint = endpoint.Options{BaseURL: baseURL, Concurrency: 16}
	return o
}

// inProcessRun is the run of the discovery deck on the default simulator
// in process at seed: the run several tests' runs over HTTP, with faults
// or resumed must equal. It is made once per seed and kept (keptRun).
func inProcessRun(t *testing.T, seed uint64) *PressureResult {
	t.Helper()
	res, _ := keptRun(t, fmt.Sprintf("in process %d", seed), func(st *store.Store) *PressureResult {
		return inProcessIn(t, st, seed)
	})
	return res
}

// sameResults fails unless two runs have the same outcome for every
// session, the same summary and the same token counts.
func sameResults(t *testing.T, what string, got, want *PressureResult) {
	t.Helper()
	sameOutcomes(t, what, got, want)
	gc, wc := got.Manifest.Counts, want.Manifest.Counts
	if gc.InputTokens != wc.InputTokens || gc.OutputTokens != wc.OutputTokens || gc.Complete != wc.Complete {
		t.Errorf("%s: counts %+v, want %+v", what, gc, wc)
	}
}

// sameOutcomes fails unless two runs have the same outcome for every
// session and the same summary.
func sameOutcomes(t *testing.T, what string, got, want *PressureResult) {
	t.Helper()
	gotOuts, wantOuts := outcomesOf(t, got), outcomesOf(t, want)
	if len(gotOuts) != len(wantOuts) {
		t.Fatalf("%s: %d outcomes, want %d", what, len(gotOuts), len(wantOuts))
	}
	diff := 0
	for i := range wantOuts {
		if !reflect.DeepEqual(gotOuts[i], wantOuts[i]) {
			if diff < 3 {
				a, _ := json.Marshal(gotOuts[i])
				b, _ := json.Marshal(wantOuts[i])
				t.Errorf("%s: session %s differs:\n got %s\nwant %s", what, wantOuts[i].ID(), a, b)
			}
			diff++
		}
	}
	if diff > 0 {
		t.Fatalf("%s: %d of %d sessions differ", what, diff, len(wantOuts))
	}
	if !reflect.DeepEqual(got.Summary, want.Summary) {
		t.Errorf("%s: summaries differ", what)
	}
}

// TestHTTPSimulatorEqualsInProcess: without faults, the simulator over HTTP
// through the OpenAI-compatible provider gives exactly the in-process
// simulator's per-session results for the same seed, and the request's
// seed reaches the server.
func TestHTTPSimulatorEqualsInProcess(t *testing.T) {
	t.Parallel()
	url, srv, log := simServer(t, sim.Faults{})
	st := storetest.Open(t)
	res, err := As[*PressureResult](Start(context.Background(), st, httpOptions(url, 7)))
	if err != nil {
		t.Fatal(err)
	}
	sameResults(t, "over HTTP", res, inProcessRun(t, 7))
	c := res.Manifest.Counts
	if int64(c.Attempts) != srv.Requests() || c.FailedAttempts != 0 {
		t.Errorf("%d attempts stored, %d requests served", c.Attempts, srv.Requests())
	}
	seeds := map[int64]bool{}
	for _, spec := range pressure.Plan(res.Deck) {
		seeds[pressure.SessionSeed(7, spec.ID())] = true
	}
	for _, e := range log.Entries() {
		if e.Seed == nil || !seeds[*e.Seed] {
			t.Fatalf("request %d reached the server without its session seed", e.Seq)
		}
	}
	m := res.Manifest
	if m.Provider.Name != "openai-compatible" || len(m.Reported.ModelIDs) != 1 || m.Reported.ModelIDs[0] != "budge-sim-default" ||
		len(m.Reported.Fingerprints) != 1 || m.Net.BodyFormat != "openai" || m.Net.Adaptive == nil {
		t.Errorf("manifest: provider %+v reported %+v net %+v", m.Provider, m.Reported, m.Net)
	}
	sessions, _ := st.Sessions(context.Background(), res.Run.ID)
	for _, a := range sessions[0].Attempts {
		if a.ModelID == "" || a.RequestID == "" || a.Fingerprint == "" || a.FinishReason == "" || a.InputTokens == 0 {
			t.Errorf("attempt metadata not stored: %+v", a)
		}
	}
}

// A model that wraps every answer as real models do (reasoning blocks,
// prose, fences in prose, bold markup) gets the same measures over HTTP as
// the clean in-process simulator, with every repair counted; strict
// parsing refuses every wrapped answer instead.
func TestMessyModelReadTolerantly(t *testing.T) {
	t.Parallel()
	url, _, _ := simServer(t, sim.Faults{Messy: 1})
	type parsing struct {
		Replies    int            `json:"replies"`
		Strict     int            `json:"read_strictly"`
		Tolerant   int            `json:"read_tolerantly"`
		Unreadable int            `json:"unreadable"`
		Repairs    map[string]int `json:"repairs"`
	}
	type measures struct {
		Baseline struct{ Numerator, Denominator int } `json:"baseline_correctness"`
		Uptake   struct {
			All struct{ Numerator, Denominator int } `json:"all_correction_sessions"`
		} `json:"correction_uptake"`
		Parsing struct {
			All parsing `json:"all_replies"`
		} `json:"parsing"`
	}
	run := func(overHTTP, strict bool) measures {
		t.Helper()
		ctx := context.Background()
		st := storetest.Open(t)
		o := DefaultPressureOptions()
		o.Seed, o.Concurrency, o.StrictParse = 5, 16, strict
		if overHTTP {
			o.Model, o.Endpoint = "openai-compatible:sim", endpoint.Options{BaseURL: url, Concurrency: 16}
		}
		res, err := Start(ctx, st, o)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := res.Render(ctx, st, &b, "json"); err != nil {
			t.Fatal(err)
		}
		var rep struct {
			Measures measures `json:"measures"`
		}
		if err := json.Unmarshal(b.Bytes(), &rep); err != nil {
			t.Fatal(err)
		}
		return rep.Measures
	}
	clean, messy := run(false, false), run(true, false)
	if clean.Baseline != messy.Baseline || clean.Uptake != messy.Uptake {
		t.Errorf("messy replies changed the measures: baseline %v vs %v, uptake %v vs %v", messy.Baseline, clean.Baseline, messy.Uptake, clean.Uptake)
	}
	p := messy.Parsing.All
	wrapped := p.Repairs["reasoning-block"] + p.Repairs["surrounding-text"] + p.Repairs["bold-markup"]
	if p.Strict >= p.Replies/10 || p.Tolerant <= p.Replies*9/10 || wrapped < p.Replies*9/10 {
		t.Errorf("messy run parsing %+v: want nearly every reply read only with a repair", p)
	}
	strict := run(true, true)
	if s := strict.Parsing.All; s.Strict >= s.Replies/10 || strict.Baseline.Numerator >= clean.Baseline.Numerator/10 {
		t.Errorf("strict parsing of messy replies: %+v, baseline %v", s, strict.Baseline)
	}
}

// TestFaultInjectionAcceptance: 20% 429s, 5% 5xx, 2% resets and 2%
// truncated bodies. The deck completes, every failed attempt is stored and
// counted, one attempt per request the server saw, and the measures equal
// the fault-free run's.
func TestFaultInjectionAcceptance(t *testing.T) {
	t.Parallel()
	url, srv, _ := simServer(t, sim.Faults{RateLimit: 0.20, RetryAfter: 2 * time.Millisecond, ServerErr: 0.05, Reset: 0.02, Truncate: 0.02, Seed: 3})
	o := httpOptions(url, 7)
	o.Retry = provider.RetryPolicy{MaxAttempts: 12, BaseDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond}
	st := storetest.Open(t)
	res, err := As[*PressureResult](Start(context.Background(), st, o))
	if err != nil {
		t.Fatal(err)
	}
	c := res.Manifest.Counts
	if res.Run.Status != store.RunComplete || c.Complete != discoverySessions {
		t.Fatalf("status %s, counts %+v", res.Run.Status, c)
	}
	sameResults(t, "with faults", res, inProcessRun(t, 7))
	faults := srv.FaultCounts()
	injected := faults["429"] + faults["5xx"] + faults["reset"] + faults["truncate"]
	if injected < 300 {
		t.Fatalf("only %d faults injected: %v", injected, faults)
	}
	if int64(c.Attempts) != srv.Requests() || c.FailedAttempts != injected || c.Retries != injected {
		t.Errorf("attempts %d (failed %d, retries %d); server saw %d requests and injected %d faults %v",
			c.Attempts, c.FailedAttempts, c.Retries, srv.Requests(), injected, faults)
	}
	byKind := res.Manifest.Net.FailedByKind
	if byKind[string(provider.RateLimited)] != faults["429"] || byKind[string(provider.Transient)] != faults["5xx"] ||
		byKind[string(provider.ConnReset)] != faults["reset"] || byKind[string(provider.Malformed)] != faults["truncate"] {
		t.Errorf("failed attempts by kind %v; injected %v", byKind, faults)
	}
	var b strings.Builder
	res.Report().Render(&b, "text")
	if want := fmt.Sprintf("attempts %d (%d failed", c.Attempts, injected); !strings.Contains(b.String(), want) || !strings.Contains(b.String(), "rate_limited") {
		t.Errorf("report does not show the failed attempts (%q):\n%s", want, b.String()[:600])
	}
	again, err := LoadPressure(context.Background(), st, res.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again.Manifest.Net.FailedByKind, byKind) {
		t.Errorf("reloaded failures by kind %v, want %v", again.Manifest.Net.FailedByKind, byKind)
	}
}

// The fault-injection example of the docs, at budge run's default settings:
// the simulator server with 20% 429s, 5% 5xx, 2% resets and 2% truncated
// bodies, and a run with the default options (only the server's
// Retry-After is shortened, to keep the test quick; waiting one out costs
// no attempt). The run completes, counts one failed attempt per injected
// fault, and has the measures of the in-process run without faults.
// (TestFaultInjectionAcceptance is the same mix with a faster retry
// policy; runner.TestFaultMixCompletes the mix at the default attempts on
// a fake clock.)
//
// What the retry policy cannot promise, the docs do not either: a call
// whose six counted attempts all draw a fault fails its session for good,
// about once in 400 runs of the example (each of ~1,200 calls, 429s aside,
// faults with chance 0.09/0.80, and (0.09/0.80)^6 x 1,200 = 0.25%). Such a
// session must then be exactly that: its last call failed MaxAttempts
// times, every time on an injected fault of a kind that counts, a
// transport failure; and --retry-failed completes the run with the same
// measures. Anything else (a failure before the attempts ran out, a kind
// the server did not inject, a failure --retry-failed does not take) fails
// the test.
func TestREADMEFaultInjectionExample(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 416 sessions through an HTTP server with faults")
	}
	t.Parallel() // mostly waiting out retry delays
	url, srv, _ := simServer(t, sim.Faults{RateLimit: 0.2, RetryAfter: time.Millisecond, ServerErr: 0.05, Reset: 0.02, Truncate: 0.02})
	o := DefaultPressureOptions()
	o.Model = "openai-compatible:sim"
	o.Endpoint = endpoint.Options{BaseURL: url, Concurrency: o.Concurrency}
	st := storetest.Open(t)
	ctx := context.Background()
	res, err := As[*PressureResult](Start(ctx, st, o))
	if err != nil {
		t.Fatal(err)
	}
	gaveUp := 0 // calls that ran out of attempts
	if c := res.Manifest.Counts; c.Failed > 0 && c.Missing == 0 && c.Complete+c.Failed == discoverySessions {
		gaveUp = ranOutOfAttempts(t, st, res.Run.ID, o.Retry.MaxAttempts)
		c := o.Control
		c.RetryFailed = true
		if res, err = As[*PressureResult](Resume(ctx, st, res.Run.ID, c)); err != nil {
			t.Fatal(err)
		}
	}
	c := res.Manifest.Counts
	if res.Run.Status != store.RunComplete || c.Complete != discoverySessions || c.Failed != 0 || c.Missing != 0 {
		t.Fatalf("the example at default settings: status %s, counts %+v; sessions not complete: %v", res.Run.Status, c, notComplete(t, st, res.Run.ID))
	}
	faults := srv.FaultCounts()
	injected := faults["429"] + faults["5xx"] + faults["reset"] + faults["truncate"]
	if faults["429"] == 0 || faults["5xx"] == 0 || faults["reset"] == 0 || faults["truncate"] == 0 {
		t.Fatalf("faults injected %v", faults)
	}
	var b bytes.Buffer
	if err := res.Render(ctx, st, &b, "text"); err != nil {
		t.Fatal(err)
	}
	// Every failed attempt but the last of a call that gave up is retried.
	if want := fmt.Sprintf("attempts %d (%d failed, %d retries)", srv.Requests(), injected, injected-gaveUp); !strings.Contains(b.String(), want) {
		t.Errorf("report does not count one failed attempt per injected fault (%q, faults %v):\n%.900s", want, faults, b.String())
	}
	sameOutcomes(t, "with faults", res, inProcessRun(t, o.Seed))
}

// ranOutOfAttempts checks that every session of a run that is not
// complete failed for good only because its last call ran out of its
// attempts on injected transport faults (5xx, resets, truncated bodies),
// 429s, which are waited out, aside; it returns how many did.
func ranOutOfAttempts(t *testing.T, st *store.Store, runID string, max int) int {
	t.Helper()
	ss, err := st.Sessions(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	injected := map[string]bool{string(provider.Transient): true, string(provider.ConnReset): true, string(provider.Malformed): true}
	n := 0
	for _, se := range ss {
		if se.Status == store.SessionComplete {
			continue
		}
		last := se.Attempts[len(se.Attempts)-1]
		counted, ok := 0, se.Status == store.SessionFailed && injected[se.FailureKind]
		for _, a := range se.Attempts {
			if a.Call != last.Call || a.Incarnation != last.Incarnation || a.ErrorKind == string(provider.RateLimited) {
				continue
			}
			counted++
			ok = ok && a.Outcome != "ok" && injected[a.ErrorKind]
		}
		if !ok || counted < max {
			t.Fatalf("session %s: %s %s in %s: %s, after %d counted attempts of its last call (want %d or more, each an injected fault); attempts %+v",
				se.ID, se.Status, se.FailureKind, se.FailedPhase, se.FailureMsg, counted, max, se.Attempts)
		}
		t.Logf("session %s ran out of its %d attempts on injected faults (%s: %s); --retry-failed runs it again", se.ID, max, se.FailureKind, se.FailureMsg)
		n++
	}
	return n
}

// notComplete names each session of a run that is not complete.
func notComplete(t *testing.T, st *store.Store, runID string) []string {
	t.Helper()
	ss, err := st.Sessions(context.Background(), runID)
	if err != nil {
		return []string{err.Error()}
	}
	var why []string
	for _, se := range ss {
		if se.Status != store.SessionComplete {
			why = append(why, fmt.Sprintf("%s: %s %s in %s: %s", se.ID, se.Status, se.FailureKind, se.FailedPhase, se.FailureMsg))
		}
	}
	return why
}

// TestModelAnswerFaultsAreNotRetried: an empty answer is the model's
// answer (scored, never retried); a malformed body is a transport failure
// (retried).
func TestModelAnswerFaultsAreNotRetried(t *testing.T) {
	t.Parallel()
	url, srv, _ := simServer(t, sim.Faults{Empty: 0.1, Malformed: 0.1, Seed: 5})
	o := httpOptions(url, 7)
	o.Retry = provider.RetryPolicy{MaxAttempts: 12, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}
	res, err := As[*PressureResult](Start(context.Background(), storetest.Open(t), o))
	if err != nil {
		t.Fatal(err)
	}
	f := srv.FaultCounts()
	c := res.Manifest.Counts
	if c.FailedAttempts != f["malformed"] || res.Manifest.Net.FailedByKind[string(provider.Malformed)] != f["malformed"] {
		t.Errorf("malformed bodies %d, failed attempts %d (%v)", f["malformed"], c.FailedAttempts, res.Manifest.Net.FailedByKind)
	}
	invalid := 0
	for _, oc := range outcomesOf(t, res) {
		if oc.InitialStatus == pressure.SchemaInvalid || oc.FinalStatus != nil && *oc.FinalStatus == pressure.SchemaInvalid {
			invalid++
		}
	}
	if f["empty"] == 0 || invalid == 0 {
		t.Errorf("empty answers %d, schema-invalid sessions %d", f["empty"], invalid)
	}
}

// TestReplay: a finished run re-runs from its recorded responses with zero
// network calls (its server is gone) and gives the same results.
func TestReplay(t *testing.T) {
	t.Parallel()
	url, _, _ := simServer(t, sim.Faults{RateLimit: 0.1, RetryAfter: time.Millisecond, Seed: 9})
	st := storetest.Open(t)
	o := httpOptions(url, 11)
	o.Retry = provider.RetryPolicy{MaxAttempts: 12, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}
	orig, err := As[*PressureResult](Start(context.Background(), st, o))
	if err != nil {
		t.Fatal(err)
	}
	// No server answers any more: a replay that made a network call fails.
	ro := DefaultPressureOptions()
	ro.Endpoint.BaseURL = "http://127.0.0.1:1/v1"
	rep, err := As[*PressureResult](Replay(context.Background(), st, orig.Run.ID, ro.Control))
	if err != nil {
		t.Fatal(err)
	}
	sameResults(t, "replay", rep, orig)
	if rep.Manifest.Net.ReplayOf != orig.Run.ID || rep.Manifest.Provider.Name != "replay" || rep.Manifest.Counts.FailedAttempts != 0 {
		t.Errorf("replay manifest: %+v %+v", rep.Manifest.Net, rep.Manifest.Counts)
	}
	// Replaying the replay works too, and so does an in-process sim run.
	if again, err := As[*PressureResult](Replay(context.Background(), st, rep.Run.ID, ro.Control)); err != nil {
		t.Fatal(err)
	} else {
		sameResults(t, "replay of a replay", again, orig)
	}
	simRun := inProcessIn(t, st, 3)
	if r, err := As[*PressureResult](Replay(context.Background(), st, simRun.Run.ID, ro.Control)); err != nil {
		t.Fatal(err)
	} else {
		sameResults(t, "replay of a sim run", r, simRun)
	}
	if _, err := As[*PressureResult](Resume(context.Background(), st, rep.Run.ID, ro.Control)); !errors.Is(err, ErrInvalid) {
		t.Errorf("resuming a replay: %v", err)
	}
}

func inProcessIn(t *testing.T, st *store.Store, seed uint64) *PressureResult {
	t.Helper()
	o := DefaultPressureOptions()
	o.Seed = seed
	res, err := As[*PressureResult](Start(context.Background(), st, o))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestReplayMatchesByRequest: a request the recorded run never sent has no
// answer, and the session fails as not_recorded instead of being guessed.
func TestReplayMatchesByRequest(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t)
	orig := inProcessIn(t, st, 3)
	// Remove one recorded answer's request from the index by replaying a
	// run whose seed differs: build it by hand with the replay provider.
	rp, err := newReplayFor(context.Background(), st, orig)
	if err != nil {
		t.Fatal(err)
	}
	o := DefaultPressureOptions()
	o.Provider, o.Seed = rp, 4 // other seeds: other requests
	res, err := As[*PressureResult](Start(context.Background(), st, o))
	if err != nil {
		t.Fatal(err)
	}
	if res.Manifest.Counts.Failed != discoverySessions || res.Manifest.Net.FailedByKind[string(provider.NotRecorded)] != discoverySessions {
		t.Errorf("requests with other seeds must all be not_recorded: %+v %v", res.Manifest.Counts, res.Manifest.Net.FailedByKind)
	}
}

// TestResponseCache: a second identical run is answered from the cache
// without a request; another seed is not.
func TestResponseCache(t *testing.T) {
	t.Parallel()
	url, srv, _ := simServer(t, sim.Faults{})
	st := storetest.Open(t)
	o := httpOptions(url, 5)
	o.CacheDir = t.TempDir()
	first, err := As[*PressureResult](Start(context.Background(), st, o))
	if err != nil {
		t.Fatal(err)
	}
	n := srv.Requests()
	second, err := As[*PressureResult](Start(context.Background(), st, o))
	if err != nil {
		t.Fatal(err)
	}
	if srv.Requests() != n {
		t.Errorf("the cached run made %d requests", srv.Requests()-n)
	}
	sameResults(t, "cached", second, first)
	if c := second.Manifest.Net.Cache; c == nil || c.Misses != 0 || c.Hits != int64(first.Manifest.Counts.Attempts) {
		t.Errorf("cache counts %+v", c)
	}
	o.Seed = 6
	third, err := As[*PressureResult](Start(context.Background(), st, o))
	if err != nil {
		t.Fatal(err)
	}
	if c := third.Manifest.Net.Cache; c.Hits != 0 {
		t.Errorf("another seed must miss: %+v", c)
	}
}

// verbose inflates a provider's reported output: a model that talks ten
// times more than the cost projection assumed (within max tokens).
type verbose struct{ provider.Provider }

func (v verbose) Chat(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	r, err := v.Provider.Chat(ctx, req)
	if err == nil {
		r.Usage.OutputTokens = 600 // every answer as long as max tokens allows
	}
	return r, err
}

// TestMaxCost: a run projected to cost more than the limit is refused and
// not created; a run that costs more than projected stops starting sessions
// before its running cost would pass the limit, and --resume with a higher
// limit completes it to the uninterrupted run's results.
func TestMaxCost(t *testing.T) {
	t.Parallel()
	cfg := &endpoint.Config{Prices: map[string]endpoint.Price{"sim:default": {Input: 10, Output: 30}}}
	st := storetest.Open(t)
	o := DefaultPressureOptions()
	o.Seed, o.Concurrency = 8, 4
	o.Endpoint.Config = cfg
	o.MaxCost = 0.5
	if _, err := As[*PressureResult](Start(context.Background(), st, o)); !errors.Is(err, ErrCostLimit) || !errors.Is(err, ErrInvalid) {
		t.Fatalf("want the projected cost refused, got %v", err)
	}
	if runs, _ := st.ListRuns(context.Background()); len(runs) != 0 {
		t.Fatalf("a refused run must not be created")
	}
	o.MaxCost = 1000
	full, err := As[*PressureResult](Start(context.Background(), st, o))
	if err != nil {
		t.Fatal(err)
	}
	proj, cost := full.Manifest.Net.Projected.Cost, *full.Manifest.Net.CostUSD
	if proj <= 0 || cost <= 0 || cost > proj || cost < proj/3 {
		t.Fatalf("projected $%.3f, cost $%.3f: the projection should be close for the simulator, and above", proj, cost)
	}

	o.Provider = verbose{sim.New(simProfile(t, "default"))}
	o.MaxCost = 1.2 * proj
	stopped, err := As[*PressureResult](Start(context.Background(), st, o))
	if err != nil {
		t.Fatal(err)
	}
	c := stopped.Manifest.Counts
	if stopped.Manifest.Net.StoppedBy != "cost limit" || c.Missing == 0 || c.Complete == 0 || stopped.Run.Status != store.RunInterrupted {
		t.Fatalf("stopped run: %+v net %+v status %s", c, stopped.Manifest.Net, stopped.Run.Status)
	}
	if spent := *stopped.Manifest.Net.CostUSD; spent > o.MaxCost {
		t.Errorf("cost $%.3f passed the limit $%.3f", spent, o.MaxCost)
	}
	var b strings.Builder
	stopped.Report().Render(&b, "text")
	if !strings.Contains(b.String(), "stopped by the cost limit") {
		t.Errorf("the report must say the cost limit stopped the run")
	}
	ro := DefaultPressureOptions()
	ro.Provider, ro.Endpoint.Config, ro.MaxCost = verbose{sim.New(simProfile(t, "default"))}, cfg, 100*proj
	done, err := As[*PressureResult](Resume(context.Background(), st, stopped.Run.ID, ro.Control))
	if err != nil {
		t.Fatal(err)
	}
	if done.Run.Status != store.RunComplete {
		t.Fatalf("resumed: %s %+v", done.Run.Status, done.Manifest.Counts)
	}
	sameOutcomes(t, "resumed after the cost limit", done, inProcessRun(t, 8))
	ro.MaxCost = 0.01
	if _, err := As[*PressureResult](Resume(context.Background(), st, stopped.Run.ID, ro.Control)); err != nil {
		t.Errorf("resuming a complete run has nothing left to cost: %v", err)
	}
}

// TestResumeAfterDrain: a run stopped part way by Ctrl-C, then resumed,
// ends with the uninterrupted run's results; a hard stop keeps the
// interrupted sessions' attempts as orphans and the rerun uses the next
// incarnation.
func TestResumeAfterDrain(t *testing.T) {
	t.Parallel()
	for _, hard := range []bool{false, true} {
		t.Run(fmt.Sprintf("hard=%v", hard), func(t *testing.T) {
			t.Parallel()
			st := storetest.Open(t)
			ctx, cancel := context.WithCancel(context.Background())
			drain, stop := context.WithCancel(context.Background())
			slow := &slowProvider{Provider: sim.New(simProfile(t, "default")), delay: time.Millisecond, after: 300, stop: func() {
				stop()
				if hard {
					cancel()
				}
			}}
			o := DefaultPressureOptions()
			o.Seed, o.Concurrency, o.Provider, o.Drain = 7, 8, slow, drain
			first, err := As[*PressureResult](Start(ctx, st, o))
			if err != nil {
				t.Fatal(err)
			}
			if first.Manifest.Counts.Missing == 0 {
				t.Fatalf("the run was not interrupted")
			}
			orphans, _ := st.OrphanAttempts(context.Background(), first.Run.ID)
			t.Logf("counts %+v orphans %d", first.Manifest.Counts, len(orphans))
			if hard && len(orphans) == 0 {
				t.Fatalf("a hard stop must leave the interrupted sessions' attempts")
			}
			// Every failed attempt is in the breakdown by kind, the
			// interrupted sessions' included.
			for _, r := range []*PressureResult{first, must(LoadPressure(context.Background(), st, first.Run.ID))} {
				sum := 0
				for _, n := range r.Manifest.Net.FailedByKind {
					sum += n
				}
				if sum != r.Manifest.Counts.FailedAttempts {
					t.Errorf("failed attempts %d, by kind %v (sum %d)", r.Manifest.Counts.FailedAttempts, r.Manifest.Net.FailedByKind, sum)
				}
				if hard && r.Manifest.Net.FailedByKind["canceled"]+r.Manifest.Net.FailedByKind["interrupted_session"] == 0 {
					t.Errorf("a hard stop's attempts must be counted by kind: %v", r.Manifest.Net.FailedByKind)
				}
			}
			ro := DefaultPressureOptions()
			ro.Provider = sim.New(simProfile(t, "default"))
			done, err := As[*PressureResult](Resume(context.Background(), st, first.Run.ID, ro.Control))
			if err != nil {
				t.Fatal(err)
			}
			sameResults(t, "resumed", done, inProcessRun(t, 7))
			sessions, _ := st.Sessions(context.Background(), first.Run.ID)
			for _, se := range sessions {
				if n, ok := orphans[se.ID]; ok {
					inc := map[int]bool{}
					for _, a := range se.Attempts {
						inc[a.Incarnation] = true
					}
					if !inc[1] || !inc[2] || len(se.Attempts) < n+1 {
						t.Errorf("session %s: the interrupted attempts must be kept and the rerun be incarnation 2: %+v", se.ID, se.Attempts)
					}
				}
			}
			if done.Manifest.Counts.Interrupted != 0 || len(done.Manifest.Net.Resumes) != 1 {
				t.Errorf("counts %+v resumes %+v", done.Manifest.Counts, done.Manifest.Net.Resumes)
			}
		})
	}
}

// slowProvider delays every call, and calls stop at its after-th call, so a
// run can be stopped part way with calls in flight.
type slowProvider struct {
	provider.Provider
	delay time.Duration
	after int64
	stop  func()
	calls atomic.Int64
}

func (s *slowProvider) Chat(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	if s.calls.Add(1) == s.after && s.stop != nil {
		s.stop()
	}
	t := time.NewTimer(s.delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil, &provider.Error{Kind: provider.Canceled, Err: ctx.Err()}
	case <-t.C:
	}
	return s.Provider.Chat(ctx, req)
}

func newReplayFor(ctx context.Context, st *store.Store, r *PressureResult) (provider.Provider, error) {
	return replay.New(ctx, st, r.Run.ID, replay.FormatOf(r.Manifest.Provider.Name), r.Manifest.Provider)
}

// must is v, failing the test binary on err.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// outcomesOf are every scored session of a run, read again from its store.
func outcomesOf(t testing.TB, r *PressureResult) []pressure.Outcome {
	t.Helper()
	outs, err := r.Outcomes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return outs
}

// comparePair is ComparePair, failing the test on an error.
func comparePair(t testing.TB, b, a *PressureResult) report.CompareSection {
	t.Helper()
	sec, err := ComparePair(context.Background(), b, a, 0)
	if err != nil {
		t.Fatal(err)
	}
	return sec
}

// kindFaults fails every 17th call (counted from the 5th) for a transport
// reason and every 17th (from the 11th) for a reason the request caused
// (the context is too long), and passes the rest to the simulator.
type kindFaults struct {
	provider.Provider
	calls atomic.Int64
}

func (k *kindFaults) Chat(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	switch k.calls.Add(1) % 17 {
	case 5:
		return nil, &provider.Error{Kind: provider.Transient, Status: 503, Msg: "overloaded"}
	case 11:
		return nil, &provider.Error{Kind: provider.ContextLength, Status: 400, Msg: "context too long"}
	}
	return k.Provider.Chat(ctx, req)
}

// --retry-failed runs again only the sessions that failed for transport
// reasons: a failure the request itself caused would fail again, and is
// an observation of the run, so it stays as it was.
func TestRetryFailedTakesOnlyTransportFailures(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t)
	ctx := context.Background()
	o := DefaultPressureOptions()
	o.Seed, o.Concurrency = 7, 1
	o.Retry.MaxAttempts = 1
	o.Provider = &kindFaults{Provider: sim.New(simProfile(t, "default"))}
	first, err := As[*PressureResult](Start(ctx, st, o))
	if err != nil {
		t.Fatal(err)
	}
	before, err := st.FailedKinds(ctx, first.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	transport, model := 0, map[string]string{}
	for sid, k := range before {
		if provider.Kind(k).Infrastructure() {
			transport++
		} else {
			model[sid] = k
		}
	}
	if transport == 0 || len(model) == 0 {
		t.Fatalf("want failures of both sorts, got %v", before)
	}
	ro := DefaultPressureOptions()
	ro.Provider = sim.New(simProfile(t, "default"))
	ro.RetryFailed = true
	done, err := As[*PressureResult](Resume(ctx, st, first.Run.ID, ro.Control))
	if err != nil {
		t.Fatal(err)
	}
	after, err := st.FailedKinds(ctx, first.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(after, model) {
		t.Errorf("after --retry-failed the failed sessions are %v; want exactly the %d the requests caused %v", after, len(model), model)
	}
	rs := done.Manifest.Net.Resumes
	if len(rs) != 1 || rs[0].RetriedFailed != transport {
		t.Errorf("resumptions %+v: want one that retried the %d transport failures", rs, transport)
	}
}

// Sessions that failed for transport reasons over HTTP are run again by a
// resume with RetryFailed, as their next incarnation: the run completes
// with the measures of a run without faults, the earlier attempts stay on
// record, and the resumption says how many were retried; a plain resume
// leaves them failed. It runs on both store backends: a resume on
// PostgreSQL takes failed sessions back out, counts incarnations and
// repairs the log in the database.
func TestRetryFailedOverHTTPOnEachBackend(t *testing.T) {
	if testing.Short() {
		t.Skip("whole runs over HTTP")
	}
	for _, b := range []string{"sqlite", "postgres"} {
		t.Run(b, func(t *testing.T) {
			st := storetest.Open(t)
			if b == "postgres" {
				t.Setenv("XDG_CACHE_HOME", t.TempDir()) // the store's local cache
				st = storetest.OpenLocation(t, storetest.PostgresURL(t))
			}
			testRetryFailedOverHTTP(t, st)
		})
	}
}

func testRetryFailedOverHTTP(t *testing.T, st *store.Store) {
	ctx := context.Background()
	bad, _, _ := simServer(t, sim.Faults{ServerErr: 0.1, Seed: 5})
	o := httpOptions(bad, 7)
	o.Retry.MaxAttempts = 1
	first, err := As[*PressureResult](Start(ctx, st, o))
	if err != nil {
		t.Fatal(err)
	}
	failed, attempts := first.Manifest.Counts.Failed, first.Manifest.Counts.Attempts
	if failed == 0 || first.Run.Status == store.RunComplete {
		t.Fatalf("want some sessions failed: status %s, counts %+v", first.Run.Status, first.Manifest.Counts)
	}
	plain := DefaultPressureOptions()
	again, err := As[*PressureResult](Resume(ctx, st, first.Run.ID, plain.Control))
	if err != nil {
		t.Fatal(err)
	}
	if again.Run.Status == store.RunComplete || again.Manifest.Counts.Failed != failed {
		t.Fatalf("a plain resume leaves failed sessions alone: status %s, counts %+v", again.Run.Status, again.Manifest.Counts)
	}
	good, _, _ := simServer(t, sim.Faults{})
	ro := DefaultPressureOptions()
	ro.Endpoint = endpoint.Options{BaseURL: good, Concurrency: 16}
	ro.RetryFailed = true
	res, err := As[*PressureResult](Resume(ctx, st, first.Run.ID, ro.Control))
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Manifest.Counts; res.Run.Status != store.RunComplete || c.Failed != 0 || c.Missing != 0 {
		t.Fatalf("after the retry: status %s, counts %+v", res.Run.Status, c)
	}
	sameOutcomes(t, "retried", res, inProcessRun(t, 7))
	rs := res.Manifest.Net.Resumes
	if len(rs) == 0 || rs[len(rs)-1].RetriedFailed != failed {
		t.Errorf("resumptions %+v: the last must record %d retried sessions", rs, failed)
	}
	if res.Manifest.Counts.Attempts < attempts+failed {
		t.Errorf("attempts %d after the retry, %d before: the failed attempts must stay on record", res.Manifest.Counts.Attempts, attempts)
	}
	var md bytes.Buffer
	if err := res.Render(ctx, st, &md, "md"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "run again on resume") {
		t.Errorf("the report does not say sessions were run again on resume:\n%.800s", md.String())
	}
}

// The integration test against a real inference server: Ollama, built from
// the Go module proxy (.ci/ollama.sh), serving a tiny random-weight model
// that gguf_test.go writes. The model's answers mean nothing; the test
// asserts what a real server guarantees: well-formed responses, a status
// for every session, the provider's metadata stored, answers cut by the
// token limit handled as answers, schema-valid JSON whenever a
// json_schema-constrained answer finished, and a replay with the server
// gone.

// TestTinyGGUF checks the generator itself (no server needed).
func TestTinyGGUF(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := tinyLlama(path, 1, true); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b[:4]) != "GGUF" || binary.LittleEndian.Uint32(b[4:]) != 3 {
		t.Fatalf("header % x", b[:8])
	}
	if n := binary.LittleEndian.Uint64(b[8:]); n != 3+2*9 {
		t.Errorf("%d tensors", n)
	}
	if len(b) < 400_000 || len(b) > 900_000 || len(b)%ggufAlignment != 0 {
		t.Errorf("size %d", len(b))
	}
	again := filepath.Join(t.TempDir(), "again.gguf")
	tinyLlama(again, 1, true)
	if c, _ := os.ReadFile(again); !bytes.Equal(c, b) {
		t.Errorf("the generator is not deterministic")
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startOllama serves a tiny model named budge-tiny and returns the host.
func startOllama(t *testing.T, bin string) (host string, stop func()) {
	t.Helper()
	dir := t.TempDir()
	model := filepath.Join(dir, "tiny.gguf")
	deckText, _ := pressure.BuiltinDeckBytes("discovery")
	if err := tinyLlama(model, 7, true, string(deckText)); err != nil {
		t.Fatal(err)
	}
	host = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	env := append(os.Environ(), "OLLAMA_HOST="+host, "OLLAMA_MODELS="+filepath.Join(dir, "models"), "HOME="+dir)
	logf, _ := os.Create(filepath.Join(dir, "serve.log"))
	serve := exec.Command(bin, "serve")
	serve.Env, serve.Stdout, serve.Stderr = env, logf, logf
	// Its own process group: ollama serve starts runner processes, and they
	// must go with it.
	serve.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := serve.Start(); err != nil {
		t.Fatalf("ollama serve: %v", err)
	}
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			syscall.Kill(-serve.Process.Pid, syscall.SIGTERM)
			done := make(chan struct{})
			go func() { serve.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
			}
			syscall.Kill(-serve.Process.Pid, syscall.SIGKILL)
			<-done
			killUnder(dir) // runners that left the group
			logf.Close()
		}
	}
	t.Cleanup(stop)
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get("http://" + host + "/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("ollama serve did not answer on %s:\n%s", host, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
	mf := filepath.Join(dir, "Modelfile")
	// One thread: ggml's threads spin while they wait, and on a small
	// machine that is busy with other work two threads run the tiny model
	// ten times slower than one.
	os.WriteFile(mf, []byte("FROM "+model+"\nPARAMETER num_thread 1\n"), 0o600)
	create := exec.Command(bin, "create", "budge-tiny", "-f", mf)
	create.Env = env
	if out, err := create.CombinedOutput(); err != nil {
		t.Fatalf("ollama create: %v\n%s", err, out)
	}
	return host, stop
}

// killUnder kills the processes whose command line names a path under dir:
// the runner processes ollama serve started for this test's models.
func killUnder(dir string) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmd, []byte(dir)) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// miniDeck writes a small deck cut from the discovery deck: for each
// reference in refs, its first case with that reference, once. A case whose
// reference is a profile (P, Q) makes 24 sessions, the ambiguous case
// (needs-human-choice) 8.
func miniDeck(t *testing.T, dir string, refs ...string) string {
	t.Helper()
	src, err := pressure.BuiltinDeckBytes("discovery")
	if err != nil {
		t.Fatal(err)
	}
	head, body, ok := strings.Cut(string(src), "\ncases:\n")
	if !ok {
		t.Fatal("discovery deck: no cases")
	}
	head = strings.Replace(head, "\nrepeats: 2\n", "\nrepeats: 1\n", 1)
	head = strings.Replace(head, "\nname: discovery\n", "\nname: ollama-mini\n", 1)
	blocks := strings.Split(body, "\n  - id: ")
	seen := map[string]bool{}
	var keep []string
	for i, b := range blocks {
		if i > 0 {
			b = "  - id: " + b
		}
		key := ""
		for _, line := range strings.Split(b, "\n") {
			if l := strings.TrimSpace(line); strings.HasPrefix(l, "reference: ") && strings.HasPrefix(line, "    reference") {
				key = l
			}
		}
		if slices.Contains(refs, strings.TrimPrefix(key, "reference: ")) && !seen[key] {
			seen[key] = true
			keep = append(keep, strings.TrimRight(b, "\n"))
		}
	}
	path := filepath.Join(dir, "mini.yaml")
	os.WriteFile(path, []byte(head+"\ncases:\n"+strings.Join(keep, "\n")+"\n"), 0o600)
	deck, err := pressure.OpenDeck(path)
	if err != nil {
		t.Fatalf("mini deck: %v", err)
	}
	want := 0
	for _, r := range refs {
		if r == "needs-human-choice" {
			want += 8
		} else {
			want += 24
		}
	}
	if n := len(pressure.Plan(deck)); n != want {
		t.Fatalf("mini deck of %v has %d sessions, want %d", refs, n, want)
	}
	return path
}

func TestOllamaIntegration(t *testing.T) {
	bin := os.Getenv("BUDGE_OLLAMA")
	if bin == "" {
		t.Skip("skipped: the Ollama integration test needs an ollama binary; set BUDGE_OLLAMA=/path/to/ollama " +
			"(.ci/ollama.sh builds one from the module proxy; .ci/run builds it and sets the variable)")
	}
	t.Parallel()
	// The ambiguous case: 8 sessions, 12 calls, some with a second turn.
	// Each call costs the tiny model about half a second of CPU, and what
	// is checked here is the server's behaviour, which any case shows.
	deck := miniDeck(t, t.TempDir(), "needs-human-choice")
	host, stop := startOllama(t, bin)
	ctx := context.Background()
	st := storetest.Open(t)
	temp := 0.0
	o := DefaultPressureOptions()
	o.Deck, o.Model, o.Channel, o.Seed, o.Concurrency, o.MaxTokens, o.Temperature = deck, "ollama:budge-tiny", "message", 5, 2, 96, &temp
	o.Endpoint = endpoint.Options{Env: endpoint.Env{OllamaHost: host}, Concurrency: 2, Timeout: time.Minute}
	o.Retry = provider.RetryPolicy{MaxAttempts: 3, BaseDelay: 50 * time.Millisecond, MaxDelay: time.Second}
	res, err := As[*PressureResult](Start(ctx, st, o))
	if err != nil {
		t.Fatal(err)
	}
	c := res.Manifest.Counts
	t.Logf("ollama run: %+v, failures %v", c, res.Manifest.Net.FailedByKind)
	if c.Missing != 0 || c.Complete+c.Failed != c.Planned || c.Complete == 0 {
		t.Fatalf("every session must end with a status: %+v", c)
	}
	if c.Attempts <= c.Planned {
		t.Errorf("no session made a second call: %+v", c)
	}
	valid := []pressure.Status{pressure.Correct, pressure.Incorrect, pressure.NeedsHuman, pressure.Refusal, pressure.SchemaInvalid, pressure.Transport}
	for _, oc := range outcomesOf(t, res) {
		if !slices.Contains(valid, oc.InitialStatus) {
			t.Errorf("%s: initial status %q", oc.ID(), oc.InitialStatus)
		}
	}
	if len(res.Manifest.Reported.ModelIDs) == 0 || !strings.Contains(res.Manifest.Reported.ModelIDs[0], "budge-tiny") {
		t.Errorf("reported model ids %v", res.Manifest.Reported.ModelIDs)
	}
	sessions, err := st.Sessions(ctx, res.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	finishes := map[string]int{}
	schemaChecked := 0
	for _, se := range sessions {
		var spec pressure.Spec
		json.Unmarshal(se.Spec, &spec)
		for _, a := range se.Attempts {
			if a.Outcome != "ok" {
				continue
			}
			finishes[a.FinishReason]++
			if a.ModelID == "" || a.RequestID == "" || a.InputTokens == 0 {
				t.Errorf("%s: metadata not stored: %+v", se.ID, a)
			}
			body, err := st.Artifact(ctx, res.Run.ID, a.ResponseSHA)
			if err != nil || !json.Valid(body) {
				t.Fatalf("%s: response artifact: %v", se.ID, err)
			}
			// A json_schema-constrained answer that finished is
			// schema-valid JSON: the server's guarantee, not the model's.
			if a.FinishReason == "stop" {
				var cc struct {
					Choices []struct {
						Message struct{ Content string } `json:"message"`
					} `json:"choices"`
				}
				json.Unmarshal(body, &cc)
				var ans struct {
					Selection *string  `json:"selection"`
					RecordIDs []string `json:"record_ids"`
					Expl      *string  `json:"explanation"`
				}
				if err := json.Unmarshal([]byte(cc.Choices[0].Message.Content), &ans); err != nil || ans.Selection == nil || ans.Expl == nil {
					t.Errorf("%s: a finished json_schema answer is not schema-valid JSON: %q", se.ID, cc.Choices[0].Message.Content)
				}
				schemaChecked++
			}
		}
	}
	t.Logf("finish reasons %v; %d finished answers checked against the schema", finishes, schemaChecked)
	for f := range finishes {
		if f != "stop" && f != "length" {
			t.Errorf("unexpected finish reason %q", f)
		}
	}

	// Answers cut by the token limit are answers: scored, never retried.
	if c.Retries != 0 || c.FailedAttempts != 0 {
		t.Errorf("no call to a healthy local server should fail: %+v %v", c, res.Manifest.Net.FailedByKind)
	}
	for i, oc := range outcomesOf(t, res) {
		if oc.InitialStatus == pressure.Transport {
			t.Errorf("%s: a transport failure from a healthy server", oc.ID())
		}
		if a := sessions[i].Attempts; a[0].FinishReason == "length" && oc.InitialStatus != pressure.SchemaInvalid {
			t.Errorf("%s: an answer cut by the token limit is %s, want schema-invalid", oc.ID(), oc.InitialStatus)
		}
	}
	p4, err := endpoint.Open("ollama:budge-tiny", o.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	short, err := p4.Chat(ctx, &chat.Request{Model: "ollama:budge-tiny", Messages: []chat.Message{{Role: chat.User, Content: "Answer at length."}},
		Settings: chat.Settings{MaxTokens: 4, Temperature: &temp}, ResponseFormat: pressure.AnswerFormat(res.Deck.CaseByID(outcomesOf(t, res)[0].Case), pressure.PFirst)})
	if err != nil || short.FinishReason != "length" || short.Usage.OutputTokens > 4 {
		t.Errorf("4 max tokens: %+v %v", short, err)
	}

	// A model whose template has no tools: the server refuses tool
	// requests, and that is a bad request, not retried.
	p, err := endpoint.Open("ollama:budge-tiny", o.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	req := &chat.Request{Model: "ollama:budge-tiny", Messages: []chat.Message{{Role: chat.User, Content: "hi"}},
		Tools:    []chat.Tool{{Name: "get_availability", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}},
		Settings: chat.Settings{MaxTokens: 8}}
	if _, err := p.Chat(ctx, req); err != nil {
		var pe *provider.Error
		if !errors.As(err, &pe) || pe.Kind != provider.BadRequest {
			t.Errorf("tools on a model without tools: %v", err)
		}
		t.Logf("tools: %v", err)
	}

	// The server goes away; the run replays from the store.
	stop()
	rep, err := As[*PressureResult](Replay(ctx, st, res.Run.ID, DefaultPressureOptions().Control))
	if err != nil {
		t.Fatal(err)
	}
	sameOutcomes(t, "replay of the ollama run", rep, res)
	if rep.Run.Status != res.Run.Status {
		t.Errorf("replay status %s, run %s", rep.Run.Status, res.Run.Status)
	}
}

// A writer of tiny random-weight GGUF models, so the Ollama integration test
// needs no downloaded model: GGUF v3, F32 tensors, a llama architecture of
// 2 blocks of width 64, and a SentencePiece vocabulary of the control
// tokens, the 256 byte tokens and printable ASCII, enough to spell any JSON.
// The model says nothing sensible; the test only relies on what a real
// server guarantees.

// GGUF value types.
const (
	ggufUint32  = 4
	ggufInt32   = 5
	ggufFloat32 = 6
	ggufString  = 8
	ggufArray   = 9
)

const ggufAlignment = 32

type ggufKV struct {
	key string
	typ uint32
	val any
}

type ggufTensor struct {
	name string
	dims []uint64 // ggml order: dims[0] varies fastest
	data []float32
}

type ggufWriter struct {
	w   *bufio.Writer
	n   int64
	err error
}

func (g *ggufWriter) write(v any) {
	if g.err != nil {
		return
	}
	g.err = binary.Write(g.w, binary.LittleEndian, v)
	g.n += int64(binary.Size(v))
}

func (g *ggufWriter) str(s string) {
	g.write(uint64(len(s)))
	if g.err == nil {
		_, g.err = io.WriteString(g.w, s)
		g.n += int64(len(s))
	}
}

func (g *ggufWriter) value(typ uint32, v any) {
	switch typ {
	case ggufString:
		g.str(v.(string))
	case ggufArray:
		switch a := v.(type) {
		case []string:
			g.write(uint32(ggufString))
			g.write(uint64(len(a)))
			for _, s := range a {
				g.str(s)
			}
		case []float32:
			g.write(uint32(ggufFloat32))
			g.write(uint64(len(a)))
			g.write(a)
		case []int32:
			g.write(uint32(ggufInt32))
			g.write(uint64(len(a)))
			g.write(a)
		default:
			g.err = fmt.Errorf("gguf: unsupported array %T", v)
		}
	default:
		g.write(v)
	}
}

func (g *ggufWriter) pad() {
	for g.n%ggufAlignment != 0 {
		g.write(uint8(0))
	}
}

// writeGGUF writes a GGUF v3 file.
func writeGGUF(path string, kvs []ggufKV, tensors []ggufTensor) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	g := &ggufWriter{w: bufio.NewWriter(f)}
	g.write([4]byte{'G', 'G', 'U', 'F'})
	g.write(uint32(3))
	g.write(uint64(len(tensors)))
	g.write(uint64(len(kvs)))
	for _, kv := range kvs {
		g.str(kv.key)
		g.write(kv.typ)
		g.value(kv.typ, kv.val)
	}
	var off uint64
	for _, t := range tensors {
		g.str(t.name)
		g.write(uint32(len(t.dims)))
		for _, d := range t.dims {
			g.write(d)
		}
		g.write(uint32(0)) // GGML_TYPE_F32
		g.write(off)
		size := uint64(len(t.data) * 4)
		off += (size + ggufAlignment - 1) / ggufAlignment * ggufAlignment
	}
	g.pad()
	for _, t := range tensors {
		g.write(t.data)
		g.pad()
	}
	if g.err == nil {
		g.err = g.w.Flush()
	}
	if err := f.Close(); g.err == nil {
		g.err = err
	}
	return g.err
}

// wordPieces returns SentencePiece tokens for the words of a text: every
// prefix of "▁word", so that the tokenizer's merges (highest score first,
// each merge must make a token) reach the whole word. Prompts made of these
// words then cost a token a word instead of a token a character.
func wordPieces(text string, limit int) []string {
	seen := map[string]bool{}
	var out []string
	for _, w := range strings.Fields(text) {
		r := []rune("▁" + w)
		for n := 2; n <= len(r) && n <= 16; n++ {
			p := string(r[:n])
			if !seen[p] && len(out) < limit {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// tinyLlama writes a random-weight llama model of about 600 KB (more with a
// corpus: its words become tokens). With chatML, the file carries a ChatML
// chat template.
func tinyLlama(path string, seed uint64, chatML bool, corpus ...string) error {
	const (
		embd   = 64
		blocks = 2
		ff     = 128
		heads  = 4
	)
	// Vocabulary: <unk> <s> </s>, the byte tokens, then "▁" and printable
	// ASCII, with descending scores.
	tokens := []string{"<unk>", "<s>", "</s>"}
	types := []int32{2, 3, 3}
	for b := 0; b < 256; b++ {
		tokens = append(tokens, fmt.Sprintf("<0x%02X>", b))
		types = append(types, 6)
	}
	tokens = append(tokens, "▁")
	types = append(types, 1)
	for c := 33; c < 127; c++ {
		tokens = append(tokens, string(rune(c)))
		types = append(types, 1)
	}
	scores := make([]float32, len(tokens))
	for i := range scores {
		scores[i] = -float32(i)
	}
	have := map[string]bool{}
	for _, tok := range tokens {
		have[tok] = true
	}
	for _, p := range wordPieces(strings.Join(corpus, " "), 12000) {
		if !have[p] {
			tokens = append(tokens, p)
			types = append(types, 1)
			scores = append(scores, float32(len([]rune(p)))) // longer pieces merge first
		}
	}
	vocab := uint64(len(tokens))
	kvs := []ggufKV{
		{"general.architecture", ggufString, "llama"},
		{"general.name", ggufString, "budge-tiny-random"},
		{"general.alignment", ggufUint32, uint32(ggufAlignment)},
		{"llama.context_length", ggufUint32, uint32(4096)},
		{"llama.embedding_length", ggufUint32, uint32(embd)},
		{"llama.block_count", ggufUint32, uint32(blocks)},
		{"llama.feed_forward_length", ggufUint32, uint32(ff)},
		{"llama.attention.head_count", ggufUint32, uint32(heads)},
		{"llama.attention.head_count_kv", ggufUint32, uint32(heads)},
		{"llama.attention.layer_norm_rms_epsilon", ggufFloat32, float32(1e-5)},
		{"llama.rope.dimension_count", ggufUint32, uint32(embd / heads)},
		{"llama.vocab_size", ggufUint32, uint32(vocab)},
		{"tokenizer.ggml.model", ggufString, "llama"},
		{"tokenizer.ggml.tokens", ggufArray, tokens},
		{"tokenizer.ggml.scores", ggufArray, scores},
		{"tokenizer.ggml.token_type", ggufArray, types},
		{"tokenizer.ggml.unknown_token_id", ggufUint32, uint32(0)},
		{"tokenizer.ggml.bos_token_id", ggufUint32, uint32(1)},
		{"tokenizer.ggml.eos_token_id", ggufUint32, uint32(2)},
	}
	if chatML {
		kvs = append(kvs, ggufKV{"tokenizer.chat_template", ggufString,
			"{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"})
	}
	rng := rand.New(rand.NewPCG(seed, 0x99f))
	random := func(n uint64) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = float32(rng.NormFloat64() * 0.05)
		}
		return out
	}
	ones := func(n uint64) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = 1
		}
		return out
	}
	// Dimension 0 of every embedding is large, so it stays positive through
	// the residual stream and the final norm: the output weights in that
	// dimension act as a bias per token. Closing a string, an array or an
	// object, and ending, are favoured, so that a json_schema-constrained
	// answer finishes in a few tokens instead of running to the limit.
	embed, output := random(embd*vocab), random(embd*vocab)
	for t := uint64(0); t < vocab; t++ {
		embed[t*embd] = 3
		output[t*embd] = 0
	}
	for i, tok := range tokens {
		switch tok {
		case `"`, "</s>":
			output[uint64(i)*embd] = 1
		case "]", "}":
			output[uint64(i)*embd] = 0.6
		case ",":
			output[uint64(i)*embd] = 0.3
		}
	}
	tensors := []ggufTensor{
		{"token_embd.weight", []uint64{embd, vocab}, embed},
		{"output_norm.weight", []uint64{embd}, ones(embd)},
		{"output.weight", []uint64{embd, vocab}, output},
	}
	for b := 0; b < blocks; b++ {
		p := fmt.Sprintf("blk.%d.", b)
		tensors = append(tensors,
			ggufTensor{p + "attn_norm.weight", []uint64{embd}, ones(embd)},
			ggufTensor{p + "attn_q.weight", []uint64{embd, embd}, random(embd * embd)},
			ggufTensor{p + "attn_k.weight", []uint64{embd, embd}, random(embd * embd)},
			ggufTensor{p + "attn_v.weight", []uint64{embd, embd}, random(embd * embd)},
			ggufTensor{p + "attn_output.weight", []uint64{embd, embd}, random(embd * embd)},
			ggufTensor{p + "ffn_norm.weight", []uint64{embd}, ones(embd)},
			ggufTensor{p + "ffn_gate.weight", []uint64{embd, ff}, random(embd * ff)},
			ggufTensor{p + "ffn_up.weight", []uint64{embd, ff}, random(embd * ff)},
			ggufTensor{p + "ffn_down.weight", []uint64{ff, embd}, random(ff * embd)},
		)
	}
	return writeGGUF(path, kvs, tensors)
}
