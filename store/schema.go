package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// SchemaVersion is the version of the tables this budge reads and writes.
// A database records the version it was written with (SQLite's
// user_version); Open migrates an older database up to this version and
// refuses a newer one. Every change to the tables below adds a migration
// and raises the version.
const SchemaVersion = 7

// ErrNewerSchema is returned by Open for a database written by a newer
// budge than this one.
var ErrNewerSchema = errors.New("written by a newer budge")

// ErrUnknownSchema is returned by Open for a database without a schema
// version whose tables are not budge's.
var ErrUnknownSchema = errors.New("not a budge store")

// schema is version 1 of the tables (version 2 adds leaseSchema): runs with their deck snapshots,
// sessions, attempts, messages and the artifact index; deck freezes; and
// the explanation review of a run (a frozen sample, two reviewers' codes,
// each reviewer's "finished" mark and the adjudication of disagreements).
const schema = `
CREATE TABLE IF NOT EXISTS runs (
  id TEXT PRIMARY KEY,
  protocol TEXT NOT NULL,
  created TEXT NOT NULL,
  finished TEXT,
  status TEXT NOT NULL,
  deck_name TEXT NOT NULL,
  deck_hash TEXT NOT NULL,
  model TEXT NOT NULL,
  seed TEXT NOT NULL,
  sessions_planned INTEGER NOT NULL,
  manifest TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS decks (
  hash TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  source TEXT NOT NULL,
  content TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS sessions (
  run_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  schedule_pos INTEGER NOT NULL,
  spec TEXT NOT NULL,
  status TEXT NOT NULL,
  started TEXT NOT NULL,
  finished TEXT NOT NULL,
  stop_reason TEXT NOT NULL,
  failed_phase TEXT NOT NULL,
  failure_kind TEXT NOT NULL,
  failure_message TEXT NOT NULL,
  attempts INTEGER NOT NULL,
  failed_attempts INTEGER NOT NULL,
  input_tokens INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  trace_sha256 TEXT NOT NULL,
  PRIMARY KEY (run_id, session_id)
);
CREATE TABLE IF NOT EXISTS attempts (
  run_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  incarnation INTEGER NOT NULL,
  call INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  phase TEXT NOT NULL,
  started TEXT NOT NULL,
  duration_ms REAL NOT NULL,
  outcome TEXT NOT NULL,
  error_kind TEXT NOT NULL,
  error_message TEXT NOT NULL,
  http_status INTEGER NOT NULL,
  request_sha256 TEXT NOT NULL,
  response_sha256 TEXT NOT NULL,
  input_tokens INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  model_id TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  request_id TEXT NOT NULL,
  finish_reason TEXT NOT NULL,
  PRIMARY KEY (run_id, session_id, incarnation, call, attempt)
);
CREATE TABLE IF NOT EXISTS artifacts (
  run_id TEXT NOT NULL,
  sha256 TEXT NOT NULL,
  pack TEXT NOT NULL,
  pack_offset INTEGER NOT NULL,
  length INTEGER NOT NULL,
  encoding TEXT NOT NULL,
  PRIMARY KEY (run_id, sha256)
);
CREATE TABLE IF NOT EXISTS messages (
  run_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  phase TEXT NOT NULL,
  role TEXT NOT NULL,
  content TEXT NOT NULL,
  tool_calls TEXT NOT NULL,
  tool_call_id TEXT NOT NULL,
  name TEXT NOT NULL,
  refusal TEXT NOT NULL,
  PRIMARY KEY (run_id, session_id, seq)
);

CREATE TABLE IF NOT EXISTS deck_freezes (
  hash TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  kind TEXT NOT NULL,
  source TEXT NOT NULL,
  frozen_at TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS reviews (
  run_id TEXT PRIMARY KEY,
  reviewer_a TEXT NOT NULL,
  reviewer_b TEXT NOT NULL,
  seed TEXT NOT NULL,
  success_sample INTEGER NOT NULL,
  frozen TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS review_items (
  run_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  pos INTEGER NOT NULL,
  why TEXT NOT NULL,
  failure_type TEXT NOT NULL,
  PRIMARY KEY (run_id, session_id)
);
CREATE TABLE IF NOT EXISTS review_codes (
  run_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  reviewer TEXT NOT NULL,
  code TEXT NOT NULL,
  note TEXT NOT NULL,
  updated TEXT NOT NULL,
  PRIMARY KEY (run_id, session_id, reviewer)
);
CREATE TABLE IF NOT EXISTS review_finished (
  run_id TEXT NOT NULL,
  reviewer TEXT NOT NULL,
  finished TEXT NOT NULL,
  PRIMARY KEY (run_id, reviewer)
);
CREATE TABLE IF NOT EXISTS review_adjudications (
  run_id TEXT NOT NULL,
  session_id TEXT NOT NULL,
  code TEXT NOT NULL,
  note TEXT NOT NULL,
  updated TEXT NOT NULL,
  PRIMARY KEY (run_id, session_id)
);

`

// postgresSchema is what a PostgreSQL store holds in version 1 besides
// schema: every machine reads the same database and no files, so artifact
// bytes (content-addressed, shared by runs) and run logs are tables there,
// where SQLite stores keep pack files and log.jsonl beside the database.
const postgresSchema = `
CREATE TABLE IF NOT EXISTS artifact_blobs (
  sha256 TEXT PRIMARY KEY,
  encoding TEXT NOT NULL,
  data BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS run_logs (
  run_id TEXT NOT NULL,
  chunk INTEGER NOT NULL,
  lines TEXT NOT NULL,
  PRIMARY KEY (run_id, chunk)
);
`

// leaseSchema is what version 2 adds: the lease on a run, held by the one
// process that may run it (see AcquireLease).
const leaseSchema = `
CREATE TABLE IF NOT EXISTS run_leases (
  run_id TEXT PRIMARY KEY,
  token TEXT NOT NULL,
  holder TEXT NOT NULL,
  host TEXT NOT NULL,
  pid INTEGER NOT NULL,
  acquired TEXT NOT NULL,
  heartbeat TEXT NOT NULL
);
`

// reviewTokenSchema is what version 3 adds: each reviewer's access token
// to their own review pages, stored only as its sha256 (see
// SetReviewerToken).
const reviewTokenSchema = `
CREATE TABLE IF NOT EXISTS review_tokens (
  run_id TEXT NOT NULL,
  reviewer TEXT NOT NULL,
  token_sha256 TEXT NOT NULL,
  issued TEXT NOT NULL,
  PRIMARY KEY (run_id, reviewer)
);
`

// migrations[v] brings a database of version v to version v+1, inside the
// transaction that records the new version.
var migrations = [SchemaVersion]func(ctx context.Context, c *conn) error{
	0: adoptVersion1,
	1: addLeases,
	2: addReviewTokens,
	3: addSeqIndex,
	4: addCells,
	5: addBatches,
	6: addPackIndex,
}

// packIndex is what version 7 adds on SQLite: a run's artifacts in the
// order its pack holds them, which verifying a run reads them in. Without
// it SQLite sorted every artifact of the run first (millions in a
// million-session run). A PostgreSQL store keeps artifacts in the
// database, not in packs.
const packIndex = `CREATE INDEX IF NOT EXISTS artifacts_by_pack ON artifacts (run_id, pack, pack_offset)`

// addPackIndex creates the index of artifacts by pack position (version 7).
func addPackIndex(ctx context.Context, c *conn) error {
	if c.d.postgres() {
		return nil
	}
	if _, err := c.ExecContext(ctx, packIndex); err != nil {
		return fmt.Errorf("creating the artifact index: %w", err)
	}
	return nil
}

// seqIndex is what version 4 adds: sessions by plan position, which
// scoring reads a batch at a time (Store.EachSessions).
const seqIndex = `CREATE INDEX IF NOT EXISTS sessions_by_seq ON sessions (run_id, seq)`

// addSeqIndex creates the index of sessions by plan position (version 4).
func addSeqIndex(ctx context.Context, c *conn) error {
	if _, err := c.ExecContext(ctx, seqIndex); err != nil {
		return fmt.Errorf("creating the session index: %w", err)
	}
	return nil
}

// addLeases creates the run lease table (version 2).
func addLeases(ctx context.Context, c *conn) error {
	if _, err := c.ExecContext(ctx, c.d.ddl(leaseSchema)); err != nil {
		return fmt.Errorf("creating the lease table: %w", err)
	}
	return nil
}

// addReviewTokens creates the reviewer token table (version 3).
func addReviewTokens(ctx context.Context, c *conn) error {
	if _, err := c.ExecContext(ctx, c.d.ddl(reviewTokenSchema)); err != nil {
		return fmt.Errorf("creating the reviewer token table: %w", err)
	}
	return nil
}

// migrate brings the database at path (a SQLite file, or where a
// PostgreSQL database is) to SchemaVersion, or says why it cannot.
func migrate(ctx context.Context, db *database, path string) error {
	if !db.d.postgres() {
		v, err := userVersion(ctx, db)
		if err != nil {
			return fmt.Errorf("store: reading the schema version of %s: %w", path, err)
		}
		if v == SchemaVersion {
			return nil
		}
		if err := tooNew(path, v); err != nil {
			return err
		}
	}
	// One writer migrates; another Open waits for it, then finds the
	// database at the version it was brought to.
	c, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer c.Close()
	if err := c.beginWrite(ctx); err != nil {
		return fmt.Errorf("store: migrating %s: %w", path, err)
	}
	if err := migrateLocked(ctx, c, path); err != nil {
		c.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		return err
	}
	if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("store: migrating %s: %w", path, err)
	}
	return nil
}

func migrateLocked(ctx context.Context, c *conn, path string) error {
	v, err := userVersion(ctx, c)
	if err != nil {
		return fmt.Errorf("store: reading the schema version of %s: %w", path, err)
	}
	if err := tooNew(path, v); err != nil {
		return err
	}
	if v == SchemaVersion {
		return nil
	}
	for ; v < SchemaVersion; v++ {
		if err := migrations[v](ctx, c); err != nil {
			return fmt.Errorf("store: migrating %s from schema version %d: %w", path, v, err)
		}
	}
	if err := setVersion(ctx, c, SchemaVersion); err != nil {
		return fmt.Errorf("store: recording the schema version of %s: %w", path, err)
	}
	return nil
}

func tooNew(path string, v int) error {
	if v <= SchemaVersion {
		return nil
	}
	return fmt.Errorf("store: %s has schema version %d and this budge reads up to version %d: it was %w; "+
		"upgrade budge to open it, or use %s", path, v, SchemaVersion, ErrNewerSchema, another(path))
}

// another says how to choose another store than the one at path.
func another(path string) string {
	if IsURL(path) {
		return "another database (--store or $BUDGE_STORE)"
	}
	return "another store directory (--dir or $BUDGE_DIR)"
}

// versionTable keeps a PostgreSQL database's schema version, which SQLite
// keeps in its header (user_version): one row, none in a new database.
const versionTable = `CREATE TABLE IF NOT EXISTS budge_schema (version INTEGER NOT NULL)`

// userVersion reads the schema version: SQLite's user_version, or on
// PostgreSQL (inside the migration's transaction) the budge_schema row.
func userVersion(ctx context.Context, q querier) (int, error) {
	var v int
	c, ok := q.(*conn)
	if !ok || !c.d.postgres() {
		err := q.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
		return v, err
	}
	if _, err := c.ExecContext(ctx, versionTable); err != nil {
		return 0, err
	}
	err := c.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM budge_schema`).Scan(&v)
	return v, err
}

// setVersion records the schema version.
func setVersion(ctx context.Context, c *conn, v int) error {
	if !c.d.postgres() {
		_, err := c.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v))
		return err
	}
	if _, err := c.ExecContext(ctx, `DELETE FROM budge_schema`); err != nil {
		return err
	}
	_, err := c.ExecContext(ctx, `INSERT INTO budge_schema (version) VALUES (?)`, v)
	return err
}

// adoptVersion1 creates the tables in a new database. A database without a
// schema version written before budge recorded one holds version 1 tables
// (or some of them): it is adopted as version 1 when every table it has
// matches, column for column.
func adoptVersion1(ctx context.Context, c *conn) error {
	if c.d.postgres() {
		// A PostgreSQL store has had a schema version from its first day:
		// tables of budge's names without one are somebody else's, which
		// CREATE TABLE IF NOT EXISTS would silently write into.
		want, err := schemaColumns(ctx, schema+postgresSchema)
		if err != nil {
			return err
		}
		have, err := queryAll(ctx, c, scanString, `SELECT table_name FROM information_schema.tables
			WHERE table_schema = current_schema() ORDER BY table_name`)
		if err != nil {
			return err
		}
		for _, t := range have {
			if _, ours := want[t]; ours {
				return fmt.Errorf("%w: the database has a table %s but no budge schema version: it belongs to something else; "+
					"use another database or schema (--store or $BUDGE_STORE)", ErrUnknownSchema, t)
			}
		}
		if _, err := c.ExecContext(ctx, c.d.ddl(schema+postgresSchema)); err != nil {
			return fmt.Errorf("creating tables: %w", err)
		}
		return nil
	}
	have, err := queryAll(ctx, c, scanString, `SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
	if err != nil {
		return err
	}
	if len(have) > 0 {
		want, err := schemaColumns(ctx, schema)
		if err != nil {
			return err
		}
		for _, t := range have {
			w, ok := want[t]
			if !ok {
				continue
			}
			got, err := tableColumns(ctx, c, t)
			if err != nil {
				return err
			}
			if !slices.Equal(got, w) {
				return fmt.Errorf("%w: it has no schema version and its table %s has columns (%s), not budge's (%s); "+
					"use another store directory (--dir or $BUDGE_DIR)", ErrUnknownSchema, t, strings.Join(got, ", "), strings.Join(w, ", "))
			}
		}
	}
	if _, err := c.ExecContext(ctx, schema); err != nil {
		return fmt.Errorf("creating tables: %w", err)
	}
	return nil
}

// schemaColumns creates the tables of a schema in a database in memory and
// returns their columns by table.
func schemaColumns(ctx context.Context, ddl string) (map[string][]string, error) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // every connection to :memory: is another database
	if _, err := db.ExecContext(ctx, ddl); err != nil {
		return nil, err
	}
	tables, err := queryAll(ctx, db, scanString, `SELECT name FROM sqlite_master WHERE type = 'table'`)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, t := range tables {
		if out[t], err = tableColumns(ctx, db, t); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// tableColumns describes a table's columns in order: name, type, NOT NULL
// and place in the primary key.
func tableColumns(ctx context.Context, q querier, table string) ([]string, error) {
	return queryAll(ctx, q, scanString, `SELECT name || ' ' || type || CASE "notnull" WHEN 1 THEN ' NOT NULL' ELSE '' END ||
		CASE WHEN pk > 0 THEN ' KEY ' || pk ELSE '' END FROM pragma_table_info(?) ORDER BY cid`, table)
}
