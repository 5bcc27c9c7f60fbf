package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/buildlab/budge/store/pgtest"
)

// The conformance suite: every store test that is not about SQLite's files
// runs once on each backend through eachBackend, as subtests "sqlite" and
// "postgres"; openStore and storeOpener open the backend the subtest names.
// Tests about SQLite's files (a damaged or emptied database file, pack
// files, WAL, permissions on disk) call neither and say so.

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// backends are the backends every conformance test runs on.
var backends = []string{"sqlite", "postgres"}

// eachBackend runs fn as a subtest on every backend.
func eachBackend(t *testing.T, fn func(t *testing.T)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b, fn)
	}
}

// onPostgres reports whether t runs under eachBackend's postgres subtest.
func onPostgres(t testing.TB) bool {
	return strings.Contains(t.Name()+"/", "/postgres/")
}

// storeOpener returns a function that opens one new store each time it is
// called on the same location (a directory, or a fresh PostgreSQL schema),
// closing it when the test ends.
func storeOpener(t testing.TB) func() (*Store, error) {
	t.Helper()
	if !onPostgres(t) {
		dir := filepath.Join(t.TempDir(), "store")
		return func() (*Store, error) { return track(t)(Open(dir)) }
	}
	url := pgtest.Shared(t).FreshURL(t)
	cache := t.TempDir()
	return func() (*Store, error) { return track(t)(OpenURL(context.Background(), url, cache)) }
}

// track closes an opened store when the test ends.
func track(t testing.TB) func(*Store, error) (*Store, error) {
	return func(s *Store, err error) (*Store, error) {
		if err == nil {
			t.Cleanup(func() { s.Close() })
		}
		return s, err
	}
}

// openStore opens a new, empty store on the test's backend and closes it
// when the test ends.
func openStore(t testing.TB) *Store {
	t.Helper()
	s, err := storeOpener(t)()
	if err != nil {
		t.Fatal(err)
	}
	return s
}
