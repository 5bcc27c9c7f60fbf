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

// Batches calls fn with each of a run's stored batches, in the order of
// their waves, one row at a time: an open batch's record holds its
// requests, and a wave's records read together would hold the whole wave
// (a million requests in a million-session run).
func (s *Store) Batches(ctx context.Context, runID string, fn func(BatchRow) error) error {
	return s.batches(ctx, fn, batchRows+` ORDER BY wave, token`, runID)
}

// Batch returns the stored batch of a run with the token given; ok is
// false when the run has none.
func (s *Store) Batch(ctx context.Context, runID, token string) (b BatchRow, ok bool, err error) {
	err = s.batches(ctx, func(r BatchRow) error {
		b, ok = r, true
		return nil
	}, batchRows+` AND token = $2`, runID, token)
	return b, ok, err
}

// batchRows selects a run's batch rows as batches scans them.
const batchRows = `SELECT token, wave, state, record FROM run_batches WHERE run_id = $1`

func (s *Store) batches(ctx context.Context, fn func(BatchRow) error, query string, args ...any) error {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return s.fail(err)
	}
	defer rows.Close()
	for rows.Next() {
		var b BatchRow
		var rec string
		if err := rows.Scan(&b.Token, &b.Wave, &b.State, &rec); err != nil {
			return s.fail(err)
		}
		b.Record = json.RawMessage(rec)
		if err := fn(b); err != nil {
			return err
		}
	}
	return s.fail(rows.Err())
}
