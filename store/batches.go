package store

import (
	"context"
	"encoding/json"
)

// BatchRow is a stored batch: its token, wave, state and record.
type BatchRow struct {
	Token  string
	Wave   int
	State  string
	Record json.RawMessage
}

// PutBatch stores a batch of a run, or replaces its row.
func (s *Store) PutBatch(ctx context.Context, runID string, b BatchRow) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO run_batches (run_id, token, wave, state, record) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (run_id, token) DO UPDATE SET wave = excluded.wave, state = excluded.state, record = excluded.record`,
		runID, b.Token, b.Wave, b.State, string(b.Record))
	return s.fail(err)
}

// Batches returns a run's stored batches in the order of their waves.
func (s *Store) Batches(ctx context.Context, runID string) ([]BatchRow, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT token, wave, state, record FROM run_batches WHERE run_id = $1 ORDER BY wave, token`, runID)
	if err != nil {
		return nil, s.fail(err)
	}
	defer rows.Close()
	var out []BatchRow
	for rows.Next() {
		var b BatchRow
		var rec string
		if err := rows.Scan(&b.Token, &b.Wave, &b.State, &rec); err != nil {
			return nil, s.fail(err)
		}
		b.Record = json.RawMessage(rec)
		out = append(out, b)
	}
	return out, s.fail(rows.Err())
}
