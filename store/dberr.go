package store

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// CorruptError is a database file SQLite cannot read: a malformed page
// (SQLITE_CORRUPT) or a file that is not a database at all (SQLITE_NOTADB).
type CorruptError struct {
	Path string // the database file
	Err  error  // SQLite's error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("store: the database %s is damaged (%v): restore it from a backup, or move it aside and use another store "+
		"directory (--dir or $BUDGE_DIR); each run's log.jsonl, manifest.json and artifacts.pack are kept under runs/ beside it", e.Path, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// ErrCorrupt is matched by every *CorruptError (errors.Is).
var ErrCorrupt = errors.New("damaged database")

func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// isCorrupt reports whether err is SQLite saying the file is damaged or not
// a database.
func isCorrupt(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff { // the primary code of an extended one
	case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
		return true
	}
	return false
}

// corrupt turns an error of the database at path into a *CorruptError
// when SQLite says the file is damaged, and returns nil otherwise.
func corrupt(path string, err error) error {
	var ce *CorruptError
	if err == nil || errors.As(err, &ce) || !isCorrupt(err) {
		return nil
	}
	return &CorruptError{Path: path, Err: err}
}

// fail marks a database error as the store's, naming the database file when
// SQLite says it is damaged.
func (s *Store) fail(err error) error { return failAt(s.db.path, err) }

// named returns err, or a *CorruptError naming the database file when
// SQLite says it is damaged.
func (s *Store) named(err error) error {
	if c := corrupt(s.db.path, err); c != nil {
		return c
	}
	return err
}

// failAt is fail for the database at path ("" when unknown).
func failAt(path string, err error) error {
	if err == nil {
		return nil
	}
	if path != "" {
		if c := corrupt(path, err); c != nil {
			return c
		}
	}
	return wrap(err)
}

// failQ is fail for a querier: the database names its file, a transaction
// does not.
func failQ(q querier, err error) error {
	path := ""
	if d, ok := q.(interface{ dbPath() string }); ok {
		path = d.dbPath()
	}
	return failAt(path, err)
}

// isConstraint reports whether err is the database refusing a row for a
// constraint (a primary key already taken): SQLite's SQLITE_CONSTRAINT or
// PostgreSQL's unique_violation.
func isConstraint(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code()&0xff == sqlite3.SQLITE_CONSTRAINT
	}
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// isBusy reports whether err is SQLite finding the database locked.
func isBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}

// isConflict reports whether PostgreSQL gave up a transaction that met
// another (a deadlock it broke, or a serialization failure): the same
// transaction may simply be tried again.
func isConflict(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}
