package store

import (
	"context"
	"fmt"
	"time"
)

// Freezing a deck records its hash and the time before it is used, so that
// a confirmation deck provably did not change after its first run, and
// runs on decks that were never frozen can be labelled exploratory.

// Freeze is one frozen deck.
type Freeze struct {
	Hash     string    `json:"sha256"`
	Name     string    `json:"name"`
	Kind     string    `json:"kind"`
	Source   string    `json:"source"`
	FrozenAt time.Time `json:"frozen_at"`
}

// FreezeDeck records a deck as frozen now, with a snapshot of its content.
// Freezing a deck that is already frozen changes nothing and returns the
// existing record with already set.
func (s *Store) FreezeDeck(ctx context.Context, f Freeze, content []byte) (rec Freeze, already bool, err error) {
	if old, ok, err := s.Frozen(ctx, f.Hash); err != nil || ok {
		return old, ok, err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Freeze{}, false, err
	}
	defer tx.Rollback()
	if err := saveDeck(ctx, tx, f.Hash, f.Name, f.Source, content); err != nil {
		return Freeze{}, false, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO deck_freezes (hash, name, kind, source, frozen_at) VALUES ($1, $2, $3, $4, $5)`,
		f.Hash, f.Name, f.Kind, f.Source, ts(f.FrozenAt)); err != nil {
		return Freeze{}, false, fmt.Errorf("store: freezing deck %s: %w", f.Name, err)
	}
	return f, false, s.fail(tx.Commit())
}

// Frozen returns the freeze record of a deck hash, if there is one.
func (s *Store) Frozen(ctx context.Context, hash string) (Freeze, bool, error) {
	return queryOne(ctx, s.db, scanFreeze, `SELECT `+freezeCols+` FROM deck_freezes WHERE hash = $1`, hash)
}

// FrozenByName lists the freezes recorded under a deck name, newest first
// (a deck that changed after it was frozen has a freeze under its old hash).
func (s *Store) FrozenByName(ctx context.Context, name string) ([]Freeze, error) {
	return queryAll(ctx, s.db, scanFreeze, `SELECT `+freezeCols+` FROM deck_freezes WHERE name = $1 ORDER BY frozen_at DESC`, name)
}
