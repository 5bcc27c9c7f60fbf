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

// where is the condition selecting the run's sessions the filter keeps,
// and its arguments.
func (f SessionFilter) where(d dialect, runID string) (string, []any) {
	var p params
	conds := []string{"run_id = " + p.add(runID)}
	for _, c := range []struct{ col, v string }{
		{d.jsonField("spec", "case_id"), f.Case}, {d.jsonField("spec", "branch"), f.Branch},
		{"status", f.Status}, {d.jsonField("spec", "identity_assignment"), f.Assignment},
		{d.jsonField("spec", "profile_order"), f.Order}, {d.jsonField("spec", "item"), f.Item},
	} {
		if c.v != "" {
			conds = append(conds, c.col+" = "+p.add(c.v))
		}
	}
	if f.CaseAssignments != nil {
		if len(f.CaseAssignments) == 0 {
			conds = append(conds, "1 = 0")
		} else {
			in := make([]string, len(f.CaseAssignments))
			for i, x := range f.CaseAssignments {
				in[i] = p.add(x)
			}
			conds = append(conds, "("+d.jsonField("spec", "case_id")+" || '/' || "+d.jsonField("spec", "identity_assignment")+") IN ("+strings.Join(in, ", ")+")")
		}
	}
	return strings.Join(conds, " AND "), p
}

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
	if err := execDDL(ctx, s.db, s.db.d, "browse_indexes"); err != nil {
		return fmt.Errorf("store: session indexes: %w", err)
	}
	return s.prepareView(ctx)
}

// SessionPage returns one page of a run's stored sessions in storage order,
// and how many sessions match the filter in all. Only the page is read, so
// a viewer stays fast on runs of any size.
func (s *Store) SessionPage(ctx context.Context, runID string, f SessionFilter, offset, limit int) ([]SessionRow, int, error) {
	where, args := f.where(s.db.d, runID)
	var total int
	if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM sessions WHERE "+where, args...).Scan(&total); err != nil {
		return nil, 0, s.fail(err)
	}
	out, err := queryAll(ctx, s.db, scanSessionRow, `SELECT `+sessionRowCols+` FROM sessions WHERE `+where+` ORDER BY seq LIMIT `+placeholders(len(args)+1, 1)+` OFFSET `+placeholders(len(args)+2, 1),
		append(args, limit, max(0, offset))...)
	if err != nil {
		return nil, 0, err
	}
	if out == nil {
		out = []SessionRow{}
	}
	return out, total, nil
}
