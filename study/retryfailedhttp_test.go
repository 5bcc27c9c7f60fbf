package study

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/buildlab/budge/provider/endpoint"
	"github.com/buildlab/budge/provider/sim"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/testkit/storetest"
)

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
