package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// SQLite only: these tests set user_version and edit the database file
// directly; postgres_test.go has the PostgreSQL schema version tests.

// rawDB opens a store's database directly, as another program would, and
// closes it when the test ends.
func rawDB(t *testing.T, dir string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "budge.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func exec(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func schemaVersionOf(t *testing.T, db *sql.DB) int {
	t.Helper()
	v, err := userVersion(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// openCurrent opens the store in dir, which must then be at the current
// schema version, and closes it when the test ends.
func openCurrent(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if v := schemaVersionOf(t, s.db.DB); v != SchemaVersion {
		t.Errorf("the opened store has schema version %d, want %d", v, SchemaVersion)
	}
	return s
}

// newStoreWithRun makes a store in a new directory holding one run with one
// session, and closes it.
func newStoreWithRun(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	createRun(t, s, "r1", base)
	if err := s.WriteSessions(context.Background(), "r1", []Session{testSession("s1", 0)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestNewStoreRecordsSchemaVersion(t *testing.T) {
	dir := newStoreWithRun(t)
	if v := schemaVersionOf(t, rawDB(t, dir)); v != SchemaVersion {
		t.Errorf("a new store has schema version %d, want %d", v, SchemaVersion)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	dir := newStoreWithRun(t)
	exec(t, rawDB(t, dir), fmt.Sprintf("PRAGMA user_version = %d", SchemaVersion+1))
	wantRefused(t, Open, dir, ErrNewerSchema,
		"budge.db", fmt.Sprintf("schema version %d", SchemaVersion+1), "newer budge", "upgrade budge", "another store directory")
	// Nothing was changed.
	if v := schemaVersionOf(t, rawDB(t, dir)); v != SchemaVersion+1 {
		t.Errorf("refusing the store changed its version to %d", v)
	}
}

// A store written before budge recorded a schema version has version 1
// tables, or some of them (the review and freeze tables were created when
// first used): it is adopted as version 1 and its runs are readable.
func TestOpenAdoptsUnversionedStore(t *testing.T) {
	dir := newStoreWithRun(t)
	db := rawDB(t, dir)
	exec(t, db, version7Tables(sqliteDialect)...)
	exec(t, db, "PRAGMA user_version = 0", "DROP TABLE review_items", "DROP TABLE reviews", "DROP TABLE deck_freezes")
	s := openCurrent(t, dir)
	ctx := context.Background()
	got, err := s.Sessions(ctx, "r1")
	if err != nil || len(got) != 1 {
		t.Fatalf("sessions of the adopted store: %v, %v", ids(got), err)
	}
	sameSession(t, got[0], testSession("s1", 0))
	// The missing tables were created.
	if err := s.CreateReview(ctx, Review{RunID: "r1", Reviewers: [2]string{"a", "b"}, Frozen: base, Items: []ReviewItem{{SessionID: "s1"}}}); err != nil {
		t.Errorf("review in the adopted store: %v", err)
	}
	if _, _, err := s.FreezeDeck(ctx, Freeze{Hash: "h", Name: "d", FrozenAt: base}, []byte("d")); err != nil {
		t.Errorf("freezing in the adopted store: %v", err)
	}
}

// A version 2 store gains the reviewer token table (version 3) and keeps
// its runs.
func TestOpenMigratesVersion2(t *testing.T) {
	dir := newStoreWithRun(t)
	exec(t, rawDB(t, dir), "PRAGMA user_version = 2", "DROP TABLE review_tokens")
	s := openCurrent(t, dir)
	ctx := context.Background()
	if got, err := s.Sessions(ctx, "r1"); err != nil || len(got) != 1 {
		t.Fatalf("sessions of the migrated store: %v, %v", ids(got), err)
	}
	if err := s.CreateReview(ctx, Review{RunID: "r1", Reviewers: [2]string{"a", "b"}, Frozen: base, Items: []ReviewItem{{SessionID: "s1"}},
		TokenSHA256: [2]string{"sum-a", "sum-b"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetReviewerToken(ctx, "r1", "b", "sum-b2"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetReviewerToken(ctx, "r1", "eve", "x"); !errors.Is(err, ErrNotReviewer) {
		t.Errorf("token for a non-reviewer: %v", err)
	}
	got, err := s.ReviewerTokens(ctx, "r1")
	if err != nil || got["a"] != "sum-a" || got["b"] != "sum-b2" || len(got) != 2 {
		t.Errorf("reviewer tokens %v, %v", got, err)
	}
}

func TestOpenRefusesUnversionedForeignTables(t *testing.T) {
	for name, stmts := range map[string][]string{
		"a missing column": {"ALTER TABLE sessions DROP COLUMN trace_sha256"},
		"an extra column":  {"ALTER TABLE runs ADD COLUMN owner TEXT"},
		"another type":     {"DROP TABLE decks", "CREATE TABLE decks (hash TEXT PRIMARY KEY, name TEXT NOT NULL, source TEXT NOT NULL, content BLOB NOT NULL)"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := newStoreWithRun(t)
			exec(t, rawDB(t, dir), append([]string{"PRAGMA user_version = 0"}, stmts...)...)
			wantRefused(t, Open, dir, ErrUnknownSchema, "another store directory")
			if v := schemaVersionOf(t, rawDB(t, dir)); v != 0 {
				t.Errorf("refusing the store recorded version %d", v)
			}
		})
	}
}

// Stores opened at once on a new directory all see it created once.
func TestOpenConcurrently(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	openConcurrently(t, func() (*Store, error) { return Open(dir) })
}

// openConcurrently opens and closes a store from eight goroutines at once;
// each must succeed.
func openConcurrently(t *testing.T, open func() (*Store, error)) {
	t.Helper()
	errs := make(chan error, 8)
	for range cap(errs) {
		go func() {
			s, err := open()
			if err == nil {
				err = s.Close()
			}
			errs <- err
		}()
	}
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// A version 1 store gains the lease table and keeps its runs.
func TestOpenMigratesVersion1(t *testing.T) {
	dir := newStoreWithRun(t)
	exec(t, rawDB(t, dir), "DROP TABLE run_leases", "PRAGMA user_version = 1")
	s := openCurrent(t, dir)
	ctx := context.Background()
	if _, err := s.GetRun(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	s.LeaseRenew = -1
	l, err := s.AcquireLease(ctx, "r1", ThisProcess("test"))
	if err != nil {
		t.Fatalf("leasing in the migrated store: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

// The two schema files hold the same sections, and each table the same
// columns in the same order: they differ in spelling only.
func TestSchemaFilesAgree(t *testing.T) {
	ctx := context.Background()
	if len(sqliteDialect.sections) != len(postgresDialect.sections) {
		t.Fatalf("sections: sqlite %d, postgres %d", len(sqliteDialect.sections), len(postgresDialect.sections))
	}
	for name := range sqliteDialect.sections {
		if _, ok := postgresDialect.sections[name]; !ok {
			t.Fatalf("section %s is in schema_sqlite.sql only", name)
		}
		if !strings.Contains(sqliteDialect.ddl(name), "CREATE TABLE") || postgresDialect.statements(name) == nil {
			// PostgreSQL's tables for what SQLite keeps in files
			// ("shared"), indexes, and what only SQLite needs (a
			// section empty on PostgreSQL, "artifact_rows").
			continue
		}
		// A section may index the tables of version 1: they are there
		// first, and only the section's own tables compared.
		sq, err := sectionColumns(ctx, sqliteDialect, name)
		if err != nil {
			t.Fatal(err)
		}
		pg, err := sectionColumns(ctx, postgresDialect, name)
		if err != nil {
			t.Fatal(err)
		}
		if len(sq) == 0 || len(pg) != len(sq) {
			t.Errorf("section %s: sqlite tables %d, postgres %d", name, len(sq), len(pg))
		}
		for table, cols := range sq {
			var names, pgNames []string
			for _, c := range cols {
				names = append(names, strings.Fields(c)[0])
			}
			for _, c := range pg[table] {
				pgNames = append(pgNames, strings.Fields(c)[0])
			}
			if !slices.Equal(names, pgNames) {
				t.Errorf("table %s: sqlite columns %v, postgres %v", table, names, pgNames)
			}
		}
	}
}

// sectionColumns are the columns of the tables a section of a dialect's
// schema creates, by table, read as schemaColumns does (in SQLite, in
// memory) after the tables of version 1.
func sectionColumns(ctx context.Context, d dialect, name string) (map[string][]string, error) {
	if name == "tables" {
		return schemaColumns(ctx, sqliteDialect.ddl("tables"))
	}
	v1, err := schemaColumns(ctx, sqliteDialect.ddl("tables"))
	if err != nil {
		return nil, err
	}
	all, err := schemaColumns(ctx, sqliteDialect.ddl("tables")+d.ddl(name))
	if err != nil {
		return nil, err
	}
	for table := range v1 {
		delete(all, table)
	}
	return all, nil
}
