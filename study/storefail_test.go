package study

import (
	"context"
	"errors"
	"iter"
	"strings"
	"testing"

	"github.com/buildlab/budge/runner"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/testkit/storetest"
)

// failingSink refuses every write, as a full disk does.
type failingSink struct{}

func (failingSink) WriteSessions(context.Context, string, []store.Session) error {
	return errors.New("disk full")
}

// A run whose results cannot be stored is marked interrupted, never left
// running, and the error says how to continue it.
func TestStoreFailureMarksRunInterrupted(t *testing.T) {
	ctx := context.Background()
	st := storetest.Open(t)
	o := DefaultPressureOptions()
	p, prov, err := o.prepare(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	s, _, err := buildStack(ctx, st, o.Control, p, prov, allOf(plannedLen(p)), true)
	if err != nil {
		t.Fatal(err)
	}
	lease, err := create(ctx, st, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release()
	id := p.head().RunID
	n, jobs := jobsOf(p, func(int, string) (int, bool) { return 1, true })
	_, err = execute(ctx, st, o.Control, p, s, failingSink{}, n, jobs)
	if err == nil || !strings.Contains(err.Error(), "disk full") || !strings.Contains(err.Error(), "--resume "+id) {
		t.Fatalf("error %v: must name the cause and how to continue", err)
	}
	run, err := st.GetRun(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != store.RunInterrupted {
		t.Errorf("status %q, want %q", run.Status, store.RunInterrupted)
	}
	if _, err := Load(ctx, st, id); err != nil {
		t.Errorf("the interrupted run must still load: %v", err)
	}
}

// jobsOf is the runner jobs of a run in schedule order, of the sessions
// want accepts, each as the incarnation want gives, and how many there
// are. Each job is made as the runner takes it: a run's jobs are never all
// in memory.
func jobsOf(p protocol, want func(i int, id string) (incarnation int, ok bool)) (int, iter.Seq[runner.Job]) {
	_, idAt := plannedIDs(p)
	order := p.order()
	n := 0
	for _, i := range order {
		if _, ok := want(i, idAt(i)); ok {
			n++
		}
	}
	return n, func(yield func(runner.Job) bool) {
		for pos, i := range order {
			if inc, ok := want(i, idAt(i)); ok && !yield(p.job(i, pos, inc)) {
				return
			}
		}
	}
}
