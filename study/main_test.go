package study

import (
	"os"
	"sync"
	"testing"

	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/testkit/paralleltest"
	"github.com/buildlab/budge/testkit/pgtest"
)

// TestMain runs up to eight parallel tests at once, on any machine: many
// wait on servers, retry delays, leases or an inference server rather
// than compute. The PostgreSQL tests share one server (pgtest.Main). The
// planted runs allocate much and keep little: the collector runs less
// often.
func TestMain(m *testing.M) {
	paralleltest.AtLeast(8)
	paralleltest.FewerCollections()
	code := pgtest.Main(m)
	for _, st := range kept.open {
		st.Close()
	}
	for _, dir := range kept.dirs {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// kept are the runs that several tests read (directRun, inProcessRun):
// each is made once, by the first test that needs it, into a store of its
// own that outlives that test; TestMain closes and removes the stores.
var kept struct {
	mu   sync.Mutex
	runs map[string]*keptEntry
	open []*store.Store
	dirs []string
}

type keptEntry struct {
	mu  sync.Mutex
	res *PressureResult
	st  *store.Store
}

// keptRun returns the run kept under key, made by build into a store of
// its own the first time a test asks for it. A run that fails to be made
// is not kept: the next test to ask makes it again (and fails as well).
func keptRun(t *testing.T, key string, build func(*store.Store) *PressureResult) (*PressureResult, *store.Store) {
	t.Helper()
	kept.mu.Lock()
	if kept.runs == nil {
		kept.runs = map[string]*keptEntry{}
	}
	e := kept.runs[key]
	if e == nil {
		e = &keptEntry{}
		kept.runs[key] = e
	}
	kept.mu.Unlock()

	e.mu.Lock()
	defer e.mu.Unlock()
	if e.res != nil {
		return e.res, e.st
	}
	dir, err := os.MkdirTemp("", "study-kept-")
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(dir)
	kept.mu.Lock()
	kept.dirs = append(kept.dirs, dir)
	if err == nil {
		kept.open = append(kept.open, st)
	}
	kept.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	res := build(st)
	e.res, e.st = res, st
	return res, st
}
