package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
)

// IsURL reports whether a store location is a database URL (postgres:// or
// postgresql://, in any letter case) rather than a directory.
func IsURL(loc string) bool {
	s, ok := scheme(loc)
	return ok && (s == "postgres" || s == "postgresql")
}

// scheme is the lower-cased scheme of a location written as a URL
// ("name://..."), ok false for one that is not.
func scheme(loc string) (string, bool) {
	i := strings.Index(loc, "://")
	if i <= 0 {
		return "", false
	}
	for k, r := range loc[:i] {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || k > 0 && (r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.')) {
			return "", false
		}
	}
	return strings.ToLower(loc[:i]), true
}

// canonicalURL writes the scheme of a database URL in lower case, as the
// driver expects it.
func canonicalURL(loc string) string {
	s, _ := scheme(loc)
	return s + loc[strings.Index(loc, "://"):]
}

// OpenLocation opens the store at loc: a PostgreSQL database for a
// postgres:// URL (OpenURL, with the default cache directory), otherwise
// the SQLite store in the directory loc, created when existing is false
// (Open) and refused when it is true and there is none (OpenExisting).
func OpenLocation(ctx context.Context, loc string, existing bool) (*Store, error) {
	if s, ok := scheme(loc); ok && !IsURL(loc) {
		// Not a directory either: a directory named "http://..." is a
		// mistake, and its name may carry a password.
		return nil, redactErr(fmt.Errorf("store: %s is a %s:// URL: a store is a directory or a postgres:// URL", Redact(loc), s), loc)
	}
	switch {
	case IsURL(loc) && !existing:
		return OpenURL(ctx, loc, "")
	case IsURL(loc):
		st, err := openURL(ctx, canonicalURL(loc), Redact(loc), "", true, false)
		return st, redactErr(err, loc)
	case existing:
		return OpenExisting(loc)
	}
	return Open(loc)
}

// OpenURL opens (creating its tables if needed) the store in the PostgreSQL
// database at a postgres:// URL. Everything a run stores is kept in the
// database; cacheDir is this machine's cache of the store (Store.Dir), ""
// for one under the user's cache directory. No error or message of the
// store shows the URL's password.
func OpenURL(ctx context.Context, rawURL, cacheDir string) (*Store, error) {
	where := Redact(rawURL)
	st, err := openURL(ctx, canonicalURL(rawURL), where, cacheDir, false, false)
	return st, redactErr(err, rawURL)
}

// openURL is OpenURL; existing refuses, with ErrNoStore, a database that
// holds no budge store yet instead of creating its tables (a command that
// only reads); reading refuses, with ErrNeedsMigration, one at an older
// schema version instead of migrating it.
func openURL(ctx context.Context, rawURL, where, cacheDir string, existing, reading bool) (*Store, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("store: %s is not a database URL", where)
	}
	if cacheDir == "" {
		if cacheDir, err = defaultCacheDir(u); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(filepath.Join(cacheDir, "runs"), 0o700); err != nil {
		return nil, fmt.Errorf("store: cache for %s: %w", where, err)
	}
	pdb, err := sql.Open("pgx", rawURL)
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", where, err)
	}
	pdb.SetMaxOpenConns(16)
	pdb.SetMaxIdleConns(4)
	db := &database{DB: pdb, d: postgresDialect}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: connecting to %s: %w", where, err)
	}
	if existing {
		var has bool
		if err := db.QueryRowContext(ctx, `SELECT to_regclass('budge_schema') IS NOT NULL`).Scan(&has); err != nil {
			db.Close()
			return nil, fmt.Errorf("store: %s: %w", where, err)
		}
		if !has {
			db.Close()
			return nil, fmt.Errorf("store: %w in the database %s (it has no budge tables): check --store or $BUDGE_STORE; a run there creates them", ErrNoStore, where)
		}
	}
	if reading {
		var v int
		if err := db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM budge_schema`).Scan(&v); err != nil {
			db.Close()
			return nil, fmt.Errorf("store: %s: %w", where, err)
		}
		if err := needsMigration(where, "--store", v); err != nil {
			db.Close()
			return nil, err
		}
		return newStore(cacheDir, where, db, false), nil
	}
	if err := migrate(ctx, db, where); err != nil {
		db.Close()
		return nil, err
	}
	return newStore(cacheDir, where, db, false), nil
}

// defaultCacheDir is this machine's cache of the database at u: one
// directory per server and database (never named by its password), under
// the user's cache directory, or the temporary directory when there is
// none.
func defaultCacheDir(u *url.URL) (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		// No $HOME (a CI job, a service): the cache is only a cache.
		base = filepath.Join(os.TempDir(), fmt.Sprintf("budge-cache-%d", os.Getuid()))
	}
	key := u.Host + u.Path
	if u.User != nil {
		key = u.User.Username() + "@" + key
	}
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(base, "budge", "postgres-"+hex.EncodeToString(sum[:8])), nil
}

// Redact returns a store location fit to print: a URL's password is
// replaced by "xxxxx"; a directory is returned as it is.
func Redact(loc string) string {
	if _, ok := scheme(loc); !ok {
		return loc
	}
	u, err := url.Parse(loc)
	if err != nil {
		// Not parsed, so not known to be safe: show only the scheme.
		return strings.SplitN(loc, "://", 2)[0] + "://(unparsable URL)"
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// passwords are the spellings of a location's password that an error text
// may hold.
func passwords(loc string) []string {
	var pw []string
	if i := strings.Index(loc, "://"); i >= 0 {
		rest := loc[i+3:]
		if at := strings.LastIndex(strings.SplitN(rest, "/", 2)[0], "@"); at >= 0 {
			if _, p, ok := strings.Cut(rest[:at], ":"); ok && p != "" {
				pw = append(pw, p)
			}
		}
	}
	if u, err := url.Parse(loc); err == nil {
		if p, ok := u.User.Password(); ok && p != "" {
			pw = append(pw, p, url.QueryEscape(p), url.PathEscape(p))
		}
		if p := u.Query().Get("password"); p != "" {
			pw = append(pw, p, url.QueryEscape(p))
		}
	}
	return pw
}

// redactedError is an error whose text had a password taken out.
type redactedError struct {
	text string
	err  error
}

func (e *redactedError) Error() string { return e.text }

// Unwrap keeps errors.Is and errors.As working; the wrapped error's own
// text is never printed by budge, only this one.
func (e *redactedError) Unwrap() error { return e.err }

// redactErr takes the password of loc out of err's text.
func redactErr(err error, loc string) error {
	if err == nil {
		return nil
	}
	text := err.Error()
	for _, p := range passwords(loc) {
		text = strings.ReplaceAll(text, p, "xxxxx")
	}
	if text == err.Error() {
		return err
	}
	return &redactedError{text: text, err: err}
}

// RedactError takes the password of a store location out of an error's
// text, for callers that print errors that may quote the location.
func RedactError(err error, loc string) error { return redactErr(err, loc) }

// LocalDir is the directory on this machine of the store at loc: the
// directory itself for a SQLite store, the default cache directory for a
// PostgreSQL one (what OpenURL uses when given none).
func LocalDir(loc string) (string, error) {
	if !IsURL(loc) {
		return loc, nil
	}
	u, err := url.Parse(loc)
	if err != nil {
		return "", fmt.Errorf("store: %s is not a database URL", Redact(loc))
	}
	return defaultCacheDir(u)
}

// refreshStats has PostgreSQL sample the tables a run has just filled, so
// that the planner knows their size: autovacuum looks at them about once a
// minute, and until then a table loaded since is planned as the size it had
// before. A worker listing a 12,480-session run's unstored attempts with the
// statistics of an empty table looked up every attempt's session by
// scanning the sessions (11 s instead of 20 ms). It does nothing on SQLite,
// and asks only: a role that may not analyze a table gets a warning from the
// server, not an error, and a failure costs only time.
func (s *Store) refreshStats(ctx context.Context, tables ...string) {
	if s.db.d.postgres() {
		_, _ = s.db.ExecContext(ctx, "ANALYZE "+strings.Join(tables, ", "))
	}
}
