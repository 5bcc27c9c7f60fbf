// Package storetest opens real stores for tests: a fresh SQLite store in a
// temporary directory, closed when the test ends.
package storetest

import (
	"testing"

	"github.com/buildlab/budge/store"
)

// Open opens a new store in a temporary directory of t.
func Open(t testing.TB) *store.Store {
	t.Helper()
	return OpenDir(t, t.TempDir())
}

// OpenDir opens the store at dir, closed when t ends.
func OpenDir(t testing.TB, dir string) *store.Store {
	t.Helper()
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
