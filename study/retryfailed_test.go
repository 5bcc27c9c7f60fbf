package study

import (
	"bytes"
	"context"
	"maps"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/provider/endpoint"
	"github.com/buildlab/budge/provider/sim"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/testkit/storetest"
)

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
