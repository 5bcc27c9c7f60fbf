package store

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
)

// dbLogs keeps run logs in the run_logs table, a run's manifest being in
// its row of runs already.
type dbLogs struct{ s *Store }

func (l dbLogs) open(runID string) (io.WriteCloser, error) {
	if _, err := l.s.GetRun(context.Background(), runID); err != nil {
		return nil, fmt.Errorf("store: log: %w", err)
	}
	return &dbLog{s: l.s, runID: runID}, nil
}

func (l dbLogs) manifest(string, []byte) error { return nil }

func (l dbLogs) inTx() bool { return true }

// appendTx appends lines as part of tx: the chunk number is taken under a
// lock on the run's log that tx holds until it ends, so chunks follow the
// order of commits.
func (l dbLogs) appendTx(ctx context.Context, tx *txn, runID string, lines []byte) error {
	if len(lines) == 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, "budge-log/"+runID); err != nil {
		return l.s.fail(err)
	}
	return l.s.appendChunk(ctx, tx, runID, lines)
}

func (l dbLogs) copyTo(ctx context.Context, runID string, w io.Writer) error {
	var werr error
	err := queryEach(ctx, l.s.db, scanString, func(lines string) {
		if werr == nil {
			_, werr = io.WriteString(w, lines)
		}
	}, `SELECT lines FROM run_logs WHERE run_id = $1 ORDER BY chunk`, runID)
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
		SELECT $1, COALESCE(MAX(chunk), 0) + 1, $2 FROM run_logs WHERE run_id = $3`, runID, string(lines), runID)
		if err == nil || !isConstraint(err) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("store: log of run %s: %w", runID, err)
	}
	return nil
}

// repair reads the chunks one at a time, so memory does not grow with the
// log; the chunk in which the last whole session group ends is cut there,
// and the chunks after it are deleted.
func (l dbLogs) repair(ctx context.Context, runID string) (*Logged, error) {
	s := l.s
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, s.fail(err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT chunk, lines FROM run_logs WHERE run_id = $1 ORDER BY chunk`, runID)
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
		if err := tx.QueryRowContext(ctx, `SELECT lines FROM run_logs WHERE run_id = $1 AND chunk = $2`, runID, keep.chunk).Scan(&lines); err != nil {
			return nil, s.fail(err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM run_logs WHERE run_id = $1 AND chunk >= $2`, runID, keep.chunk); err != nil {
			return nil, fmt.Errorf("store: log of run %s: %w", runID, err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO run_logs (run_id, chunk, lines) VALUES ($1, $2, $3)`,
			runID, keep.chunk, lines[:good-keep.start]); err != nil {
			return nil, fmt.Errorf("store: log of run %s: %w", runID, err)
		}
	} else if _, err := tx.ExecContext(ctx, `DELETE FROM run_logs WHERE run_id = $1 AND chunk >= $2`, runID, keep.chunk); err != nil {
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
