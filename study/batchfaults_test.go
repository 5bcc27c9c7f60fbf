package study

import (
	"context"
	"strings"
	"testing"

	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/provider/batch"
	"github.com/buildlab/budge/provider/endpoint"
	"github.com/buildlab/budge/provider/sim"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/testkit/providertest"
	"github.com/buildlab/budge/testkit/storetest"
)

// batchRun runs the discovery deck with --batch against the simulator's
// batch endpoints (what budge sim serve serves) planted with o, in style
// (openai or anthropic); batch false runs it with direct calls instead.
func batchRun(t *testing.T, style string, o sim.BatchOptions, batch bool, opts ...func(*PressureOptions)) (*PressureResult, *sim.Server, *providertest.RequestLog, *store.Store) {
	t.Helper()
	st := storetest.Open(t)
	res, srv, log := batchRunIn(t, st, style, o, batch, opts...)
	return res, srv, log, st
}

// batchRunIn is batchRun into the store st.
func batchRunIn(t *testing.T, st *store.Store, style string, o sim.BatchOptions, batch bool, opts ...func(*PressureOptions)) (*PressureResult, *sim.Server, *providertest.RequestLog) {
	t.Helper()
	srv, hs, log := providertest.SimServer(t, sim.ServerOptions{Batch: o})
	po := httpOptions(hs.URL+"/v1", 9)
	if style == "anthropic" {
		po.Model = "anthropic:sim"
		po.Endpoint = endpoint.Options{BaseURL: hs.URL, Structured: "json_schema", Concurrency: 16, Env: endpoint.Env{AnthropicKey: "batch-test-credential"}}
	}
	if batch {
		po.Batch, po.Concurrency = true, 100000
	}
	for _, f := range opts {
		f(&po)
	}
	res, err := As[*PressureResult](Start(context.Background(), st, po))
	if err != nil {
		t.Fatal(err)
	}
	return res, srv, log
}

// directRun is the run with direct calls (batchRun with batch false, no
// faults) of style, which the batch tests compare their batch runs with.
// Every such run of a style is the same run (same deck, seed and
// simulator), so it is made once and kept (keptRun) for the tests that
// only read it.
func directRun(t *testing.T, style string) (*PressureResult, *store.Store) {
	t.Helper()
	return keptRun(t, "direct "+style, func(st *store.Store) *PressureResult {
		res, _, _ := batchRunIn(t, st, style, sim.BatchOptions{}, false)
		return res
	})
}

// paidOnce checks that the server answered (was paid for) no more
// requests than the run stored answers: a request answered twice would
// be paid twice.
func paidOnce(t *testing.T, st *store.Store, res *PressureResult, log *providertest.RequestLog) int {
	t.Helper()
	answered := faultsLogged(log, "batch")
	ok := 0
	for _, a := range storedAttempts(t, st, res.Run.ID) {
		if a.Outcome == "ok" {
			ok++
		}
	}
	if answered != ok {
		t.Errorf("the server answered %d batch requests; the run stored %d answers", answered, ok)
	}
	return answered
}

// faultsLogged counts the requests the server logged with a fault.
func faultsLogged(log *providertest.RequestLog, fault string) int {
	n := 0
	for _, e := range log.Entries() {
		if e.Fault == fault {
			n++
		}
	}
	return n
}

// storedAttempts are the attempts of every session a run stored.
func storedAttempts(t *testing.T, st *store.Store, runID string) []store.Attempt {
	t.Helper()
	ss, err := st.Sessions(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	var all []store.Attempt
	for _, se := range ss {
		all = append(all, se.Attempts...)
	}
	return all
}

// Each batch conformance scenario, planted at the simulator's batch
// endpoints: every request is paid at most once, the measures equal a
// direct run's, and the manifest and the report count what the recovery
// path did, with what it counts of.
func TestBatchFaultsPayOnce(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("batch runs of the discovery deck")
	}
	// The direct runs the batch runs must equal, made once for the
	// scenarios, of a small deck: each scenario is about the recovery
	// path, which every wave takes whatever its size.
	deck := miniDeck(t, t.TempDir(), "P", "Q")
	small := func(o *PressureOptions) { o.Deck = deck }
	direct := map[string]*PressureResult{}
	for _, style := range []string{"openai", "anthropic"} {
		direct[style], _, _, _ = batchRun(t, style, sim.BatchOptions{}, false, small)
	}
	for _, tc := range []struct {
		name, style string
		o           sim.BatchOptions
		check       func(t *testing.T, b *BatchInfo, srv *sim.Server)
		report      string
	}{
		{"download cut off", "openai", sim.BatchOptions{CutDownloads: 1}, func(t *testing.T, b *BatchInfo, srv *sim.Server) {
			if b.DownloadRetries != b.Batches || srv.BatchCounts()["openai"] != b.Batches {
				t.Errorf("%d downloads tried again for %d batches (%d at the server)", b.DownloadRetries, b.Batches, srv.BatchCounts()["openai"])
			}
		}, "results downloads tried again"},
		{"download fails", "anthropic", sim.BatchOptions{FailDownloads: 1}, func(t *testing.T, b *BatchInfo, srv *sim.Server) {
			if b.DownloadRetries != b.Batches || srv.BatchCounts()["anthropic"] != b.Batches {
				t.Errorf("%d downloads tried again for %d batches (%d at the server)", b.DownloadRetries, b.Batches, srv.BatchCounts()["anthropic"])
			}
		}, "results downloads tried again"},
		{"create answer lost", "openai", sim.BatchOptions{LoseCreate: []int{1}}, func(t *testing.T, b *BatchInfo, srv *sim.Server) {
			if b.CreatesFound != 1 || srv.BatchCounts()["openai"] != b.Batches {
				t.Errorf("%d creates found; %d batches stored, %d at the server", b.CreatesFound, b.Batches, srv.BatchCounts()["openai"])
			}
		}, "1 of "},
		{"create answer lost", "anthropic", sim.BatchOptions{LoseCreate: []int{2}}, func(t *testing.T, b *BatchInfo, srv *sim.Server) {
			if b.CreatesFound != 1 || srv.BatchCounts()["anthropic"] != b.Batches {
				t.Errorf("%d creates found; %d batches stored, %d at the server", b.CreatesFound, b.Batches, srv.BatchCounts()["anthropic"])
			}
		}, "found at the provider after their create answer was lost"},
		{"oversized refused", "openai", sim.BatchOptions{MaxBytes: 60_000}, func(t *testing.T, b *BatchInfo, srv *sim.Server) {
			if b.Split == 0 || srv.BatchCounts()["openai"] != b.Batches {
				t.Errorf("%d splits; %d batches stored, %d at the server", b.Split, b.Batches, srv.BatchCounts()["openai"])
			}
		}, "refused for their size"},
		{"results only at results_url", "anthropic", sim.BatchOptions{MoveResults: true}, nil, "files deleted at the provider"},
		{"expired", "openai", sim.BatchOptions{Expire: []int{1}}, nil, ""},
	} {
		t.Run(tc.style+"/"+tc.name, func(t *testing.T) {
			res, srv, log, st := batchRun(t, tc.style, tc.o, true, small)
			paid := paidOnce(t, st, res, log)
			sameResults(t, tc.name, res, direct[tc.style])
			b := res.Manifest.Net.Batch
			if b == nil {
				t.Fatal("no batch record")
			}
			if b.Duplicates+b.Missing+b.Unknown > 0 {
				t.Errorf("%d duplicate, %d missing, %d unknown results", b.Duplicates, b.Missing, b.Unknown)
			}
			if b.Collected == 0 || b.Cleaned != b.Collected || srv.Deleted() == 0 {
				t.Errorf("files deleted for %d of %d collected batches (%d deletions at the server)", b.Cleaned, b.Collected, srv.Deleted())
			}
			if tc.check != nil {
				tc.check(t, b, srv)
			}
			// Every failed attempt says why.
			failed := 0
			ss, _ := st.Sessions(context.Background(), res.Run.ID)
			for _, se := range ss {
				for _, a := range se.Attempts {
					if a.Outcome != "ok" {
						failed++
						if a.ErrorKind == "" || a.ErrorMsg == "" {
							t.Errorf("session %s: a failed attempt without its reason: %+v", se.ID, a)
						}
					}
				}
			}
			if tc.name == "expired" && (failed == 0 || !strings.Contains(reportText(t, res), "failed")) {
				t.Errorf("%d failed attempts after an expired batch", failed)
			}
			if txt := reportText(t, res); tc.report != "" && !strings.Contains(txt, tc.report) {
				t.Errorf("the report does not say %q:\n%s", tc.report, txt)
			}
			t.Logf("%d requests paid, %d failed attempts; batch record %+v", paid, failed, *b)
		})
	}
}

// A batch that fails as a whole (errors.data: token limit exceeded) gives
// each of its sessions the provider's reason, is not sent again, and is
// counted in the manifest and the report with its reason.
func TestBatchFailedAsAWholeRecorded(t *testing.T) {
	t.Parallel()
	res, srv, log, st := batchRun(t, "openai", sim.BatchOptions{Fail: []int{1}}, true)
	paidOnce(t, st, res, log)
	b := res.Manifest.Net.Batch
	if b.Failed != 1 || len(b.FailedReasons) != 1 || !strings.Contains(b.FailedReasons[0], "token_limit_exceeded") || srv.BatchCounts()["openai"] != 1 {
		t.Fatalf("batch record %+v, %d batches at the server", *b, srv.BatchCounts()["openai"])
	}
	c := res.Manifest.Counts
	if c.Failed != c.Planned {
		t.Errorf("counts %+v: every session of the failed batch should fail", c)
	}
	ss, _ := st.Sessions(context.Background(), res.Run.ID)
	for _, se := range ss {
		if se.FailureKind != string(provider.QuotaExceeded) || !strings.Contains(se.FailureMsg, "token_limit_exceeded") {
			t.Fatalf("session %s: %s %q", se.ID, se.FailureKind, se.FailureMsg)
		}
	}
	if txt := reportText(t, res); !strings.Contains(txt, "1 of 1 batch(es) failed as a whole") {
		t.Errorf("the report does not show the failed batch:\n%s", txt)
	}
}

// reportText is a run's text report.
func reportText(t *testing.T, res *PressureResult) string {
	t.Helper()
	var b strings.Builder
	if err := res.Report().Render(&b, "text"); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// With KeepBatchFiles (--keep-batch-files) nothing is deleted at the
// provider, and the report says the files were kept.
func TestBatchKeepFiles(t *testing.T) {
	t.Parallel()
	res, srv, log, st := batchRun(t, "openai", sim.BatchOptions{}, true, func(o *PressureOptions) { o.KeepBatchFiles = true })
	paidOnce(t, st, res, log)
	b := res.Manifest.Net.Batch
	if srv.Deleted() != 0 || b.Cleaned != 0 || !b.KeepFiles || b.Collected != b.Batches {
		t.Errorf("%d deletions at the server; batch record %+v", srv.Deleted(), *b)
	}
	if txt := reportText(t, res); !strings.Contains(txt, "kept at the provider (--keep-batch-files)") {
		t.Errorf("the report does not say the files were kept:\n%s", txt)
	}
}

// A batch run interrupted while its first batch is open cancels it at the
// provider; the resume collects the answers the batch finished before the
// cancel instead of sending them again, and the run ends as a direct run
// does, every request paid once.
func TestCancelledBatchAnswersCollectedOnResume(t *testing.T) {
	t.Parallel()
	srv, hs, log := providertest.SimServer(t, sim.ServerOptions{Batch: sim.BatchOptions{Hold: []int{1}, CancelDone: 0.5}})
	po := httpOptions(hs.URL+"/v1", 9)
	po.Batch, po.Concurrency = true, 100000
	var id string
	po.Started = func(run string) { id = run }
	ctx, cancel := context.WithCancel(context.Background())
	// The interrupt comes once the run holds its first batch open: at its
	// first word of the batch's state. (An interrupt while the batch is
	// being created, its create answer lost, is a scenario of
	// TestBatchFaultsPayOnce.)
	po.BatchNotify = func(e batch.Event) {
		if strings.HasPrefix(e.Note, "batch ") {
			cancel()
		}
	}
	st := storetest.Open(t)
	if res, err := As[*PressureResult](Start(ctx, st, po)); err == nil && res.Run.Status == store.RunComplete {
		t.Fatal("the interrupted run completed")
	}
	if got := srv.BatchStates(); got["cancelled"] != 1 {
		t.Fatalf("batches at the server after the interrupt: %v", got)
	}
	rc := po.Control
	rc.Batch = false // a resume of a batch run is a batch run by itself
	res, err := As[*PressureResult](Resume(context.Background(), st, id, rc))
	if err != nil {
		t.Fatal(err)
	}
	paidOnce(t, st, res, log)
	direct, _ := directRun(t, "openai")
	sameResults(t, "resumed after a cancel", res, direct)
	b := res.Manifest.Net.Batch
	if b.Cancelled != 1 || b.CancelledRequests != discoverySessions || b.CancelledAnswers != discoverySessions/2 {
		t.Errorf("batch record %+v; want one cancelled batch of %d requests, %d answers collected", *b, discoverySessions, discoverySessions/2)
	}
	if txt := reportText(t, res); !strings.Contains(txt, "answers of 208 of their 416 request(s) collected") {
		t.Errorf("the report does not count the cancelled batch's answers:\n%s", txt)
	}
}

// The store's ledger of batches hands the batcher every batch without
// its requests, counted, and one batch's requests when asked: an open
// wave's records read together would hold all of its requests.
func TestBatchLedgerCountsRequests(t *testing.T) {
	ctx := context.Background()
	l := batchLedger{storetest.Open(t), "r1"}
	open := batch.Record{Token: "t-open", Wave: 1, State: batch.Submitted, Requests: []batch.Entry{{CustomID: "a", Key: "k1"}, {CustomID: "b", Key: "k2"}}}
	done := batch.Record{Token: "t-done", Wave: 1, State: batch.Collected, Count: 5}
	for _, r := range []batch.Record{open, done} {
		if err := l.PutBatch(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := l.Batches(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("%d batches, want 2", len(recs))
	}
	for _, r := range recs {
		want := map[string]int{"t-open": 2, "t-done": 5}[r.Token]
		if r.Requests != nil || r.Len() != want {
			t.Errorf("batch %s: %d requests returned, Len %d; want none returned, Len %d", r.Token, len(r.Requests), r.Len(), want)
		}
	}
	got, err := l.Requests(ctx, "t-open")
	if err != nil || len(got) != 2 || got[0] != open.Requests[0] || got[1] != open.Requests[1] {
		t.Errorf("requests of t-open: %v, %v; want %v", got, err, open.Requests)
	}
	if _, err := l.Requests(ctx, "t-none"); err == nil || !strings.Contains(err.Error(), "no stored batch t-none") {
		t.Errorf("requests of a batch never stored: %v", err)
	}
}
