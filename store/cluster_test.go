package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// SQLite only: these tests build a version 7 store by hand.

// version7Store makes a store at schema version 7 in a new directory,
// holding what writeVersion7 writes, in the tables of version 7.
func version7Store(t *testing.T, sessions int) (dir string, runs []string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "store")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	runs = writeVersion7(t, s, sessions)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, dir)
	exec(t, db, append(version7Tables(sqliteDialect), "PRAGMA user_version = 7")...)
	db.Close()
	return dir, runs
}

// writeVersion7 writes two runs of sessions (complete, failed), attempts
// of interrupted sessions that have cells, and of one that has none (a
// run made before runs had cells). Written with this budge, its attempts
// and messages are then moved into the version 7 tables
// (version7Tables), which is what a store written by the budge before
// version 8 holds.
func writeVersion7(t *testing.T, s *Store, sessions int) (runs []string) {
	t.Helper()
	ctx := context.Background()
	runs = []string{"r1", "r2"}
	for k, run := range runs {
		createRun(t, s, run, base)
		var cells []PlannedCell
		var ss []Session
		for i := range sessions {
			se := testSession(fmt.Sprintf("s%03d", i), i)
			switch {
			case i%5 == 1:
				se = failedSession(se.ID, i)
			case i%5 == 2:
				se = interruptedSession(se.ID, i)
			}
			// Schedule positions in another order than plan positions.
			se.SchedulePos = (i*7 + k) % sessions
			if se.Status == SessionInterrupted {
				cells = append(cells, PlannedCell{ID: se.ID, Seq: i, Pos: se.SchedulePos})
			}
			ss = append(ss, se)
		}
		if err := s.AddCells(ctx, run, slices.Values(cells)); err != nil {
			t.Fatal(err)
		}
		mustWrite(t, s, run, ss...)
	}
	// An interrupted session whose run has no cell for it.
	lone := interruptedSession("lone", 999)
	lone.SchedulePos = 999
	mustWrite(t, s, "r1", lone)
	return runs
}

// checkVersion7 checks that a store writeVersion7 wrote and that was then
// migrated reads back every session, attempt and message it held,
// orphaned attempts included, and that a resumed session finds its
// earlier attempts that had no position.
func checkVersion7(t *testing.T, s *Store, runs []string, sessions int) {
	t.Helper()
	ctx := context.Background()
	for _, run := range runs {
		got, err := s.Sessions(ctx, run)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != sessions*4/5 {
			t.Fatalf("run %s: %d sessions, want %d", run, len(got), sessions*4/5)
		}
		for _, se := range got {
			want := testSession(se.ID, se.Seq)
			if se.Seq%5 == 1 {
				want = failedSession(se.ID, se.Seq)
			}
			want.SchedulePos = se.SchedulePos
			sameSession(t, se, want)
			one, err := s.Session(ctx, run, se.ID)
			if err != nil {
				t.Fatal(err)
			}
			sameSession(t, one, want)
		}
		orphans, err := s.Orphans(ctx, run)
		if err != nil {
			t.Fatal(err)
		}
		wantOrphans := sessions / 5
		if run == "r1" {
			wantOrphans++
		}
		if len(orphans) != wantOrphans {
			t.Errorf("run %s: orphaned attempts of %d sessions, want %d", run, len(orphans), wantOrphans)
		}
	}
	// Each attempt of an interrupted session is at its cell's position;
	// the one without a cell at -1, until its next incarnation is stored.
	var pos int
	if err := s.db.QueryRowContext(ctx, `SELECT schedule_pos FROM attempts WHERE run_id = 'r1' AND session_id = 's002' LIMIT 1`).Scan(&pos); err != nil || pos != 14 {
		t.Errorf("s002's attempts at %d (%v), want its cell's 14", pos, err)
	}
	if err := s.db.QueryRowContext(ctx, `SELECT schedule_pos FROM attempts WHERE run_id = 'r1' AND session_id = 'lone' LIMIT 1`).Scan(&pos); err != nil || pos != unplaced {
		t.Errorf("lone's attempts at %d (%v), want %d", pos, err, unplaced)
	}
	resumed := testSession("lone", 999)
	resumed.SchedulePos = 999
	resumed.Incarnation = 2
	for i := range resumed.Attempts {
		resumed.Attempts[i].Incarnation = 2
	}
	mustWrite(t, s, "r1", resumed)
	one, err := s.Session(ctx, "r1", "lone")
	if err != nil {
		t.Fatal(err)
	}
	if len(one.Attempts) != 5 || one.Attempts[0].Incarnation != 1 || one.Attempts[4].Incarnation != 2 {
		t.Errorf("the resumed session read back with attempts %+v, want its 2 earlier ones and 3 new", one.Attempts)
	}
}

// version7Tables are the statements that put a store's attempts and
// messages back into the tables of the "tables" section, which schema
// versions 1 to 7 have, and its artifact index too (version8Tables).
func version7Tables(d dialect) []string {
	return append(version8Tables(d), oldTables(d, "attempts", "messages")...)
}

// version8Tables are the statements that put a SQLite store's artifact
// index back into the table of the "tables" section, which schema versions
// 1 to 8 have, with the index by pack position of version 7 (PostgreSQL's
// is as it was).
func version8Tables(d dialect) []string {
	if d.postgres() {
		return nil
	}
	return append(oldTables(d, "artifacts"), d.statements("pack_index")...)
}

// oldTables are the statements that copy tables into their definitions
// in the "tables" section.
func oldTables(d dialect, tables ...string) []string {
	var stmts []string
	for _, table := range tables {
		ddl := d.ddl("tables")
		create := ddl[strings.Index(ddl, "CREATE TABLE IF NOT EXISTS "+table+" "):]
		create = create[:strings.Index(create, ";")]
		cols := map[string]string{"attempts": attemptCols, "messages": messageCols, "artifacts": artifactCols}[table]
		stmts = append(stmts,
			"ALTER TABLE "+table+" RENAME TO "+table+"_new",
			create,
			"INSERT INTO "+table+" ("+cols+") SELECT "+cols+" FROM "+table+"_new",
			"DROP TABLE "+table+"_new")
	}
	return stmts
}

// dump is every row of the tables a migration copies, in key order.
func dump(t *testing.T, dir string) map[string][]string {
	t.Helper()
	db := rawDB(t, dir)
	defer db.Close()
	out := map[string][]string{}
	for table, cols := range map[string]string{"attempts": "schedule_pos, " + attemptCols, "messages": "schedule_pos, " + messageCols, "sessions": sessionCols} {
		rows, err := db.Query(`SELECT ` + cols + ` FROM ` + table + ` ORDER BY run_id, session_id, 1, 2, 3, 4, 5, 6`)
		if err != nil {
			t.Fatal(err)
		}
		n := len(strings.Split(cols, ","))
		for rows.Next() {
			vals := make([]any, n)
			ptrs := make([]any, n)
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			out[table] = append(out[table], fmt.Sprint(vals...))
		}
		rows.Close()
	}
	return out
}

// A version 7 store is migrated to keyed attempts and messages, and reads
// back every session, attempt and message it held, orphaned attempts
// included.
func TestMigrateVersion7(t *testing.T) {
	dir, runs := version7Store(t, 40)
	ctx := context.Background()
	// What the version 7 store holds, read as the budge before read it.
	old := rawDB(t, dir)
	counts := func(q querier) (n [2]int) {
		for i, table := range []string{"attempts", "messages"} {
			if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+table).Scan(&n[i]); err != nil {
				t.Fatal(err)
			}
		}
		return n
	}
	before := counts(old)
	old.Close()

	s := openCurrent(t, dir)
	if after := counts(s.db); after != before {
		t.Errorf("attempts and messages after the migration %v, before %v", after, before)
	}
	checkVersion7(t, s, runs, 40)
	// The migration's own tables are gone.
	for _, table := range []string{"attempts_clustered", "messages_clustered", "migration_progress"} {
		var n int
		if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE name = $1`, table).Scan(&n); err != nil || n != 0 {
			t.Errorf("table %s is left after the migration (%v)", table, err)
		}
	}
}

// A migration stopped after some batches (killed) leaves the store at
// version 7 with its progress recorded; opening the store again finishes
// it, with the same rows as a migration never stopped.
func TestMigrateVersion7Resumes(t *testing.T) {
	defer func(n int) { clusterBatch = n }(clusterBatch)
	clusterBatch = 7
	dir, _ := version7Store(t, 40)
	whole := filepath.Join(t.TempDir(), "whole")
	copyDir(t, dir, whole)

	stop := errors.New("killed")
	for _, after := range []int{1, 4} {
		batchHook = func(n int) error {
			if n == after {
				return stop
			}
			return nil
		}
		_, err := Open(dir)
		batchHook = nil
		if !errors.Is(err, stop) {
			t.Fatalf("stopped migration: %v", err)
		}
		db := rawDB(t, dir)
		if v := schemaVersionOf(t, db); v != 7 {
			t.Errorf("a stopped migration left version %d", v)
		}
		var copied int
		if err := db.QueryRow(`SELECT sessions FROM migration_progress`).Scan(&copied); err != nil || copied == 0 {
			t.Errorf("progress of the stopped migration: %d sessions (%v)", copied, err)
		}
		db.Close()
	}
	s := openCurrent(t, dir)
	s.Close()
	w := openCurrent(t, whole)
	w.Close()
	got, want := dump(t, dir), dump(t, whole)
	if len(want["attempts"]) == 0 || len(want["messages"]) == 0 {
		t.Fatal("nothing was migrated")
	}
	if !reflect.DeepEqual(got, want) {
		for table := range want {
			if !reflect.DeepEqual(got[table], want[table]) {
				t.Errorf("table %s after a stopped and resumed migration: %d rows, after one migration %d", table, len(got[table]), len(want[table]))
			}
		}
	}
}

// copyDir copies a store directory (its database and run files).
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if fi.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}
