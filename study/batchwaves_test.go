package study

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/provider/batch"
	"github.com/buildlab/budge/provider/endpoint"
	"github.com/buildlab/budge/provider/sim"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/testkit/providertest"
	"github.com/buildlab/budge/testkit/storetest"
)

// maxTurns is the most model calls any session of a run made.
func maxTurns(t *testing.T, st *store.Store, id string) int {
	t.Helper()
	ss, err := st.Sessions(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	most := 0
	for _, se := range ss {
		for _, a := range se.Attempts {
			most = max(most, a.Call)
		}
	}
	return most
}

// sameTranscripts fails unless two runs stored the same sessions, each
// with the same transcript (every message, in order).
func sameTranscripts(t *testing.T, what string, gst *store.Store, got string, wst *store.Store, want string) {
	t.Helper()
	transcripts := func(st *store.Store, id string) map[string][]chat.Entry {
		ss, err := st.Sessions(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		out := make(map[string][]chat.Entry, len(ss))
		for _, se := range ss {
			out[se.ID] = se.Messages
		}
		return out
	}
	g, w := transcripts(gst, got), transcripts(wst, want)
	if len(g) != len(w) || len(w) == 0 {
		t.Fatalf("%s: %d sessions stored, want %d", what, len(g), len(w))
	}
	diff := 0
	for id, msgs := range w {
		if !reflect.DeepEqual(g[id], msgs) {
			if diff < 3 {
				t.Errorf("%s: session %s's transcript differs:\n got %+v\nwant %+v", what, id, g[id], msgs)
			}
			diff++
		}
	}
	if diff > 0 {
		t.Errorf("%s: %d of %d transcripts differ", what, diff, len(w))
	}
}

// The discovery deck with Batch gives exactly the sessions and measures of
// the same seed without it (every transcript equal), through OpenAI's Batch API and through
// Anthropic's Message Batches; it takes one wave per model turn (as many
// waves as the longest session has turns), one batch per wave, and every
// request in a batch is a stored attempt.
func TestBatchWavesMatchDirectCalls(t *testing.T) {
	// Not in parallel: it reads the process's memory limit, which every
	// batch run of the process sets while it runs (the batch tests that run
	// in parallel start after it, as every parallel test does).
	if testing.Short() {
		t.Skip("batch runs of the discovery deck")
	}
	for _, style := range []string{"openai", "anthropic"} {
		t.Run(style, func(t *testing.T) {
			var mu sync.Mutex
			var first *batch.Event
			var limit int64
			before := debug.SetMemoryLimit(-1)
			res, srv, _, st := batchRun(t, style, sim.BatchOptions{}, true, func(o *PressureOptions) {
				o.BatchNotify = func(e batch.Event) {
					mu.Lock()
					defer mu.Unlock()
					if first == nil && e.Wave > 0 {
						first = &e
						limit = debug.SetMemoryLimit(-1)
					}
				}
			})
			if os.Getenv("GOMEMLIMIT") == "" && limit != batchMemory {
				t.Errorf("the memory limit during the waves is %d, want %d", limit, batchMemory)
			}
			if after := debug.SetMemoryLimit(-1); after != before {
				t.Errorf("the memory limit after the run is %d, want %d as before it", after, before)
			}
			direct, dst := directRun(t, style)
			sameResults(t, style, res, direct)
			sameTranscripts(t, style, st, res.Run.ID, dst, direct.Run.ID)
			bi := res.Manifest.Net.Batch
			if bi == nil || bi.Style != style {
				t.Fatalf("manifest batch record %+v", bi)
			}
			turns := maxTurns(t, st, res.Run.ID)
			if bi.Waves != turns || bi.Batches != turns || srv.BatchCounts()[style] != turns {
				t.Errorf("%d waves, %d batches stored, %d at the server; the longest session has %d turns", bi.Waves, bi.Batches, srv.BatchCounts()[style], turns)
			}
			if bi.Requests != res.Manifest.Counts.Attempts {
				t.Errorf("%d requests in batches, %d attempts stored", bi.Requests, res.Manifest.Counts.Attempts)
			}
			if first == nil || first.Wave != 1 || first.Requests != discoverySessions || first.Batches != 1 {
				t.Errorf("first wave announced %+v, want wave 1: %d requests in 1 batch", first, discoverySessions)
			}
		})
	}
}

// Requests that fail inside a batch (5%) and a batch that expires half
// done: every failed request is stored as a failed attempt of its session
// and tried again in a later wave, and the run completes.
func TestBatchErrorsAndExpiryRetried(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a batch run of the discovery deck")
	}
	res, _, log, st := batchRun(t, "openai", sim.BatchOptions{ErrorRate: 0.05, Expire: []int{2}}, true, func(o *PressureOptions) {
		o.Retry = provider.DefaultRetryPolicy()
		o.Retry.BaseDelay = time.Millisecond
	})
	if res.Run.Status != store.RunComplete || res.Manifest.Counts.Complete != discoverySessions {
		t.Fatalf("status %s, counts %+v", res.Run.Status, res.Manifest.Counts)
	}
	errored := faultsLogged(log, "batch-error")
	failedServer, failedExpired := 0, 0
	for _, a := range storedAttempts(t, st, res.Run.ID) {
		switch {
		case a.Outcome == "ok":
		case strings.Contains(a.ErrorMsg, "batch_expired"):
			failedExpired++
		default:
			failedServer++
		}
	}
	if errored == 0 || failedServer != errored {
		t.Errorf("the server failed %d requests in batches; %d failed attempts stored", errored, failedServer)
	}
	if failedExpired == 0 {
		t.Errorf("no attempt stored as expired with its batch")
	}
}

// A framing run with Batch against the simulated judge gives exactly the
// sessions and measures of the same seed without it, in one wave (a
// framing session is one model turn) of one batch.
func TestFramingBatchMatchesDirectCalls(t *testing.T) {
	t.Parallel()
	j, err := FramingJudge("sample")
	if err != nil {
		t.Fatal(err)
	}
	k, err := j.Knowledge()
	if err != nil {
		t.Fatal(err)
	}
	srv, hs, _ := providertest.SimServer(t, sim.ServerOptions{Judge: k})
	st := storetest.Open(t)
	run := func(batched bool) *FramingResult {
		o := DefaultFramingOptions()
		o.Model, o.Seed = "openai-compatible:judge", 4
		o.Endpoint = endpoint.Options{BaseURL: hs.URL + "/v1", Concurrency: 16}
		if batched {
			o.Batch, o.Concurrency = true, 100000
		}
		res, err := As[*FramingResult](Start(context.Background(), st, o))
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a, b := run(true), run(false)
	if !reflect.DeepEqual(a.Summary, b.Summary) {
		t.Errorf("the measures of the batch run differ from the direct run's")
	}
	as, err := st.Sessions(context.Background(), a.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	bs, err := st.Sessions(context.Background(), b.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != len(bs) {
		t.Fatalf("%d sessions batched, %d direct", len(as), len(bs))
	}
	for i := range as {
		if as[i].ID != bs[i].ID || !reflect.DeepEqual(as[i].Messages, bs[i].Messages) {
			t.Fatalf("session %s differs from the direct run's %s", as[i].ID, bs[i].ID)
		}
	}
	bi := a.Manifest.Net.Batch
	if bi == nil || bi.Waves != 1 || bi.Batches != 1 || bi.Requests != len(as) || srv.BatchCounts()["openai"] != 1 {
		t.Errorf("batch record %+v, %d batches at the server; want %d requests in 1 batch over 1 wave", bi, srv.BatchCounts()["openai"], len(as))
	}
	var rep strings.Builder
	if err := a.Render(context.Background(), st, &rep, "text"); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("batch API: %d request(s) in 1 batch(es) over 1 wave(s)", len(as)); !strings.Contains(rep.String(), want) {
		t.Errorf("the report does not count the batch (%q):\n%s", want, rep.String())
	}
}
