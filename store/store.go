// Package store keeps runs on disk: a SQLite database of runs, sessions,
// attempts and messages; content-addressed artifacts (the exact requests and
// responses, and each session's full trace) appended to a pack file per run
// and indexed by sha256 in the database; a JSONL log per run; and the run
// manifest. Everything is owner-only.
//
// It must never import a provider: a finished run is re-scored and
// re-reported from what is stored here alone. The SQL is kept portable so
// that a shared server database can later hold the same tables.
package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/buildlab/budge/chat"
	_ "modernc.org/sqlite"
)

// Store is a directory of runs with its database.
type Store struct {
	Dir   string
	db    *sql.DB
	packs map[string]*pack // open pack files by run id (only the writer uses them)

	stmtMu sync.Mutex
	stmts  map[string]*sql.Stmt // prepared bulk inserts
}

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
`

// Open opens (creating if needed) the store in dir. The directory and
// everything budge writes in it are owner-only.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(filepath.Join(dir, "runs"), 0o700); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	path := filepath.Join(dir, "budge.db")
	if f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600); err == nil {
		f.Close()
	} else {
		return nil, fmt.Errorf("store: %w", err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(ON)&_pragma=cache_size(-65536)")
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if _, err := db.Exec(schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: creating tables in %s: %w", path, err)
	}
	return &Store{Dir: dir, db: db, packs: map[string]*pack{}, stmts: map[string]*sql.Stmt{}}, nil
}

// Close closes open pack files and the database.
func (s *Store) Close() error {
	var errs []error
	for _, p := range s.packs {
		errs = append(errs, p.f.Close())
	}
	s.packs = map[string]*pack{}
	for _, st := range s.stmts {
		errs = append(errs, st.Close())
	}
	errs = append(errs, s.db.Close())
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

// RunDir is where a run's log, manifest and artifacts live.
func (s *Store) RunDir(id string) string { return filepath.Join(s.Dir, "runs", id) }

// CreateRun records a new run and its deck snapshot and creates its directory.
func (s *Store) CreateRun(ctx context.Context, r Run, deckSource string, deck []byte) error {
	if err := os.MkdirAll(s.RunDir(r.ID), 0o700); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO decks (hash, name, source, content) VALUES (?, ?, ?, ?) ON CONFLICT (hash) DO NOTHING`,
		r.DeckHash, r.DeckName, deckSource, string(deck)); err != nil {
		return fmt.Errorf("store: saving deck: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO runs (id, protocol, created, status, deck_name, deck_hash, model, seed, sessions_planned, manifest)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, r.ID, r.Protocol, ts(r.Created), r.Status,
		r.DeckName, r.DeckHash, r.Model, r.Seed, r.Planned, string(r.Manifest)); err != nil {
		return fmt.Errorf("store: creating run %s: %w", r.ID, err)
	}
	return tx.Commit()
}

// FinishRun sets a run's final status and manifest, and writes the manifest
// file beside its log.
func (s *Store) FinishRun(ctx context.Context, id, status string, manifest json.RawMessage) error {
	now := ts(time.Now())
	if _, err := s.db.ExecContext(ctx, `UPDATE runs SET status = ?, finished = ?, manifest = ? WHERE id = ?`, status, now, string(manifest), id); err != nil {
		return fmt.Errorf("store: finishing run %s: %w", id, err)
	}
	return WriteFileAtomic(filepath.Join(s.RunDir(id), "manifest.json"), append(manifest, '\n'))
}

// ErrNoRun is returned when a run id matches nothing.
var ErrNoRun = errors.New("no such run")

// Resolve turns "latest", a full id or a unique prefix into a run id.
func (s *Store) Resolve(ctx context.Context, ref string) (string, error) {
	var rows *sql.Rows
	var err error
	latest := ref == "" || ref == "latest"
	if latest {
		rows, err = s.db.QueryContext(ctx, `SELECT id FROM runs ORDER BY created DESC, id DESC LIMIT 1`)
	} else {
		rows, err = s.db.QueryContext(ctx, `SELECT id FROM runs WHERE id = ? OR id LIKE ? ESCAPE '\' ORDER BY id LIMIT 3`, ref, escapeLike(ref)+"%")
	}
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return "", err
		}
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
			return "", fmt.Errorf("%w: the store in %s has no runs yet (start one with: budge run)", ErrNoRun, s.Dir)
		}
		return "", fmt.Errorf("%w %q in %s (list runs with: budge runs)", ErrNoRun, ref, s.Dir)
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
	var r Run
	var created string
	var finished sql.NullString
	var manifest string
	err := s.db.QueryRowContext(ctx, `SELECT id, protocol, created, finished, status, deck_name, deck_hash, model, seed, sessions_planned, manifest
		FROM runs WHERE id = ?`, id).Scan(&r.ID, &r.Protocol, &created, &finished, &r.Status, &r.DeckName, &r.DeckHash, &r.Model, &r.Seed, &r.Planned, &manifest)
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("%w %q", ErrNoRun, id)
	}
	if err != nil {
		return r, err
	}
	r.Created, _ = time.Parse(time.RFC3339Nano, created)
	if finished.Valid {
		t, _ := time.Parse(time.RFC3339Nano, finished.String)
		r.Finished = &t
	}
	r.Manifest = json.RawMessage(manifest)
	return r, nil
}

// ListRuns returns runs, newest first.
func (s *Store) ListRuns(ctx context.Context) ([]Run, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id FROM runs ORDER BY created DESC, id DESC`)
	if err != nil {
		return nil, err
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	var runs []Run
	for _, id := range ids {
		r, err := s.GetRun(ctx, id)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// Deck returns the deck snapshot a run was made with.
func (s *Store) Deck(ctx context.Context, hash string) (source string, content []byte, err error) {
	var c string
	err = s.db.QueryRowContext(ctx, `SELECT source, content FROM decks WHERE hash = ?`, hash).Scan(&source, &c)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil, fmt.Errorf("store: deck %s is not in the store", hash)
	}
	return source, []byte(c), err
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
