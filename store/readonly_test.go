package store

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/buildlab/budge/limits"
)

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// readOnlyStore writes a store with one run of two sessions (and a viewer
// index of its own) and closes it.
func readOnlyStore(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "store")
	st, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	createRun(t, st, "r", base)
	if err := st.WriteSessions(ctx, "r", []Session{testSession("a", 0), testSession("b", 1)}); err != nil {
		t.Fatal(err)
	}
	writeView(t, st, "r", "old-basis", `{"old":1}`)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestOpenReadOnly: a store opened for reading (as on a read-only
// filesystem: immutable, no shared-memory file; or beside a writer: mode
// ro) lists, reads sessions and artifacts, and takes a viewer index, while
// its database stays byte for byte as it was and nothing is added to its
// directory but SQLite's own shared-memory files.
func TestOpenReadOnly(t *testing.T) {
	for _, immutable := range []bool{true, false} {
		ctx := context.Background()
		dir := readOnlyStore(t)
		path := filepath.Join(dir, dbName)
		before := fileSum(t, path)
		tmp := t.TempDir()
		st, err := openReadOnly(dir, path, tmp, immutable, readerCacheKB)
		if err != nil {
			t.Fatalf("immutable %v: %v", immutable, err)
		}
		st.tmpDir = tmp
		runs, err := st.ListRuns(ctx)
		if err != nil || len(runs) != 1 || runs[0].ID != "r" {
			t.Fatalf("immutable %v: runs %v, %v", immutable, runs, err)
		}
		got := sessions(t, st, "r")
		if len(got) != 2 {
			t.Fatalf("sessions: %d", len(got))
		}
		want := testSession("a", 0)
		mustArtifact(t, st, "r", want.Attempts[1].ResponseSHA, []byte(`{"session":"a","response":1}`))
		if !st.ReadOnly() {
			t.Error("ReadOnly false")
		}
		// The viewer's index goes into the private database, in front of
		// the store's own.
		if v, ok, err := st.ViewRunOf(ctx, "r"); err != nil || ok {
			t.Errorf("the store's old index shows through: %+v %v %v", v, ok, err)
		}
		if err := st.PrepareBrowse(ctx); err != nil {
			t.Fatal(err)
		}
		writeView(t, st, "r", "new-basis", `{"new":1}`, "a")
		if v, ok, err := st.ViewRunOf(ctx, "r"); err != nil || !ok || v.Basis != "new-basis" {
			t.Errorf("index: %+v %v %v", v, ok, err)
		}
		// Writing the store itself fails.
		if err := st.CreateRun(ctx, testRun("r2", base.Add(time.Hour)), "x", []byte("x")); err == nil {
			t.Error("a run was created in a read-only store")
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		if fileSum(t, path) != before {
			t.Errorf("immutable %v: the database changed", immutable)
		}
		if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the private database's folder is left: %v", err)
		}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if n := e.Name(); n != dbName && n != "runs" && (immutable || (n != dbName+"-shm" && n != dbName+"-wal")) {
				t.Errorf("immutable %v: %s added to the store", immutable, n)
			}
		}
		// The store's own index is untouched.
		rw, err := OpenExisting(dir)
		if err != nil {
			t.Fatal(err)
		}
		if v, ok, err := rw.ViewRunOf(ctx, "r"); err != nil || !ok || v.Basis != "old-basis" {
			t.Errorf("the store's index: %+v %v %v", v, ok, err)
		}
		rw.Close()
	}
}

// A store at an older schema version is not migrated by a reader: it is
// refused, naming the command that migrates it, and left as it was.
func TestOpenReadOnlyNeedsMigration(t *testing.T) {
	dir := readOnlyStore(t)
	path := filepath.Join(dir, dbName)
	st, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.db.ExecContext(context.Background(), "PRAGMA user_version = 6"); err != nil {
		t.Fatal(err)
	}
	st.Close()
	before := fileSum(t, path)
	_, err = readOnlyDir(dir, readerCacheKB)
	if !errors.Is(err, ErrNeedsMigration) || !strings.Contains(err.Error(), MigrateCommand+" --dir "+dir) {
		t.Fatalf("err %v, want ErrNeedsMigration naming %s", err, MigrateCommand)
	}
	if fileSum(t, path) != before {
		t.Error("the database changed")
	}
	// A reader that may write (the viewer) is refused too.
	if _, err := OpenReader(context.Background(), dir, true); !errors.Is(err, ErrNeedsMigration) {
		t.Errorf("OpenReader: %v", err)
	}
	if _, err := readOnlyDir(filepath.Join(t.TempDir(), "none"), readerCacheKB); !errors.Is(err, ErrNoStore) {
		t.Errorf("no store: %v", err)
	}
}

// EachSessions reads sessions that hold megabytes each a few at a time:
// no batch holds much more than limits.MaxPendingBytes of transcripts.
func TestEachSessionsBoundedByBytes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	createRun(t, st, "r", base)
	const each = 3 << 20
	var all []Session
	for i := range 40 {
		se := testSession(fmt.Sprintf("s%02d", i), i)
		se.Messages[0].Content = strings.Repeat("z", each)
		all = append(all, se)
	}
	if err := st.WriteSessions(ctx, "r", all); err != nil {
		t.Fatal(err)
	}
	seen, most := 0, int64(0)
	if err := st.EachSessions(ctx, "r", 1024, func(b []Session) error {
		var n int64
		for _, se := range b {
			if se.Seq != seen {
				t.Fatalf("session %d read at position %d", se.Seq, seen)
			}
			seen++
			n += transcriptBytes(se)
		}
		most = max(most, n)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if seen != 40 {
		t.Errorf("%d sessions read, want 40", seen)
	}
	if most > limits.MaxPendingBytes+each {
		t.Errorf("a batch held %d MiB, want about %d MiB at most", most>>20, limits.MaxPendingBytes>>20)
	}
}

// writeView writes run's viewer index with the given basis and headline
// body, each of ids a complete session in it.
func writeView(t *testing.T, st *Store, run, basis, body string, ids ...string) {
	t.Helper()
	ctx := context.Background()
	w, err := st.WriteView(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close() // before the test closes st
	for _, id := range ids {
		if err := w.Add(ctx, ViewSession{ID: id, Status: SessionComplete}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Finish(ctx, basis, []byte(body)); err != nil {
		t.Fatal(err)
	}
}
