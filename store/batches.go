package store

import (
	"context"
	"encoding/json"
	"fmt"
)

// batchSchema is what version 6 adds: the provider batches of a run
// (budge run --batch), one row per batch. A batch is stored before it is
// submitted, so a process that continues the run after a kill finds the
// batches its predecessor sent and collects them instead of sending them
// again. record is the batch's stored form (provider/batch.Record).
const batchSchema = `
CREATE TABLE IF NOT EXISTS run_batches (
  run_id TEXT NOT NULL,
  token TEXT NOT NULL,
  wave INTEGER NOT NULL,
  state TEXT NOT NULL,
  record TEXT NOT NULL,
  PRIMARY KEY (run_id, token)
);
`

// addBatches creates the batch table (version 6).
func addBatches(ctx context.Context, c *conn) error {
	if _, err := c.ExecContext(ctx, c.d.ddl(batchSchema)); err != nil {
		return fmt.Errorf("creating the batch table: %w", err)
	}
	return nil
}

// BatchRow is a stored batch: its token, wave, state and record.
type BatchRow struct {
	Token  string
	Wave   int
	State  string
	Record json.RawMessage
}

// PutBatch stores a batch of a run, or replaces its row.
func (s *Store) PutBatch(ctx context.Context, runID string, b BatchRow) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO run_batches (run_id, token, wave, state, record) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (run_id, token) DO UPDATE SET wave = excluded.wave, state = excluded.state, record = excluded.record`,
		runID, b.Token, b.Wave, b.State, string(b.Record))
	return s.fail(err)
}

// Batches returns a run's stored batches in the order of their waves.
func (s *Store) Batches(ctx context.Context, runID string) ([]BatchRow, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT token, wave, state, record FROM run_batches WHERE run_id = ? ORDER BY wave, token`, runID)
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
