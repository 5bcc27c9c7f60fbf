package study

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/store/storetest"
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
