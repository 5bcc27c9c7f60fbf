package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/buildlab/budge/chat"
)

// SessionFilter selects stored sessions of one run. Empty fields match
// everything. Spec fields are read from the stored spec, so the filter works
// for any protocol whose spec has those keys.
type SessionFilter struct {
	Case       string
	Branch     string
	Status     string // stored status: complete, failed, interrupted
	Assignment string
	Order      string
	Item       string // framing runs: the item id
	// CaseAssignments, when non-nil, keeps only sessions whose
	// "case/assignment" is listed (how a viewer filters by direction, which
	// depends on both). An empty non-nil list matches nothing.
	CaseAssignments []string
}

// SessionRow is one line of a session table: no messages, no attempts.
type SessionRow struct {
	ID             string          `json:"session_id"`
	Seq            int             `json:"seq"`
	Spec           json.RawMessage `json:"spec"`
	Status         string          `json:"status"`
	Attempts       int             `json:"attempts"`
	FailedAttempts int             `json:"failed_attempts"`
	FailureKind    string          `json:"failure_kind,omitempty"`
}

func (f SessionFilter) where() (string, []any) {
	conds := []string{"run_id = ?"}
	var args []any
	for _, c := range []struct{ col, v string }{
		{"json_extract(spec, '$.case_id')", f.Case}, {"json_extract(spec, '$.branch')", f.Branch},
		{"status", f.Status}, {"json_extract(spec, '$.identity_assignment')", f.Assignment},
		{"json_extract(spec, '$.profile_order')", f.Order}, {"json_extract(spec, '$.item')", f.Item},
	} {
		if c.v != "" {
			conds = append(conds, c.col+" = ?")
			args = append(args, c.v)
		}
	}
	if f.CaseAssignments != nil {
		if len(f.CaseAssignments) == 0 {
			conds = append(conds, "1 = 0")
		} else {
			conds = append(conds, "(json_extract(spec, '$.case_id') || '/' || json_extract(spec, '$.identity_assignment')) IN (?"+
				strings.Repeat(", ?", len(f.CaseAssignments)-1)+")")
			for _, x := range f.CaseAssignments {
				args = append(args, x)
			}
		}
	}
	return strings.Join(conds, " AND "), args
}

// browseIndexes make the session table fast on runs of any size: each
// serves the filter on its column in storage order, so a page never sorts or
// parses the whole run. They are expression indexes, which PostgreSQL has too.
const browseIndexes = `
CREATE INDEX IF NOT EXISTS sessions_by_seq ON sessions (run_id, seq);
CREATE INDEX IF NOT EXISTS sessions_by_branch ON sessions (run_id, json_extract(spec, '$.branch'), seq);
CREATE INDEX IF NOT EXISTS sessions_by_case ON sessions (run_id, json_extract(spec, '$.case_id'), seq);
CREATE INDEX IF NOT EXISTS sessions_by_status ON sessions (run_id, status, seq);
CREATE INDEX IF NOT EXISTS sessions_by_item ON sessions (run_id, json_extract(spec, '$.item'), seq);
`

// PrepareBrowse creates the indexes SessionPage uses. It is idempotent;
// on a store with large runs the first call takes a moment.
func (s *Store) PrepareBrowse(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, browseIndexes); err != nil {
		return fmt.Errorf("store: session indexes: %w", err)
	}
	return nil
}

// SessionPage returns one page of a run's stored sessions in storage order,
// and how many sessions match the filter in all. Only the page is read, so
// a viewer stays fast on runs of any size.
func (s *Store) SessionPage(ctx context.Context, runID string, f SessionFilter, offset, limit int) ([]SessionRow, int, error) {
	where, args := f.where()
	args = append([]any{runID}, args...)
	var total int
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM sessions WHERE "+where, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("store: %w", err)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT session_id, seq, spec, status, attempts, failed_attempts, failure_kind
		FROM sessions WHERE `+where+` ORDER BY seq LIMIT ? OFFSET ?`, append(args, limit, max(0, offset))...)
	if err != nil {
		return nil, 0, fmt.Errorf("store: %w", err)
	}
	defer rows.Close()
	out := []SessionRow{}
	for rows.Next() {
		var r SessionRow
		var spec string
		if err := rows.Scan(&r.ID, &r.Seq, &spec, &r.Status, &r.Attempts, &r.FailedAttempts, &r.FailureKind); err != nil {
			return nil, 0, err
		}
		r.Spec = json.RawMessage(spec)
		out = append(out, r)
	}
	return out, total, rows.Err()
}

// ErrNoSession is returned by Session for an id the run does not hold.
var ErrNoSession = errors.New("store: no such session")

// Session reads one stored session with its attempts and messages.
func (s *Store) Session(ctx context.Context, runID, id string) (Session, error) {
	var se Session
	var spec, started, finished string
	err := s.db.QueryRowContext(ctx, `SELECT session_id, seq, schedule_pos, spec, status, started, finished, stop_reason,
		failed_phase, failure_kind, failure_message, input_tokens, output_tokens, trace_sha256 FROM sessions WHERE run_id = ? AND session_id = ?`, runID, id).
		Scan(&se.ID, &se.Seq, &se.SchedulePos, &spec, &se.Status, &started, &finished, &se.Stop,
			&se.FailedPhase, &se.FailureKind, &se.FailureMsg, &se.InputTokens, &se.OutputTokens, &se.TraceSHA)
	if errors.Is(err, sql.ErrNoRows) {
		return se, fmt.Errorf("%w: %s in run %s", ErrNoSession, id, runID)
	}
	if err != nil {
		return se, fmt.Errorf("store: %w", err)
	}
	se.Spec = json.RawMessage(spec)
	se.Started, _ = time.Parse(time.RFC3339Nano, started)
	se.Finished, _ = time.Parse(time.RFC3339Nano, finished)
	se.Attempts = []Attempt{}
	rows, err := s.db.QueryContext(ctx, `SELECT incarnation, call, attempt, phase, started, duration_ms, outcome, error_kind, error_message,
		http_status, request_sha256, response_sha256, input_tokens, output_tokens, model_id, fingerprint, request_id, finish_reason
		FROM attempts WHERE run_id = ? AND session_id = ? ORDER BY incarnation, call, attempt`, runID, id)
	if err != nil {
		return se, fmt.Errorf("store: %w", err)
	}
	for rows.Next() {
		var a Attempt
		if err := rows.Scan(&a.Incarnation, &a.Call, &a.Attempt, &a.Phase, &started, &a.DurationMS, &a.Outcome, &a.ErrorKind, &a.ErrorMsg,
			&a.HTTPStatus, &a.RequestSHA, &a.ResponseSHA, &a.InputTokens, &a.OutputTokens, &a.ModelID, &a.Fingerprint, &a.RequestID, &a.FinishReason); err != nil {
			rows.Close()
			return se, err
		}
		a.Started, _ = time.Parse(time.RFC3339Nano, started)
		se.Attempts = append(se.Attempts, a)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return se, err
	}
	rows, err = s.db.QueryContext(ctx, `SELECT phase, role, content, tool_calls, tool_call_id, name, refusal
		FROM messages WHERE run_id = ? AND session_id = ? ORDER BY seq`, runID, id)
	if err != nil {
		return se, fmt.Errorf("store: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var role, calls string
		var e chat.Entry
		if err := rows.Scan(&e.Phase, &role, &e.Content, &calls, &e.ToolCallID, &e.Name, &e.Refusal); err != nil {
			return se, err
		}
		e.Role = chat.Role(role)
		if calls != "" {
			if err := json.Unmarshal([]byte(calls), &e.ToolCalls); err != nil {
				return se, fmt.Errorf("store: session %s: stored tool calls are corrupt: %w", id, err)
			}
		}
		se.Messages = append(se.Messages, e)
	}
	return se, rows.Err()
}
