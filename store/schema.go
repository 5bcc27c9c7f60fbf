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
const SchemaVersion = 10

// ErrNewerSchema is returned by Open for a database written by a newer
// budge than this one.
var ErrNewerSchema = errors.New("written by a newer budge")

// ErrUnknownSchema is returned by Open for a database without a schema
// version whose tables are not budge's.
var ErrUnknownSchema = errors.New("not a budge store")

// migrations[v] brings a database of version v to version v+1, inside the
// transaction that records the new version.
var migrations = [SchemaVersion]func(ctx context.Context, c *conn) error{
	0: adoptVersion1,
	1: create("leases", "the lease table"),
	2: create("review_tokens", "the reviewer token table"),
	3: create("seq_index", "the session index"),
	4: create("cells", "the worker tables"),
	5: create("batches", "the batch table"),
	6: create("pack_index", "the artifact index"),
	7: nil, // clusterAttempts: in batches, each its own transaction
	8: nil, // clusterArtifacts: likewise
	9: artifactGenerations,
}

// batched[v] brings a database of version v to version v+1 a batch at a
// time, each batch in its own transaction, and records the new version in
// the last one: a migration that copies every row of a table, which on a
// large store is too much for one transaction. Stopped halfway, it goes on
// from its last batch the next time the store is opened.
var batched = map[int]batchedMigration{
	7: clusterAttempts,
	8: clusterArtifacts,
}

// batchedMigration is a migration done a batch at a time: what it does
// (for an error) and its step, which copies one batch on a connection in
// a transaction (see batch) and says whether it was the last, which also
// puts the new tables in place of the old ones.
type batchedMigration struct {
	what string
	step func(ctx context.Context, c *conn) (last bool, err error)
}

// batchHook, when set (by tests), is called after each batch of a batched
// migration is committed, with the number of batches committed so far; an
// error stops the migration there, as a kill would.
var batchHook func(batches int) error

// run does the migration from version v, a batch after another.
func (m batchedMigration) run(ctx context.Context, db *database, path string, v int) error {
	for n := 1; ; n++ {
		done, err := m.batch(ctx, db, v)
		if err != nil {
			return fmt.Errorf("store: migrating %s from schema version %d (%s): %w", path, v, m.what, err)
		}
		if done {
			return nil
		}
		if batchHook != nil {
			if err := batchHook(n); err != nil {
				return err
			}
		}
	}
}

// batch does one step of the migration from version v in one write
// transaction, which records version v+1 after the last step; done when
// that was the last, or when another process finished the migration
// meanwhile (the database is no longer at version v).
func (m batchedMigration) batch(ctx context.Context, db *database, v int) (done bool, err error) {
	c, err := db.Conn(ctx)
	if err != nil {
		return false, err
	}
	defer c.Close()
	if err := c.beginWrite(ctx); err != nil {
		return false, err
	}
	committed := false
	defer func() {
		if !committed {
			c.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	if at, err := userVersion(ctx, c); err != nil || at != v {
		return true, err
	}
	last, err := m.step(ctx, c)
	if err != nil {
		return false, err
	}
	if last {
		if err := setVersion(ctx, c, v+1); err != nil {
			return false, err
		}
	}
	if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
		return false, err
	}
	committed = true
	return last, nil
}

// createTables creates the tables of version 1: those of both databases,
// and on PostgreSQL those that hold what a SQLite store keeps in files.
func createTables(ctx context.Context, c *conn) error {
	if err := create("tables", "tables")(ctx, c); err != nil {
		return err
	}
	return create("shared", "tables")(ctx, c)
}

// artifactGenerations gives the artifact index its generations (schema
// sections artifact_gen_column and artifact_gen): the column, unless the
// table has it already, then the index.
func artifactGenerations(ctx context.Context, c *conn) error {
	var has int
	if !c.d.postgres() { // where both sections are empty
		if err := c.QueryRowContext(ctx, `SELECT COUNT(*) FROM pragma_table_info('artifacts') WHERE name = 'gen'`).Scan(&has); err != nil {
			return fmt.Errorf("reading the artifact table's columns: %w", err)
		}
	}
	if has == 0 {
		if err := create("artifact_gen_column", "the artifact generations")(ctx, c); err != nil {
			return err
		}
	}
	return create("artifact_gen", "the artifact index by generation")(ctx, c)
}

// create returns the migration that creates a section of the dialect's
// schema file (what is doing, for an error).
func create(section, what string) func(ctx context.Context, c *conn) error {
	return func(ctx context.Context, c *conn) error {
		if err := execDDL(ctx, c, c.d, section); err != nil {
			return fmt.Errorf("creating %s: %w", what, err)
		}
		return nil
	}
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
	for {
		v, err := migrateTransaction(ctx, db, path)
		if err != nil || v == SchemaVersion {
			return err
		}
		if err := batched[v].run(ctx, db, path, v); err != nil {
			return err
		}
	}
}

// migrateTransaction brings the database up to SchemaVersion, or up to
// the first batched migration, in one transaction, and returns the version
// it is at.
func migrateTransaction(ctx context.Context, db *database, path string) (int, error) {
	// One writer migrates; another Open waits for it, then finds the
	// database at the version it was brought to.
	c, err := db.Conn(ctx)
	if err != nil {
		return 0, fmt.Errorf("store: %w", err)
	}
	defer c.Close()
	if err := c.beginWrite(ctx); err != nil {
		return 0, fmt.Errorf("store: migrating %s: %w", path, err)
	}
	v, err := migrateLocked(ctx, c, path)
	if err != nil {
		c.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		return 0, err
	}
	if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
		return 0, fmt.Errorf("store: migrating %s: %w", path, err)
	}
	return v, nil
}

func migrateLocked(ctx context.Context, c *conn, path string) (int, error) {
	v, err := userVersion(ctx, c)
	if err != nil {
		return 0, fmt.Errorf("store: reading the schema version of %s: %w", path, err)
	}
	if err := tooNew(path, v); err != nil {
		return 0, err
	}
	from := v
	for ; v < SchemaVersion && batched[v].step == nil; v++ {
		if err := migrations[v](ctx, c); err != nil {
			return 0, fmt.Errorf("store: migrating %s from schema version %d: %w", path, v, err)
		}
	}
	if v == from {
		return v, nil
	}
	if err := setVersion(ctx, c, v); err != nil {
		return 0, fmt.Errorf("store: recording the schema version of %s: %w", path, err)
	}
	return v, nil
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
	_, err := c.ExecContext(ctx, `INSERT INTO budge_schema (version) VALUES ($1)`, v)
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
		want, err := schemaColumns(ctx, c.d.ddl("tables")+c.d.ddl("shared"))
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
		return createTables(ctx, c)
	}
	have, err := queryAll(ctx, c, scanString, `SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`)
	if err != nil {
		return err
	}
	if len(have) > 0 {
		want, err := schemaColumns(ctx, c.d.ddl("tables"))
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
	return createTables(ctx, c)
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
		CASE WHEN pk > 0 THEN ' KEY ' || pk ELSE '' END FROM pragma_table_info($1) ORDER BY cid`, table)
}
