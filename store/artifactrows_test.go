package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// SQLite only: these tests build a version 8 store by hand.

// version8Store makes a store at schema version 8 in a new directory: two
// runs of sessions whose artifacts (five each) are indexed in the table of
// version 8, the second run's written after the first's.
func version8Store(t *testing.T, sessions int) (dir string, runs []string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "store")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	runs = []string{"r1", "r2"}
	for _, run := range runs {
		createRun(t, s, run, base)
		for i := range sessions {
			mustWrite(t, s, run, testSession(fmt.Sprintf("s%03d", i), i))
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, dir)
	// The second run's rows after a gap in the row ids: the migration
	// keeps a row's id (how far it got is the new table's last), and a
	// table's ids need not run from 1 without a gap.
	exec(t, db, append(version8Tables(sqliteDialect),
		"UPDATE artifacts SET rowid = rowid + 1000 WHERE run_id = 'r2'",
		"PRAGMA user_version = 8")...)
	db.Close()
	return dir, runs
}

// artifactRows is the artifact index of a store in row id order, with
// the row ids.
func artifactRows(t *testing.T, dir string) []string {
	t.Helper()
	db := rawDB(t, dir)
	defer db.Close()
	rows, err := db.Query(`SELECT rowid, ` + artifactCols + ` FROM artifacts ORDER BY rowid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var run, sha, pack, enc string
		var id, off, n int64
		if err := rows.Scan(&id, &run, &sha, &pack, &off, &n, &enc); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprint(id, run, sha, pack, off, n, enc))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// A version 8 store's artifact index is copied into the table by row id,
// in the order it was written: every artifact reads back and verifies, the
// index by (run, sha256) is gone and the one by generation and the hash's
// first digits (version 10) is there, and a session written again with
// the same artifacts adds none.
func TestMigrateVersion8(t *testing.T) {
	dir, runs := version8Store(t, 30)
	before := artifactRows(t, dir)
	if len(before) != 2*30*5 {
		t.Fatalf("the version 8 store indexes %d artifacts, want %d", len(before), 2*30*5)
	}
	s := openCurrent(t, dir)
	ctx := context.Background()
	if got := artifactRows(t, dir); !reflect.DeepEqual(got, before) {
		t.Errorf("artifact index after the migration (%d rows) differs from before (%d rows), or its order does", len(got), len(before))
	}
	for _, run := range runs {
		if err := s.VerifyArtifacts(ctx, run); err != nil {
			t.Errorf("run %s: %v", run, err)
		}
		se := testSession("s007", 7)
		for _, a := range se.Attempts {
			for _, sha := range []string{a.RequestSHA, a.ResponseSHA} {
				if sha == "" {
					continue
				}
				if body, err := s.Artifact(ctx, run, sha); err != nil || ArtifactID(body) != sha {
					t.Errorf("run %s, artifact %s after the migration: %v", run, sha, err)
				}
			}
		}
	}
	var indexes []string
	rows, err := s.db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'artifacts' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		indexes = append(indexes, name)
	}
	rows.Close()
	if want := []string{"artifacts_by_gen", "artifacts_by_pack"}; !reflect.DeepEqual(indexes, want) {
		t.Errorf("indexes of the artifact table: %v, want %v", indexes, want)
	}
	// A new session of r1 that shares the artifacts of s007 (and of no
	// session this process wrote, so the index is asked) adds only its own.
	again := withArtifacts("s900", "s007", 900, []byte("new"))
	mustWrite(t, s, "r1", again)
	if got := len(artifactRows(t, dir)); got != len(before)+1 {
		t.Errorf("after a session with one new artifact the index has %d rows, want %d", got, len(before)+1)
	}
}

// A migration stopped after any of its batches leaves the store at
// version 8 with the rows copied so far; opening the store again finishes
// it, with the same rows, in the same order, as a migration never
// stopped: with a last batch smaller than the others and with one that
// copies nothing, stopped once or stopped again after it resumed.
func TestMigrateVersion8Resumes(t *testing.T) {
	defer func(n int) { artifactBatch = n }(artifactBatch)
	pristine, _ := version8Store(t, 30)
	const rows = 2 * 30 * 5
	for _, batch := range []int{70, 50} {
		artifactBatch = batch
		whole := filepath.Join(t.TempDir(), "whole")
		copyDir(t, pristine, whole)
		openCurrent(t, whole).Close()
		want := artifactRows(t, whole)
		if len(want) != rows {
			t.Fatalf("a migration never stopped indexes %d artifacts, want %d", len(want), rows)
		}
		batches := rows / batch // those the hook sees: not the last
		var stops [][]int
		for n := 1; n <= batches; n++ {
			stops = append(stops, []int{n})
		}
		stops = append(stops, []int{1, 1}, []int{2, batches - 2})
		for _, stop := range stops {
			dir := filepath.Join(t.TempDir(), "store")
			copyDir(t, pristine, dir)
			copied := 0
			for _, after := range stop {
				stopMigration(t, dir, after)
				copied += after * batch
				db := rawDB(t, dir)
				if v := schemaVersionOf(t, db); v != 8 {
					t.Errorf("batches of %d, stopped after %v: version %d, want 8", batch, stop, v)
				}
				var n int
				if err := db.QueryRow(`SELECT COUNT(*) FROM artifacts_rows`).Scan(&n); err != nil || n != copied {
					t.Errorf("batches of %d, stopped after %v: %d rows copied, want %d (%v)", batch, stop, n, copied, err)
				}
				db.Close()
			}
			openCurrent(t, dir).Close()
			if got := artifactRows(t, dir); !reflect.DeepEqual(got, want) {
				t.Errorf("batches of %d, stopped after %v and resumed: %d rows, not those of a migration never stopped (%d)", batch, stop, len(got), len(want))
			}
		}
	}
}

// stopMigration opens the store in dir and stops its migration after
// its batch number after, as a kill would.
func stopMigration(t *testing.T, dir string, after int) {
	t.Helper()
	stop := errors.New("killed")
	batchHook = func(n int) error {
		if n == after {
			return stop
		}
		return nil
	}
	defer func() { batchHook = nil }()
	if _, err := Open(dir); !errors.Is(err, stop) {
		t.Fatalf("migration to stop after batch %d: %v", after, err)
	}
}

// twin is a hash of 64 hex digits that begins with the same 12 as sha and
// differs from it in every other digit.
func twin(sha string) string {
	b := []byte(sha)
	for i := shaPrefix; i < len(b); i++ {
		b[i] = "1032547698badcfe"[strings.IndexByte("0123456789abcdef", b[i])]
	}
	return string(b)
}

// The index by the hash's first digits finds the row of the whole hash
// and run: a run stores an artifact whose first 12 digits are those of
// one it has (indexed before it, so the first row the index gives), and
// an artifact another run has; reading it gives its own bytes. Every
// artifact is then indexed once.
func TestArtifactShaPrefix(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "store")
	s := openCurrent(t, dir)
	createRun(t, s, "r1", base)
	createRun(t, s, "r2", base)
	se := testSession("s1", 1)
	var shas []string
	for sha := range se.Artifacts {
		shas = append(shas, sha)
		for _, row := range [][2]string{{"r1", twin(sha)}, {"r2", sha}} {
			if _, err := s.db.ExecContext(ctx, `INSERT INTO artifacts (`+artifactCols+`) VALUES ($1, $2, $3, 0, 1, '')`, row[0], row[1], packName); err != nil {
				t.Fatal(err)
			}
		}
	}
	mustWrite(t, s, "r1", se)
	for _, sha := range shas {
		body, err := s.Artifact(ctx, "r1", sha)
		if err != nil || ArtifactID(body) != sha {
			t.Errorf("artifact %s of r1 beside %s and one of r2: %q, %v", sha, twin(sha), body, err)
		}
	}
	if _, err := s.db.ExecContext(ctx, `DELETE FROM artifacts WHERE run_id = 'r2' OR sha256 NOT IN (`+placeholders(1, len(shas))+`)`, anys(shas)...); err != nil {
		t.Fatal(err)
	}
	if err := s.VerifyArtifacts(ctx, "r1"); err != nil {
		t.Error(err)
	}
	// Written again by another process (which asks the index, having
	// stored none of them itself), the artifacts are not indexed again.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openCurrent(t, dir)
	mustWrite(t, s, "r1", withArtifacts("s2", "s1", 1, []byte("new")))
	var rows, distinct int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*), COUNT(DISTINCT sha256) FROM artifacts WHERE run_id = 'r1'`).Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	if rows != len(shas)+1 || distinct != rows {
		t.Errorf("r1 indexes %d artifacts, %d of them distinct, want %d", rows, distinct, len(shas)+1)
	}
}

// anys is strings as arguments of a statement.
func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
