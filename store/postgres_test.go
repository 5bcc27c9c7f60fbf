package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/buildlab/budge/testkit/pgtest"
)

// What the PostgreSQL backend does differently from SQLite's files: its
// schema version is a table, several processes open it at once, it keeps
// nothing on disk, and no message shows its URL's password.

// pgStore opens a store in a fresh schema and returns its URL too.
func pgStore(t *testing.T) (*Store, string) {
	t.Helper()
	url := pgtest.Shared(t).FreshURL(t)
	s, err := track(t)(OpenURL(context.Background(), url, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	return s, url
}

func pgVersion(t *testing.T, s *Store) int {
	t.Helper()
	var v int
	if err := s.db.QueryRowContext(context.Background(), `SELECT version FROM budge_schema`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestPostgresSchemaVersion(t *testing.T) {
	ctx := context.Background()
	s, url := pgStore(t)
	if v := pgVersion(t, s); v != SchemaVersion {
		t.Fatalf("a new PostgreSQL store has schema version %d, want %d", v, SchemaVersion)
	}
	createRun(t, s, "r1", base)

	// A version 1 store gains the lease table and keeps its runs.
	if _, err := s.db.ExecContext(ctx, `DROP TABLE run_leases; UPDATE budge_schema SET version = 1`); err != nil {
		t.Fatal(err)
	}
	s2, err := track(t)(OpenURL(ctx, url, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if v := pgVersion(t, s2); v != SchemaVersion {
		t.Errorf("migrated to version %d, want %d", v, SchemaVersion)
	}
	s2.LeaseRenew = -1
	l, err := s2.AcquireLease(ctx, "r1", ThisProcess("test"))
	if err != nil {
		t.Fatalf("leasing in the migrated store: %v", err)
	}
	l.Release()

	// A newer store is refused and left alone.
	if _, err := s.db.ExecContext(ctx, `UPDATE budge_schema SET version = $1`, SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	_, err = OpenURL(ctx, url, t.TempDir())
	if !errors.Is(err, ErrNewerSchema) || !strings.Contains(fmt.Sprint(err), fmt.Sprintf("schema version %d", SchemaVersion+1)) {
		t.Errorf("opening a newer store: %v, want ErrNewerSchema naming its version", err)
	}
	if v := pgVersion(t, s); v != SchemaVersion+1 {
		t.Errorf("refusing the store changed its version to %d", v)
	}
}

// Stores opened at once on a new database all see it created once.
func TestPostgresOpenConcurrently(t *testing.T) {
	url := pgtest.Shared(t).FreshURL(t)
	openConcurrently(t, func() (*Store, error) { return OpenURL(context.Background(), url, t.TempDir()) })
}

// A run on PostgreSQL needs no file: sessions, artifacts, the log and the
// manifest are all in the database, and the local cache holds no file.
func TestPostgresKeepsNoFiles(t *testing.T) {
	ctx := context.Background()
	s, _ := pgStore(t)
	createRun(t, s, "run", base)
	mustWrite(t, s, "run", testSession("s1", 0))
	if err := s.AppendLog("run", LogLines("run", testSession("s1", 0))); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishRun(ctx, "run", RunComplete, []byte(`{"run_id":"run"}`)); err != nil {
		t.Fatal(err)
	}
	filepath.WalkDir(s.Dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			t.Errorf("a PostgreSQL store wrote the file %s", path)
		}
		return err
	})
	if b := storedLog(t, s, "run"); !strings.Contains(string(b), `"session_id":"s1"`) {
		t.Errorf("the exported log does not hold the session: %q", b)
	}
}

// No error shows a store URL's password, whether the URL does not parse,
// the server cannot be reached, or the store opened and a query failed.
func TestPostgresPasswordNeverShown(t *testing.T) {
	ctx := context.Background()
	const pw = "s3cr3t-Pa55"
	srv := pgtest.Shared(t)
	good := strings.Replace(srv.FreshURL(t), "postgres://budge@", "postgres://budge:"+pw+"@", 1)
	for name, url := range map[string]string{
		"unparsable":   "postgres://budge:" + pw + "@127.0.0.1:notaport/db",
		"unreachable":  "postgres://budge:" + pw + "@127.0.0.1:1/db?connect_timeout=2",
		"query option": "postgres://127.0.0.1:1/db?user=budge&password=" + pw + "&connect_timeout=2",
	} {
		_, err := OpenURL(ctx, url, t.TempDir())
		if err == nil {
			t.Errorf("%s: opened", name)
			continue
		}
		if strings.Contains(err.Error(), pw) {
			t.Errorf("%s: the error shows the password: %v", name, err)
		}
	}
	if r := Redact(good); strings.Contains(r, pw) || !strings.Contains(r, "xxxxx") {
		t.Errorf("Redact(%q) = %q", good, r)
	}
	s, err := track(t)(OpenURL(ctx, good, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Resolve(ctx, "latest")
	if err == nil || strings.Contains(err.Error(), pw) || !strings.Contains(err.Error(), "127.0.0.1") {
		t.Errorf("Resolve on an empty store: %v, want an error naming the server but not the password", err)
	}
}

// Without a home directory a PostgreSQL store still opens, its cache in
// the temporary directory.
func TestPostgresCacheWithoutHome(t *testing.T) {
	url := pgtest.Shared(t).FreshURL(t)
	t.Setenv("HOME", "")
	t.Setenv("XDG_CACHE_HOME", "")
	s, err := track(t)(OpenURL(context.Background(), url, ""))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.Dir, os.TempDir()) {
		t.Errorf("cache in %s, want it under %s", s.Dir, os.TempDir())
	}
	t.Cleanup(func() { os.RemoveAll(s.Dir) })
}

// A database whose tables have budge's names but no budge schema version
// belongs to something else: it is refused, and left alone.
func TestPostgresRefusesForeignTables(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Shared(t).FreshURL(t)
	s, err := track(t)(OpenURL(ctx, url, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, `DROP TABLE budge_schema; DROP TABLE sessions; CREATE TABLE sessions (id INTEGER, name TEXT)`); err != nil {
		t.Fatal(err)
	}
	_, err = OpenURL(ctx, url, t.TempDir())
	if !errors.Is(err, ErrUnknownSchema) || !strings.Contains(fmt.Sprint(err), "has a table") {
		t.Fatalf("opening a database with foreign tables: %v, want ErrUnknownSchema naming a table", err)
	}
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'sessions'`).Scan(&n); err != nil || n != 2 {
		t.Errorf("the foreign sessions table has %d columns (%v), want its own 2", n, err)
	}
}

// A command that only reads does not make a store of an empty database:
// it is told there is none.
func TestPostgresReadOnlyOpenMakesNoTables(t *testing.T) {
	url := pgtest.Shared(t).FreshURL(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	if _, err := OpenLocation(context.Background(), url, true); !errors.Is(err, ErrNoStore) {
		t.Fatalf("opening an empty database to read: %v, want ErrNoStore", err)
	}
	s, err := OpenLocation(context.Background(), url, false)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = OpenLocation(context.Background(), url, true)
	if err != nil {
		t.Fatalf("once made, the store opens to read: %v", err)
	}
	s.Close()
}

// A database URL written with an upper-case scheme opens the database, as
// the lower-case one does: it never becomes a directory named after it.
func TestPostgresUpperCaseScheme(t *testing.T) {
	url := pgtest.Shared(t).FreshURL(t)
	upper := "POSTGRES" + strings.TrimPrefix(url, "postgres")
	s, err := track(t)(OpenURL(context.Background(), upper, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if s.where == upper || pgVersion(t, s) == 0 {
		t.Errorf("store at %s, schema %d", s.where, pgVersion(t, s))
	}
	if _, err := os.Stat(upper); err == nil {
		t.Errorf("a directory %s was made", upper)
	}
}

// A reader never migrates a PostgreSQL store: an older one is refused,
// naming the command that migrates it, and left at its version.
func TestPostgresReaderNeverMigrates(t *testing.T) {
	ctx := context.Background()
	s, url := pgStore(t)
	createRun(t, s, "r1", base)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	r, err := OpenReader(ctx, url, false)
	if err != nil {
		t.Fatal(err)
	}
	if runs, err := r.ListRuns(ctx); err != nil || len(runs) != 1 {
		t.Errorf("runs %v, %v", runs, err)
	}
	r.Close()
	if _, err := s.db.ExecContext(ctx, `UPDATE budge_schema SET version = $1`, SchemaVersion-1); err != nil {
		t.Fatal(err)
	}
	for _, writes := range []bool{false, true} {
		if _, err := OpenReader(ctx, url, writes); !errors.Is(err, ErrNeedsMigration) || !strings.Contains(err.Error(), MigrateCommand+" --store") {
			t.Errorf("writes %v: %v, want ErrNeedsMigration naming %s", writes, err, MigrateCommand)
		}
	}
	if v := pgVersion(t, s); v != SchemaVersion-1 {
		t.Errorf("a reader changed the version to %d", v)
	}
}

// A version 7 PostgreSQL store is migrated to attempts and messages by
// schedule position a batch at a time; stopped after two batches, it is at
// version 7 still, and opening it again finishes the migration.
func TestPostgresMigratesVersion7(t *testing.T) {
	defer func(n int) { clusterBatch = n }(clusterBatch)
	clusterBatch = 7
	ctx := context.Background()
	s, url := pgStore(t)
	runs := writeVersion7(t, s, 40)
	for _, q := range append(version7Tables(postgresDialect), `UPDATE budge_schema SET version = 7`) {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	stop := errors.New("killed")
	batchHook = func(n int) error {
		if n == 2 {
			return stop
		}
		return nil
	}
	_, err := OpenURL(ctx, url, t.TempDir())
	batchHook = nil
	if !errors.Is(err, stop) {
		t.Fatalf("stopped migration: %v", err)
	}
	var copied int
	if err := s.db.QueryRowContext(ctx, `SELECT sessions FROM migration_progress`).Scan(&copied); err != nil || copied != 14 {
		t.Errorf("progress of the stopped migration: %d sessions (%v), want 14", copied, err)
	}
	if v := pgVersion(t, s); v != 7 {
		t.Errorf("a stopped migration left version %d", v)
	}
	s2, err := track(t)(OpenURL(ctx, url, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if v := pgVersion(t, s2); v != SchemaVersion {
		t.Errorf("migrated to version %d, want %d", v, SchemaVersion)
	}
	checkVersion7(t, s2, runs, 40)
}
