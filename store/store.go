// Package store keeps runs: a database of runs, sessions, attempts and
// messages; content-addressed artifacts (the exact requests and responses,
// and each session's full trace); a JSONL log per run; and the run
// manifest.
//
// It has two backends behind one API. The embedded default is a directory
// (Open): a SQLite database, with each run's artifacts appended to a pack
// file indexed by sha256 in the database, its log.jsonl and manifest.json
// beside it, everything owner-only. A PostgreSQL database (OpenURL) holds
// everything in tables, artifacts and logs included, so that every machine
// that reaches it sees the same runs. Where a backend keeps artifact bytes
// and run logs is chosen once, when it is opened (artifactStore,
// logStore); the SQL is written once, and what the databases spell
// differently (the schema, a JSON field) the dialect says (dialect.go).
//
// It must never import a provider: a finished run is re-scored and
// re-reported from what is stored here alone.
package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/buildlab/budge/chat"
	_ "modernc.org/sqlite"
)

// Store is a directory of runs with its database, or a PostgreSQL database.
type Store struct {
	// Dir is the store's directory. For a PostgreSQL store it is a local
	// cache directory on this machine (a run's journal of answers, the
	// response cache): nothing another machine needs is kept there.
	Dir string
	// where names the store for messages: Dir, or the PostgreSQL URL
	// without its password.
	where string
	db    *database
	arts  artifactStore // where artifacts' bytes are kept
	logs  logStore      // where run logs are kept

	stmtMu sync.Mutex
	stmts  map[string]*sql.Stmt // prepared bulk inserts

	ckpt checkpointer

	// Now is the clock of run leases; nil is time.Now. Tests set it.
	Now func() time.Time
	// LeaseTimeout is how old a lease's heartbeat may get before another
	// process takes the lease over; zero is DefaultLeaseTimeout.
	LeaseTimeout time.Duration
	// LeaseRenew is how often a held lease's heartbeat is renewed in the
	// background; zero is DefaultLeaseRenew, and a negative value renews
	// only when the holder calls Lease.Renew.
	LeaseRenew time.Duration

	// readOnly: opened by readOnlyDir; tmpDir is its private database's
	// directory, removed by Close.
	readOnly bool
	tmpDir   string
}

// dbName is the database file in a store directory.
const dbName = "budge.db"

// ErrNoStore is returned by OpenExisting for a directory without a store.
var ErrNoStore error = &inputError{"no budge store"}

// ErrEmptyDatabase is returned by Open when the database file is empty or
// missing while runs sit beside it.
var ErrEmptyDatabase = errors.New("the database is empty but runs are on disk")

// Open opens (creating if needed) the store in dir. The directory and
// everything budge writes in it are owner-only.
//
// Open refuses a database file that is empty (0 bytes) or missing while the
// runs directory holds runs: starting a new database there would hide them.
func Open(dir string) (*Store, error) {
	return open(dir, writerCacheKB)
}

// OpenExisting opens the store in dir like Open, but refuses, creating
// nothing, when dir holds no store (no budge.db): commands that only read
// runs use it, so that a mistyped --dir is an error rather than a new,
// empty store.
func OpenExisting(dir string) (*Store, error) {
	if err := existingDB(dir, filepath.Join(dir, dbName)); err != nil {
		return nil, err
	}
	return open(dir, readerCacheKB)
}

// existingDB refuses, with ErrNoStore, a directory without a database.
func existingDB(dir, path string) error {
	if _, err := os.Stat(path); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("store: %w", err)
		}
		why := "it has no " + dbName
		if _, derr := os.Stat(dir); errors.Is(derr, fs.ErrNotExist) {
			why = "the directory does not exist"
		}
		return fmt.Errorf("store: %w in %s (%s): check --dir or $BUDGE_DIR; "+
			"budge runs --dir DIR lists the runs of the store in DIR", ErrNoStore, dir, why)
	}
	return nil
}

// The page cache of each SQLite connection, in KB. The embedded SQLite's
// allocator rounds each cached 4 KB page (with its header) up to an 8 KB
// slot, so a cache costs twice its size. A run holds several connections:
// at 8 MB a million-session run's peak RSS passed 150 MB, and 2 MB took
// 22 MB off a 41,600-session run at the same CPU time. A command that only
// reads an existing store (report, export, view) reads a run's sessions in
// plan order, which the run stored in its shuffled schedule order, so each
// batch looks up rows all over the tables: once a run outgrows the cache's
// interior B-tree pages, every lookup reads them again from the file. On a
// 999,440-session run, 8 MB took report from 172 s to 155 s (system time
// 43 s to 28 s) for 9 MB more peak RSS (bench/scale.sh). The viewer
// holds three connections at once while it scores a run (reading the run,
// writing its index at a writer's size, serving pages): each reading one
// has half a reader's cache, so that together they hold about what a
// report's one connection does (at a reader's size, a million-session
// run's report page peaked over 150 MB).
const (
	writerCacheKB = 2048
	readerCacheKB = 8192
	viewerCacheKB = readerCacheKB / 2
)

func open(dir string, cacheKB int) (*Store, error) {
	if err := os.MkdirAll(filepath.Join(dir, "runs"), 0o700); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	path := filepath.Join(dir, dbName)
	if err := checkNotEmptied(dir, path); err != nil {
		return nil, err
	}
	if f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600); err == nil {
		f.Close()
	} else {
		return nil, fmt.Errorf("store: %w", err)
	}
	sdb, err := sql.Open("sqlite", "file:"+uriPath(path)+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(ON)&_pragma=cache_size("+strconv.Itoa(-cacheKB)+")&_pragma=wal_autocheckpoint("+strconv.Itoa(autoCheckpointPages)+")")
	if err != nil {
		return nil, fmt.Errorf("store: %s: %w", path, err)
	}
	db := &database{DB: sdb, path: path, d: sqliteDialect}
	if err := migrateRetrying(context.Background(), db, path); err != nil {
		db.Close()
		if c := corrupt(path, err); c != nil {
			return nil, c
		}
		return nil, err
	}
	return newStore(dir, dir, db, true), nil
}

// newStore is a store on db whose artifacts and logs are kept in files
// (a SQLite store) or in the database (files false, PostgreSQL).
func newStore(dir, where string, db *database, files bool) *Store {
	s := &Store{Dir: dir, where: where, db: db, stmts: map[string]*sql.Stmt{}}
	if files {
		s.arts, s.logs = &packFiles{s: s, packs: map[string]*pack{}, known: map[string]*recentSet{}}, fileLogs{s}
	} else {
		s.arts, s.logs = blobTable{s}, dbLogs{s}
	}
	return s
}

// migrateRetrying is migrate, tried again while SQLite reports the new
// database busy: a connection switching a database that another process is
// creating to WAL gets SQLITE_BUSY at once, without waiting out the busy
// timeout.
func migrateRetrying(ctx context.Context, db *database, path string) error {
	for try := 0; ; try++ {
		err := migrate(ctx, db, path)
		if err == nil || !isBusy(err) || try == 50 {
			return err
		}
		time.Sleep(time.Duration(try+1) * 5 * time.Millisecond)
	}
}

// checkNotEmptied refuses a database file that is empty or missing while
// the store's runs directory holds run directories: the file was truncated
// or removed, and creating a new database would silently orphan the runs.
// A database whose content is still in its write-ahead log is not empty.
func checkNotEmptied(dir, path string) error {
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.Size() > 0:
		return nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("store: %w", err)
	}
	if wal, err := os.Stat(path + "-wal"); err == nil && wal.Size() > 0 {
		return nil
	}
	entries, err := os.ReadDir(filepath.Join(dir, "runs"))
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	var runs []string
	for _, e := range entries {
		if e.IsDir() {
			runs = append(runs, e.Name())
		}
	}
	if len(runs) == 0 {
		return nil
	}
	state := "is empty (0 bytes)"
	if fi == nil {
		state = "is missing"
	}
	shown := runs
	if len(shown) > 3 {
		shown = append(shown[:3:3], "...")
	}
	return fmt.Errorf("store: %s %s but %s holds %d runs (%s): %w; the database was truncated or removed, "+
		"and a new one would hide those runs. Restore %s from a backup, or move %s aside to start a new store",
		path, state, filepath.Join(dir, "runs"), len(runs), strings.Join(shown, ", "), ErrEmptyDatabase, dbName, filepath.Join(dir, "runs"))
}

// Close closes open pack files and the database.
func (s *Store) Close() error {
	s.stopCheckpoints()
	var errs []error
	errs = append(errs, s.arts.close())
	for _, st := range s.stmts {
		errs = append(errs, st.Close())
	}
	errs = append(errs, s.db.Close())
	if s.tmpDir != "" {
		errs = append(errs, os.RemoveAll(s.tmpDir))
	}
	return errors.Join(errs...)
}

// Run is one row of the runs table.
type Run struct {
	ID       string          `json:"id"`
	Protocol string          `json:"protocol"`
	Created  time.Time       `json:"created"`
	Finished *time.Time      `json:"finished,omitempty"`
	Status   string          `json:"status"`
	DeckName string          `json:"deck_name"`
	DeckHash string          `json:"deck_hash"`
	Model    string          `json:"model"`
	Seed     string          `json:"seed"`
	Planned  int             `json:"sessions_planned"`
	Manifest json.RawMessage `json:"manifest"`
}

// Run statuses.
const (
	RunRunning     = "running"
	RunComplete    = "complete"
	RunIncomplete  = "incomplete"  // finished with failed or missing cells
	RunInterrupted = "interrupted" // stopped before every session ran
)

// RunDir is where a run's log, manifest and artifacts live; for a
// PostgreSQL store, where this machine keeps the run's local cache.
func (s *Store) RunDir(id string) string { return filepath.Join(s.Dir, "runs", id) }

// CreateRun records a new run and its deck snapshot and creates its directory.
func (s *Store) CreateRun(ctx context.Context, r Run, deckSource string, deck []byte) error {
	return s.createRun(ctx, r, deckSource, deck, nil)
}

// createRun stores a run's row and snapshot and, when with is set, what
// with adds in the same transaction.
func (s *Store) createRun(ctx context.Context, r Run, deckSource string, deck []byte, with func(tx *txn) error) error {
	if err := os.MkdirAll(s.RunDir(r.ID), 0o700); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.fail(err)
	}
	defer tx.Rollback()
	if err := s.insertRun(ctx, tx, r, deckSource, deck); err != nil {
		return err
	}
	if with != nil {
		if err := with(tx); err != nil {
			return err
		}
	}
	return s.fail(tx.Commit())
}

// insertRun inserts a run's row and its deck snapshot.
func (s *Store) insertRun(ctx context.Context, tx execQuerier, r Run, deckSource string, deck []byte) error {
	if err := saveDeck(ctx, tx, r.DeckHash, r.DeckName, deckSource, deck); err != nil {
		return s.named(err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO runs (id, protocol, created, status, deck_name, deck_hash, model, seed, sessions_planned, manifest)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, r.ID, r.Protocol, ts(r.Created), r.Status,
		r.DeckName, r.DeckHash, r.Model, r.Seed, r.Planned, string(r.Manifest)); err != nil {
		return s.named(fmt.Errorf("store: creating run %s: %w", r.ID, err))
	}
	return nil
}

// saveDeck keeps a deck snapshot once by its hash.
func saveDeck(ctx context.Context, tx execQuerier, hash, name, source string, content []byte) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO decks (hash, name, source, content) VALUES ($1, $2, $3, $4) ON CONFLICT (hash) DO NOTHING`,
		hash, name, source, string(content)); err != nil {
		return fmt.Errorf("store: saving deck: %w", err)
	}
	return nil
}

// FinishRun sets a run's final status and manifest, and writes the manifest
// file beside its log (a PostgreSQL store keeps it in the database only).
func (s *Store) FinishRun(ctx context.Context, id, status string, manifest json.RawMessage) error {
	if err := s.setRun(ctx, "finishing", id, status, ts(time.Now()), manifest); err != nil {
		return err
	}
	return s.logs.manifest(id, manifest)
}

// ReopenRun marks a run as running again, for a resumed run, and stores its
// manifest as it stands (with the resumption recorded, so that a resume
// killed in turn is on record too).
func (s *Store) ReopenRun(ctx context.Context, id string, manifest json.RawMessage) error {
	return s.setRun(ctx, "reopening", id, RunRunning, nil, manifest)
}

// setRun updates a run's status, finish time (nil for none) and manifest.
func (s *Store) setRun(ctx context.Context, doing, id, status string, finished any, manifest json.RawMessage) error {
	if _, err := s.db.ExecContext(ctx, `UPDATE runs SET status = $1, finished = $2, manifest = $3 WHERE id = $4`, status, finished, string(manifest), id); err != nil {
		return s.named(fmt.Errorf("store: %s run %s: %w", doing, id, err))
	}
	return nil
}

// ErrNoRun is returned when a run id matches nothing.
var ErrNoRun error = &inputError{"no such run"}

// Resolve turns "latest", a full id or a unique prefix into a run id.
func (s *Store) Resolve(ctx context.Context, ref string) (string, error) {
	latest := ref == "" || ref == "latest"
	q, args := `SELECT id FROM runs ORDER BY created DESC, id DESC LIMIT 1`, []any(nil)
	if !latest {
		q, args = `SELECT id FROM runs WHERE id = $1 OR id LIKE $2 ESCAPE '\' ORDER BY id LIMIT 3`, []any{ref, escapeLike(ref) + "%"}
	}
	found, err := queryAll(ctx, s.db, scanString, q, args...)
	if err != nil {
		return "", err
	}
	var ids []string
	for _, id := range found {
		if id == ref {
			return id, nil
		}
		if latest || strings.HasPrefix(id, ref) { // LIKE ignores case; prefixes do not
			ids = append(ids, id)
		}
	}
	switch len(ids) {
	case 0:
		if latest {
			return "", fmt.Errorf("%w: the store in %s has no runs yet (start one with: budge run)", ErrNoRun, s.where)
		}
		return "", fmt.Errorf("%w %q in %s (list runs with: budge runs)", ErrNoRun, ref, s.where)
	case 1:
		return ids[0], nil
	}
	return "", fmt.Errorf("run id %q is ambiguous: %s, ...", ref, strings.Join(ids, ", "))
}

func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`).Replace(s)
}

// GetRun loads one run.
func (s *Store) GetRun(ctx context.Context, id string) (Run, error) {
	r, ok, err := queryOne(ctx, s.db, scanRun, `SELECT `+runCols+` FROM runs WHERE id = $1`, id)
	if err == nil && !ok {
		err = fmt.Errorf("%w %q", ErrNoRun, id)
	}
	return r, err
}

// ListRuns returns runs, newest first.
func (s *Store) ListRuns(ctx context.Context) ([]Run, error) {
	return s.runs(ctx, `ORDER BY created DESC, id DESC`)
}

// RunsOnDeck lists the runs made with a deck hash, oldest first, with their
// manifests.
func (s *Store) RunsOnDeck(ctx context.Context, hash string) ([]Run, error) {
	return s.runs(ctx, `WHERE deck_hash = $1 ORDER BY created, id`, hash)
}

// runs lists the runs a WHERE and ORDER BY clause select.
func (s *Store) runs(ctx context.Context, clause string, args ...any) ([]Run, error) {
	return queryAll(ctx, s.db, scanRun, `SELECT `+runCols+` FROM runs `+clause, args...)
}

// Deck returns the deck snapshot a run was made with.
func (s *Store) Deck(ctx context.Context, hash string) (source string, content []byte, err error) {
	d, ok, err := queryOne(ctx, s.db, scanDeck, `SELECT `+deckCols+` FROM decks WHERE hash = $1`, hash)
	if err == nil && !ok {
		err = fmt.Errorf("store: deck %s is not in the store", hash)
	}
	return d.source, d.content, err
}

// Session is everything stored about one session.
type Session struct {
	ID          string          `json:"session_id"`
	Seq         int             `json:"seq"`
	SchedulePos int             `json:"schedule_pos"`
	Spec        json.RawMessage `json:"spec"`
	Status      string          `json:"status"` // complete | failed | interrupted
	Started     time.Time       `json:"started"`
	Finished    time.Time       `json:"finished"`
	Stop        string          `json:"stop_reason,omitempty"`
	FailedPhase string          `json:"failed_phase,omitempty"`
	FailureKind string          `json:"failure_kind,omitempty"`
	FailureMsg  string          `json:"failure_message,omitempty"`
	Attempts    []Attempt       `json:"attempts"`
	Messages    []chat.Entry    `json:"messages"`
	TraceSHA    string          `json:"trace_sha256"`
	// Artifacts are written with the session, in the same transaction.
	Artifacts    map[string]Blob `json:"-"`
	InputTokens  int             `json:"input_tokens"`
	OutputTokens int             `json:"output_tokens"`
	// Incarnation is the incarnation the session ran as (1 for a first
	// run); a worker stores it only while it holds the session's cell as
	// that incarnation. Not stored: each attempt carries its own.
	Incarnation int `json:"-"`
}

// Session statuses.
const (
	SessionComplete    = "complete"
	SessionFailed      = "failed"
	SessionInterrupted = "interrupted"
)

// Attempt is one call to a provider: an observation, kept whether it failed or not.
type Attempt struct {
	// Incarnation counts how often the session was started: an interrupted
	// session keeps its attempts, and its rerun gets the next incarnation.
	Incarnation  int       `json:"incarnation"`
	Call         int       `json:"call"`    // model call within the session, from 1
	Attempt      int       `json:"attempt"` // attempt at that call, from 1
	Phase        string    `json:"phase"`
	Started      time.Time `json:"started"`
	DurationMS   float64   `json:"duration_ms"`
	Outcome      string    `json:"outcome"` // ok | error
	ErrorKind    string    `json:"error_kind,omitempty"`
	ErrorMsg     string    `json:"error_message,omitempty"`
	HTTPStatus   int       `json:"http_status,omitempty"`
	RequestSHA   string    `json:"request_sha256"`
	ResponseSHA  string    `json:"response_sha256,omitempty"`
	InputTokens  int       `json:"input_tokens"`
	OutputTokens int       `json:"output_tokens"`
	ModelID      string    `json:"model_id,omitempty"`
	Fingerprint  string    `json:"fingerprint,omitempty"`
	RequestID    string    `json:"request_id,omitempty"`
	FinishReason string    `json:"finish_reason,omitempty"`
}

// uriPath is a file path as the path of a SQLite URI filename: %, ? and #
// escaped, so that a directory named "runs #2" or "out?x" holds the store
// rather than cutting the name short (SQLite would then create the
// database elsewhere).
func uriPath(path string) string {
	return strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23").Replace(path)
}
