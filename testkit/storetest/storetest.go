// Package storetest opens real stores for tests: a fresh SQLite store in a
// temporary directory, or a fresh PostgreSQL store on a real server
// (store/pgtest), closed when the test ends.
package storetest

import (
	"context"
	"testing"

	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/testkit/pgtest"
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

// PostgresURL is the URL of a new, empty PostgreSQL store: a fresh schema
// on the package's shared server when its TestMain calls pgtest.Main, or
// on a server started for t otherwise. It skips t when PostgreSQL is not
// installed.
func PostgresURL(t testing.TB) string {
	t.Helper()
	var srv *pgtest.Server
	if pgtest.MainRuns() {
		srv = pgtest.Shared(t)
	} else {
		srv = pgtest.Start(t)
	}
	return srv.FreshURL(t)
}

// OpenPostgres opens a new, empty PostgreSQL store (see PostgresURL) with
// its local cache in a temporary directory, closed when t ends.
func OpenPostgres(t testing.TB) *store.Store {
	t.Helper()
	st, err := store.OpenURL(context.Background(), PostgresURL(t), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// OpenLocation opens the store at loc, a directory or a postgres:// URL
// (with its local cache in a temporary directory), closed when t ends.
func OpenLocation(t testing.TB, loc string) *store.Store {
	t.Helper()
	if !store.IsURL(loc) {
		return OpenDir(t, loc)
	}
	st, err := store.OpenURL(context.Background(), loc, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
