package store

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// The run log, log.jsonl in a run's directory (on PostgreSQL, the run's
// rows of run_logs: see WriteLog), is the append-only JSONL companion of
// the database, never its source. For every stored session it
// holds one record per attempt, then the session's record: a group written
// whole after the session is stored. Its format (LogLines, ParseLogLine),
// its file (OpenLog, AppendLog) and its repair after a crash (RepairLog)
// are all here.

// Log record types.
const (
	LogAttempt = "attempt"
	LogSession = "session"
)

// LogRecord is one line of a run log read back: an attempt record (with
// its Attempt) or a session record (with Status, Trace, Failure and Stop).
type LogRecord struct {
	Type      string `json:"type"`
	RunID     string `json:"run_id"`
	SessionID string `json:"session_id"`
	Status    string `json:"status,omitempty"`
	Trace     string `json:"trace_sha256,omitempty"`
	Failure   string `json:"failure_kind,omitempty"`
	Stop      string `json:"stop_reason,omitempty"`
	Attempt
}

// ParseLogLine decodes one line of a run log.
func ParseLogLine(line []byte) (LogRecord, error) {
	var rec LogRecord
	if err := json.Unmarshal(line, &rec); err != nil {
		return LogRecord{}, fmt.Errorf("store: log record: %w", err)
	}
	return rec, nil
}

// logHead starts every record.
type logHead struct {
	Type    string `json:"type"`
	Run     string `json:"run_id"`
	Session string `json:"session_id"`
}

type attemptRecord struct {
	logHead
	Attempt
}

type sessionRecord struct {
	logHead
	Status  string `json:"status"`
	Trace   string `json:"trace_sha256"`
	Failure string `json:"failure_kind,omitempty"`
	Stop    string `json:"stop_reason,omitempty"`
}

// LogLines encodes the log records of a stored session: its attempts, then
// the session, one JSON object a line.
func LogLines(runID string, se Session) []byte {
	var b []byte
	for _, a := range se.Attempts {
		b = appendRecord(b, attemptRecord{logHead{LogAttempt, runID, se.ID}, a})
	}
	return appendRecord(b, sessionRecord{logHead{LogSession, runID, se.ID}, se.Status, se.TraceSHA, se.FailureKind, se.Stop})
}

func appendRecord(b []byte, rec any) []byte {
	// Only a time outside years 0 to 9999 fails to encode, and runs record
	// the clock's times.
	line, _ := json.Marshal(rec)
	return append(append(b, line...), '\n')
}

// Log appends JSON lines to a run's log. Each record is written whole.
type Log struct {
	f io.WriteCloser // log.jsonl, or the run's rows of run_logs
	w *bufio.Writer
}

// OpenLog opens the run's log for appending.
func (s *Store) OpenLog(runID string) (*Log, error) {
	f, err := s.logs.open(runID)
	if err != nil {
		return nil, err
	}
	return &Log{f: f, w: bufio.NewWriterSize(f, 1<<16)}, nil
}

// logStore keeps run logs and manifests. A store has one, chosen when it
// is opened: log.jsonl and manifest.json in each run's directory
// (fileLogs, SQLite), or the run_logs table, the manifest being in the
// runs table already (dbLogs, PostgreSQL).
type logStore interface {
	// open opens a run's log for appending.
	open(runID string) (io.WriteCloser, error)
	// repair is RepairLog.
	repair(ctx context.Context, runID string) (*Logged, error)
	// copyTo writes a run's log, as stored, to w.
	copyTo(ctx context.Context, runID string, w io.Writer) error
	// inTx says whether workers append the log in the transactions that
	// store their sessions (appendTx), rather than through open.
	inTx() bool
	// appendTx appends lines to a run's log as part of tx.
	appendTx(ctx context.Context, tx *txn, runID string, lines []byte) error
	// manifest keeps a finished run's manifest beside its log.
	manifest(runID string, manifest []byte) error
}

// fileLogs keeps a run's log in log.jsonl, and its manifest in
// manifest.json, in the run's directory.
type fileLogs struct{ s *Store }

func (l fileLogs) path(runID string) string { return filepath.Join(l.s.RunDir(runID), "log.jsonl") }

func (l fileLogs) open(runID string) (io.WriteCloser, error) {
	f, err := os.OpenFile(l.path(runID), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: log: %w", err)
	}
	return f, nil
}

func (l fileLogs) inTx() bool { return false }

func (l fileLogs) appendTx(ctx context.Context, tx *txn, runID string, lines []byte) error {
	if len(lines) == 0 {
		return nil
	}
	return fmt.Errorf("store: log of run %s: a log file is not written in a transaction", runID)
}

func (l fileLogs) manifest(runID string, manifest []byte) error {
	return writeFile(filepath.Join(l.s.RunDir(runID), "manifest.json"), append(manifest, '\n'), 0o600)
}

// Write appends one record.
func (l *Log) Write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return l.WriteLines(append(b, '\n'))
}

// WriteLines appends already encoded lines, each ending in a newline.
func (l *Log) WriteLines(b []byte) error {
	_, err := l.w.Write(b)
	return err
}

// Flush pushes buffered records to the file.
func (l *Log) Flush() error { return l.w.Flush() }

// Close flushes and closes the log.
func (l *Log) Close() error {
	if err := l.w.Flush(); err != nil {
		l.f.Close()
		return err
	}
	return l.f.Close()
}

// AppendLog appends already encoded lines to a run's log.
func (s *Store) AppendLog(runID string, lines []byte) error {
	if len(lines) == 0 {
		return nil
	}
	l, err := s.OpenLog(runID)
	if err != nil {
		return err
	}
	if err := l.WriteLines(lines); err != nil {
		l.Close()
		return err
	}
	return l.Close()
}

// RepairLog makes a run's log whole after a crash. The log is written in
// groups, the attempt records of a session followed by its session record;
// everything after the last whole session record (a line cut short, the
// attempts of a session whose record was lost) is removed. It returns the
// sessions whose final record (complete or failed) the log holds, so a
// resumed run can add, once, the records of sessions the database has and
// the log lost.
func (s *Store) RepairLog(runID string) (*Logged, error) {
	return s.logs.repair(context.Background(), runID)
}

func (l fileLogs) repair(ctx context.Context, runID string) (*Logged, error) {
	f, err := os.OpenFile(l.path(runID), os.O_RDWR, 0o600)
	if os.IsNotExist(err) {
		return &Logged{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: log: %w", err)
	}
	defer f.Close()
	logged, good, err := scanLog(f)
	if err != nil {
		return nil, err
	}
	if err := f.Truncate(good); err != nil {
		return nil, fmt.Errorf("store: log: %w", err)
	}
	return logged, nil
}

// Logged is the set of sessions with a final record in a run's log, held
// as a sorted list of 64-bit hashes of their ids: 8 bytes a session, not
// the ids themselves. Two ids share a hash with odds of about n²/2⁶⁵ (one
// in 37 million for a million sessions); a lost record whose id did would
// stay lost from the log, never from the database.
type Logged struct{ sums []uint64 }

func idSum(id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()
}

// Has says whether the log holds a final record of session id.
func (l *Logged) Has(id string) bool {
	_, ok := slices.BinarySearch(l.sums, idSum(id))
	return ok
}

// Len is how many final records the log holds (a session run again after
// a failure has one for each time).
func (l *Logged) Len() int { return len(l.sums) }

// scanLog reads a log up to its first torn record and returns the sessions
// with a final record and the length of the log up to the last whole group.
func scanLog(r io.Reader) (logged *Logged, good int64, err error) {
	logged = &Logged{}
	defer func() {
		if logged != nil {
			slices.Sort(logged.sums)
		}
	}()
	var pos int64
	br := bufio.NewReaderSize(r, 1<<16)
	for {
		line, err := br.ReadBytes('\n')
		if err == io.EOF {
			return logged, good, nil // a last line without its newline is cut short: dropped
		}
		if err != nil {
			return nil, 0, fmt.Errorf("store: log: %w", err)
		}
		rec, err := ParseLogLine(line)
		if err != nil {
			return logged, good, nil // a torn record: everything after it goes
		}
		pos += int64(len(line))
		if rec.Type == LogSession {
			good = pos
			if rec.Status != SessionInterrupted {
				logged.sums = append(logged.sums, idSum(rec.SessionID))
			}
		}
	}
}

// WriteLog writes a run's log, as stored, to w: log.jsonl of a SQLite
// store, the run_logs rows of a PostgreSQL one. It is how the log of a
// run on a shared database is read, where no file holds it.
func (s *Store) WriteLog(ctx context.Context, runID string, w io.Writer) error {
	if _, err := s.GetRun(ctx, runID); err != nil {
		return err
	}
	return s.logs.copyTo(ctx, runID, w)
}

func (l fileLogs) copyTo(ctx context.Context, runID string, w io.Writer) error {
	f, err := os.Open(l.path(runID))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: log: %w", err)
	}
	defer f.Close()
	if _, err := io.Copy(w, f); err != nil {
		return fmt.Errorf("store: log: %w", err)
	}
	return nil
}
