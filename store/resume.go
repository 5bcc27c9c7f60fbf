package store

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Incarnations returns, for every session of a run with stored attempts,
// the highest incarnation stored: a resumed run starts a session again as
// the next incarnation, so no stored attempt is ever overwritten.
func (s *Store) Incarnations(ctx context.Context, runID string) (map[string]int, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT session_id, MAX(incarnation) FROM attempts WHERE run_id = ? GROUP BY session_id`, runID)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, err
		}
		out[id] = n
	}
	return out, rows.Err()
}

// Responses returns the successful attempts of a run by the sha256 of their
// request: what a replay answers from. When a request was answered more
// than once (a session resumed after its call had been answered), the
// latest incarnation's answer is kept, which is the one its stored
// transcript holds.
func (s *Store) Responses(ctx context.Context, runID string) (map[string]Attempt, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT session_id, incarnation, call, attempt, request_sha256, response_sha256, input_tokens, output_tokens,
		model_id, fingerprint, request_id, finish_reason, duration_ms
		FROM attempts WHERE run_id = ? AND outcome = 'ok' ORDER BY incarnation, session_id, call, attempt`, runID)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	defer rows.Close()
	out := map[string]Attempt{}
	for rows.Next() {
		var a Attempt
		var id string
		if err := rows.Scan(&id, &a.Incarnation, &a.Call, &a.Attempt, &a.RequestSHA, &a.ResponseSHA, &a.InputTokens, &a.OutputTokens,
			&a.ModelID, &a.Fingerprint, &a.RequestID, &a.FinishReason, &a.DurationMS); err != nil {
			return nil, err
		}
		a.Outcome = "ok"
		out[a.RequestSHA] = a
	}
	return out, rows.Err()
}

// ReopenRun marks a run as running again, for a resumed run, and stores its
// manifest as it stands (with the resumption recorded, so that a resume
// killed in turn is on record too).
func (s *Store) ReopenRun(ctx context.Context, id string, manifest json.RawMessage) error {
	if _, err := s.db.ExecContext(ctx, `UPDATE runs SET status = ?, finished = NULL, manifest = ? WHERE id = ?`, RunRunning, string(manifest), id); err != nil {
		return fmt.Errorf("store: reopening run %s: %w", id, err)
	}
	return nil
}

// RepairLog makes a run's log whole after a crash. The log is written in
// groups, the attempt records of a session followed by its session record;
// everything after the last whole session record (a line cut short, the
// attempts of a session whose record was lost) is removed. It returns the
// ids of sessions whose final record (complete or failed) the log holds, so
// a resumed run can add, once, the records of sessions the database has and
// the log lost.
func (s *Store) RepairLog(runID string) (map[string]bool, error) {
	path := filepath.Join(s.RunDir(runID), "log.jsonl")
	f, err := os.OpenFile(path, os.O_RDWR, 0o600)
	if os.IsNotExist(err) {
		return map[string]bool{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: log: %w", err)
	}
	defer f.Close()
	logged := map[string]bool{}
	var good, pos int64
	r := bufio.NewReaderSize(f, 1<<16)
	for {
		line, err := r.ReadBytes('\n')
		if err == io.EOF {
			break // a last line without its newline is cut short: dropped
		}
		if err != nil {
			return nil, fmt.Errorf("store: log: %w", err)
		}
		var rec struct {
			Type    string `json:"type"`
			Session string `json:"session_id"`
			Status  string `json:"status"`
		}
		if json.Unmarshal(line, &rec) != nil {
			break // a torn record: everything after it goes
		}
		pos += int64(len(line))
		if rec.Type == "session" {
			good = pos
			if rec.Status != SessionInterrupted {
				logged[rec.Session] = true
			}
		}
	}
	if err := f.Truncate(good); err != nil {
		return nil, fmt.Errorf("store: log: %w", err)
	}
	return logged, nil
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
