package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"modernc.org/sqlite"
)

// ErrNeedsMigration is returned by OpenReader for a store whose database
// is at an older schema version: reading commands do not change a store.
var ErrNeedsMigration = errors.New("the store needs a migration")

// MigrateCommand is the command that brings a store's database to this
// budge's schema version and writes nothing else (any command that writes
// to a store migrates it first).
const MigrateCommand = "budge migrate"

// readOnlyDir opens the existing store in dir for reading only, with
// cacheKB of page cache a connection: nothing in it is written or migrated
// (SQLite may add the shared-memory files of its write-ahead log beside
// the database when the directory is writable, as any reader does), so a
// store on a read-only filesystem, a read-only copy or a store another
// user owns can be listed, reported, exported and viewed. It refuses, like
// OpenExisting, a directory without a store, and a database at an older
// schema version (with ErrNeedsMigration, naming the command that migrates
// it).
//
// The store's database is attached read-only to a private database in a
// temporary directory, which holds what a reader writes (the viewer's
// index) and is removed by Close. Tables are found by name in the private
// database first, then in the store's.
func readOnlyDir(dir string, cacheKB int) (*Store, error) {
	path := filepath.Join(dir, dbName)
	if err := existingDB(dir, path); err != nil {
		return nil, err
	}
	if err := checkNotEmptied(dir, path); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "budge-read-")
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	st, err := openReadOnly(dir, path, tmp, !writable(dir, path), cacheKB)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	st.tmpDir = tmp
	return st, nil
}

// writable reports whether this process may write the store's directory
// and database. When it may not, no other process of this user writes
// them either, and SQLite may read the database as immutable: without the
// shared-memory file a write-ahead log needs, which it could not create.
func writable(dir, path string) bool {
	const wOK = 2 // W_OK
	return syscall.Access(dir, wOK) == nil && syscall.Access(path, wOK) == nil
}

func openReadOnly(dir, path, tmp string, immutable bool, cacheKB int) (*Store, error) {
	mode := "mode=ro"
	if immutable {
		mode = "immutable=1"
	}
	attach := "file:" + uriPath(path) + "?" + mode
	own := "file:" + uriPath(filepath.Join(tmp, "read.db")) + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(OFF)&_pragma=cache_size(" + strconv.Itoa(-cacheKB) + ")"
	base, err := sqlite.NewConnector(own)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", path, err)
	}
	sdb := sql.OpenDB(attaching{base, attach, cacheKB})
	db := &database{DB: sdb, path: path, d: sqliteDialect}
	ctx := context.Background()
	var v int
	if err := db.QueryRowContext(ctx, "PRAGMA store.user_version").Scan(&v); err != nil {
		db.Close()
		if c := corrupt(path, err); c != nil {
			return nil, c
		}
		return nil, fmt.Errorf("store: reading %s: %w", path, err)
	}
	if err := needsMigration(path, "--dir "+dir, v); err != nil {
		db.Close()
		return nil, err
	}
	// The viewer's index, in the private database: found before any
	// index the store holds.
	if err := execDDL(ctx, db, sqliteDialect, "view"); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: viewer index tables: %w", err)
	}
	st := newStore(dir, dir, db, true)
	st.readOnly = true
	return st, nil
}

// needsMigration refuses a schema version other than this budge's: a
// newer one (tooNew), or an older one a reader does not migrate; flag
// names the store for the migrating command.
func needsMigration(where, flag string, v int) error {
	if err := tooNew(where, v); err != nil {
		return err
	}
	if v < SchemaVersion {
		return fmt.Errorf("store: %s has schema version %d and this budge uses version %d: %w, and commands that only read "+
			"(runs, report, export, show, view) do not change a store; migrate it with %s %s (any command that writes to "+
			"the store migrates it first), or read it with the budge that wrote it",
			where, v, SchemaVersion, ErrNeedsMigration, MigrateCommand, flag)
	}
	return nil
}

// attaching opens connections to the private database with the store's
// database attached, read-only, as "store".
type attaching struct {
	driver.Connector
	store   string
	cacheKB int
}

func (a attaching) Connect(ctx context.Context) (driver.Conn, error) {
	c, err := a.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	ex, ok := c.(driver.ExecerContext)
	if !ok {
		c.Close()
		return nil, errors.New("store: the SQLite driver cannot attach a database")
	}
	for _, q := range []string{"ATTACH DATABASE '" + sqlQuote(a.store) + "' AS store", "PRAGMA store.cache_size = " + strconv.Itoa(-a.cacheKB)} {
		if _, err := ex.ExecContext(ctx, q, nil); err != nil {
			c.Close()
			return nil, fmt.Errorf("store: attaching %s read-only: %w", a.store, err)
		}
	}
	return c, nil
}

func sqlQuote(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' {
			out = append(out, '\'')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// OpenReader opens the existing store at loc for a command that reads it:
// read-only (readOnlyDir) for a directory, never migrated. With writes
// (the viewer, which records reviews), a store this process may write is
// opened for writing too, once its schema version is known to be current;
// a store it may not write stays read-only (ReadOnly tells); either way
// with a viewer's page cache (viewerCacheKB). A PostgreSQL
// store is opened as it is (its connection may write), never migrated: one
// at an older schema version is refused likewise.
func OpenReader(ctx context.Context, loc string, writes bool) (*Store, error) {
	if _, ok := scheme(loc); ok && !IsURL(loc) {
		return OpenLocation(ctx, loc, true) // refused, its password redacted
	} else if ok {
		st, err := openURL(ctx, canonicalURL(loc), Redact(loc), "", true, true)
		return st, redactErr(err, loc)
	}
	cacheKB := readerCacheKB
	if writes {
		cacheKB = viewerCacheKB
	}
	st, err := readOnlyDir(loc, cacheKB)
	if err != nil || !writes || !writable(loc, filepath.Join(loc, dbName)) {
		return st, err
	}
	st.Close()
	return open(loc, cacheKB) // exists: readOnlyDir found it
}

// ReadOnly reports whether the store was opened for reading only.
func (s *Store) ReadOnly() bool { return s.readOnly }
