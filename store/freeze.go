package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Freezing a deck records its hash and the time before it is used, so that
// a confirmation deck provably did not change after its first run, and
// runs on decks that were never frozen can be labelled exploratory.

const freezeSchema = `
CREATE TABLE IF NOT EXISTS deck_freezes (
  hash TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  kind TEXT NOT NULL,
  source TEXT NOT NULL,
  frozen_at TEXT NOT NULL
);
`

// Freeze is one frozen deck.
type Freeze struct {
	Hash     string    `json:"sha256"`
	Name     string    `json:"name"`
	Kind     string    `json:"kind"`
	Source   string    `json:"source"`
	FrozenAt time.Time `json:"frozen_at"`
}

func (s *Store) freezeTable(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, freezeSchema); err != nil {
		return fmt.Errorf("store: creating deck_freezes: %w", err)
	}
	return nil
}

// FreezeDeck records a deck as frozen now, with a snapshot of its content.
// Freezing a deck that is already frozen changes nothing and returns the
// existing record with already set.
func (s *Store) FreezeDeck(ctx context.Context, f Freeze, content []byte) (rec Freeze, already bool, err error) {
	if err := s.freezeTable(ctx); err != nil {
		return Freeze{}, false, err
	}
	if old, ok, err := s.Frozen(ctx, f.Hash); err != nil || ok {
		return old, ok, err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Freeze{}, false, err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO decks (hash, name, source, content) VALUES (?, ?, ?, ?) ON CONFLICT (hash) DO NOTHING`,
		f.Hash, f.Name, f.Source, string(content)); err != nil {
		return Freeze{}, false, fmt.Errorf("store: saving deck: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO deck_freezes (hash, name, kind, source, frozen_at) VALUES (?, ?, ?, ?, ?)`,
		f.Hash, f.Name, f.Kind, f.Source, ts(f.FrozenAt)); err != nil {
		return Freeze{}, false, fmt.Errorf("store: freezing deck %s: %w", f.Name, err)
	}
	return f, false, tx.Commit()
}

// Frozen returns the freeze record of a deck hash, if there is one.
func (s *Store) Frozen(ctx context.Context, hash string) (Freeze, bool, error) {
	if err := s.freezeTable(ctx); err != nil {
		return Freeze{}, false, err
	}
	var f Freeze
	var at string
	err := s.db.QueryRowContext(ctx, `SELECT hash, name, kind, source, frozen_at FROM deck_freezes WHERE hash = ?`, hash).
		Scan(&f.Hash, &f.Name, &f.Kind, &f.Source, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return Freeze{}, false, nil
	}
	if err != nil {
		return Freeze{}, false, err
	}
	f.FrozenAt, _ = time.Parse(time.RFC3339Nano, at)
	return f, true, nil
}

// FrozenByName lists the freezes recorded under a deck name, newest first
// (a deck that changed after it was frozen has a freeze under its old hash).
func (s *Store) FrozenByName(ctx context.Context, name string) ([]Freeze, error) {
	if err := s.freezeTable(ctx); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT hash, name, kind, source, frozen_at FROM deck_freezes WHERE name = ? ORDER BY frozen_at DESC`, name)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Freeze
	for rows.Next() {
		var f Freeze
		var at string
		if err := rows.Scan(&f.Hash, &f.Name, &f.Kind, &f.Source, &at); err != nil {
			return nil, err
		}
		f.FrozenAt, _ = time.Parse(time.RFC3339Nano, at)
		out = append(out, f)
	}
	return out, rows.Err()
}

// RunsOnDeck lists the runs made with a deck hash, oldest first, with their
// manifests.
func (s *Store) RunsOnDeck(ctx context.Context, hash string) ([]Run, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id FROM runs WHERE deck_hash = ? ORDER BY created, id`, hash)
	if err != nil {
		return nil, err
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	out := make([]Run, 0, len(ids))
	for _, id := range ids {
		r, err := s.GetRun(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
