package study

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/buildlab/budge/provider"
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
