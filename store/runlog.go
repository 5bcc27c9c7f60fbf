package store

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
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

func (s *Store) logPath(runID string) string { return filepath.Join(s.RunDir(runID), "log.jsonl") }

// Log appends JSON lines to a run's log. Each record is written whole.
type Log struct {
	f io.WriteCloser // log.jsonl, or the run's rows of run_logs
	w *bufio.Writer
}

// OpenLog opens the run's log for appending.
func (s *Store) OpenLog(runID string) (*Log, error) {
	if s.db.d.postgres() {
		if _, err := s.GetRun(context.Background(), runID); err != nil {
			return nil, fmt.Errorf("store: log: %w", err)
		}
		f := &dbLog{s: s, runID: runID}
		return &Log{f: f, w: bufio.NewWriterSize(f, 1<<16)}, nil
	}
	f, err := os.OpenFile(s.logPath(runID), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: log: %w", err)
	}
	return &Log{f: f, w: bufio.NewWriterSize(f, 1<<16)}, nil
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
	if s.db.d.postgres() {
		return s.repairDBLog(context.Background(), runID)
	}
	f, err := os.OpenFile(s.logPath(runID), os.O_RDWR, 0o600)
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
	if !s.db.d.postgres() {
		f, err := os.Open(s.logPath(runID))
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
	var werr error
	err := queryEach(ctx, s.db, scanString, func(lines string) {
		if werr == nil {
			_, werr = io.WriteString(w, lines)
		}
	}, `SELECT lines FROM run_logs WHERE run_id = ? ORDER BY chunk`, runID)
	if err != nil {
		return err
	}
	return werr
}

// dbLog appends a run's log to the database: each write of whole lines is
// one row (a chunk) of run_logs, numbered after the run's last. Workers of
// one run log in the transactions that store their sessions (Worker.Logs);
// appendChunk takes the next number again when another writer took it.
type dbLog struct {
	s       *Store
	runID   string
	pending []byte // the start of a line not yet ended
}

func (l *dbLog) Write(p []byte) (int, error) {
	l.pending = append(l.pending, p...)
	end := bytes.LastIndexByte(l.pending, '\n') + 1
	if end == 0 {
		return len(p), nil
	}
	if err := l.s.appendChunk(context.Background(), l.s.db, l.runID, l.pending[:end]); err != nil {
		l.pending = l.pending[:len(l.pending)-len(p)]
		return 0, err
	}
	l.pending = append(l.pending[:0], l.pending[end:]...)
	return len(p), nil
}

// Close writes what is left, a line cut short included (as a file would
// hold it, for RepairLog to remove).
func (l *dbLog) Close() error {
	if len(l.pending) == 0 {
		return nil
	}
	err := l.s.appendChunk(context.Background(), l.s.db, l.runID, l.pending)
	l.pending = nil
	return err
}

// appendChunk appends lines as the run's next chunk. Workers of one run
// append at the same time: one that loses the race for a chunk number
// tries the next.
func (s *Store) appendChunk(ctx context.Context, q execQuerier, runID string, lines []byte) error {
	var err error
	for try := 0; try < 50; try++ {
		_, err = q.ExecContext(ctx, `INSERT INTO run_logs (run_id, chunk, lines)
		SELECT ?, COALESCE(MAX(chunk), 0) + 1, ? FROM run_logs WHERE run_id = ?`, runID, string(lines), runID)
		if err == nil || !isConstraint(err) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("store: log of run %s: %w", runID, err)
	}
	return nil
}

// repairDBLog is RepairLog for a log in the database. The chunks are read
// one at a time, so memory does not grow with the log; the chunk in which
// the last whole session group ends is cut there, and the chunks after it
// are deleted.
func (s *Store) repairDBLog(ctx context.Context, runID string) (*Logged, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, s.fail(err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT chunk, lines FROM run_logs WHERE run_id = ? ORDER BY chunk`, runID)
	if err != nil {
		return nil, s.fail(err)
	}
	r := &chunkReader{rows: rows}
	logged, good, err := scanLog(r)
	rest := r.more()
	rows.Close()
	if err == nil {
		err = r.err
	}
	if err != nil || (good == r.off && !rest) {
		return logged, s.fail(err)
	}
	// The chunk the good part ends in is cut, and every later one goes.
	var keep chunkSpan
	for _, c := range r.spans {
		if c.start < good {
			keep = c
		}
	}
	if good > keep.start {
		// The chunk is read again: the reader keeps no text behind it.
		var lines string
		if err := tx.QueryRowContext(ctx, `SELECT lines FROM run_logs WHERE run_id = ? AND chunk = ?`, runID, keep.chunk).Scan(&lines); err != nil {
			return nil, s.fail(err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM run_logs WHERE run_id = ? AND chunk >= ?`, runID, keep.chunk); err != nil {
			return nil, fmt.Errorf("store: log of run %s: %w", runID, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO run_logs (run_id, chunk, lines) VALUES (?, ?, ?)`,
			runID, keep.chunk, lines[:good-keep.start]); err != nil {
			return nil, fmt.Errorf("store: log of run %s: %w", runID, err)
		}
	} else if _, err := tx.ExecContext(ctx, `DELETE FROM run_logs WHERE run_id = ? AND chunk >= ?`, runID, keep.chunk); err != nil {
		return nil, fmt.Errorf("store: log of run %s: %w", runID, err)
	}
	return logged, s.fail(tx.Commit())
}

// chunkSpan is where a chunk of a log in the database starts in the log.
type chunkSpan struct {
	chunk int64
	start int64
}

// chunkReader reads a run's log chunks as one stream, noting where each
// starts; it keeps the text of the chunk it reads only.
type chunkReader struct {
	rows  *sql.Rows
	cur   string
	off   int64 // the length of the chunks read
	spans []chunkSpan
	err   error
}

func (r *chunkReader) Read(p []byte) (int, error) {
	for r.cur == "" {
		if !r.next() {
			return 0, io.EOF
		}
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

// next reads the next chunk, and says whether there was one.
func (r *chunkReader) next() bool {
	if r.err != nil || !r.rows.Next() {
		if r.err == nil {
			r.err = r.rows.Err()
		}
		return false
	}
	c := chunkSpan{start: r.off}
	if r.err = r.rows.Scan(&c.chunk, &r.cur); r.err != nil {
		return false
	}
	r.spans = append(r.spans, c)
	r.off += int64(len(r.cur))
	return true
}

// more reports whether the log goes on after what the scan read.
func (r *chunkReader) more() bool { return r.cur != "" || r.next() }
