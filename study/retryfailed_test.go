package study

import (
	"context"
	"maps"
	"sync/atomic"
	"testing"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/provider/sim"
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
