package study

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/buildlab/budge/provider/endpoint"
	"github.com/buildlab/budge/provider/sim"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/testkit/storetest"
)

// The fault-injection example of the docs, at budge run's default settings:
// the simulator server with 20% 429s, 5% 5xx, 2% resets and 2% truncated
// bodies, and a run with the default options (only the server's
// Retry-After is shortened, to keep the test quick; waiting one out costs
// no attempt). The run completes, counts one failed attempt per injected
// fault, and has the measures of the in-process run without faults.
// (TestFaultInjectionAcceptance is the same mix with a faster retry
// policy; runner.TestFaultMixCompletes the mix at the default attempts on
// a fake clock.)
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
	res, err := As[*PressureResult](Start(context.Background(), st, o))
	if err != nil {
		t.Fatal(err)
	}
	c := res.Manifest.Counts
	if res.Run.Status != store.RunComplete || c.Complete != discoverySessions || c.Failed != 0 || c.Missing != 0 {
		var why []string
		if ss, err := st.Sessions(context.Background(), res.Run.ID); err == nil {
			for _, se := range ss {
				if se.Status != store.SessionComplete {
					why = append(why, fmt.Sprintf("%s: %s %s in %s: %s", se.ID, se.Status, se.FailureKind, se.FailedPhase, se.FailureMsg))
				}
			}
		}
		t.Fatalf("the example at default settings: status %s, counts %+v; sessions not complete: %v", res.Run.Status, c, why)
	}
	faults := srv.FaultCounts()
	injected := faults["429"] + faults["5xx"] + faults["reset"] + faults["truncate"]
	if faults["429"] == 0 || faults["5xx"] == 0 || faults["reset"] == 0 || faults["truncate"] == 0 {
		t.Fatalf("faults injected %v", faults)
	}
	var b bytes.Buffer
	if err := res.Render(context.Background(), st, &b, "text"); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("attempts %d (%d failed, %d retries)", srv.Requests(), injected, injected); !strings.Contains(b.String(), want) {
		t.Errorf("report does not count one failed attempt per injected fault (%q, faults %v):\n%.900s", want, faults, b.String())
	}
	sameOutcomes(t, "with faults", res, inProcessRun(t, o.Seed))
}
