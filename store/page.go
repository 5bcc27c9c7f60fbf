package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
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
//
// A read-only store keeps the indexes it has (a store a writer opened for
// the viewer before has them all); pages of a large run without them are
// slower, not wrong.
func (s *Store) PrepareBrowse(ctx context.Context) error {
	if s.readOnly {
		return s.prepareView(ctx)
	}
	if _, err := s.db.ExecContext(ctx, browseIndexes); err != nil {
		return fmt.Errorf("store: session indexes: %w", err)
	}
	return s.prepareView(ctx)
}

// SessionPage returns one page of a run's stored sessions in storage order,
// and how many sessions match the filter in all. Only the page is read, so
// a viewer stays fast on runs of any size.
func (s *Store) SessionPage(ctx context.Context, runID string, f SessionFilter, offset, limit int) ([]SessionRow, int, error) {
	where, args := f.where()
	args = append([]any{runID}, args...)
	var total int
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM sessions WHERE "+where, args...).Scan(&total); err != nil {
		return nil, 0, s.fail(err)
	}
	out, err := queryAll(ctx, s.db, scanSessionRow, `SELECT `+sessionRowCols+` FROM sessions WHERE `+where+` ORDER BY seq LIMIT ? OFFSET ?`,
		append(args, limit, max(0, offset))...)
	if err != nil {
		return nil, 0, err
	}
	if out == nil {
		out = []SessionRow{}
	}
	return out, total, nil
}
