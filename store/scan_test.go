package store

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// A stored value that does not parse is an error naming the row and the
// column, from every reader of that row: never a zero value.
func testCorruptColumnsAreErrors(t *testing.T) {
	ctx := context.Background()
	sessionReaders := map[string]func(s *Store) error{
		"Sessions": func(s *Store) error { _, err := s.Sessions(ctx, "r1"); return err },
		"Session":  func(s *Store) error { _, err := s.Session(ctx, "r1", "s1"); return err },
	}
	runReaders := map[string]func(s *Store) error{
		"GetRun":     func(s *Store) error { _, err := s.GetRun(ctx, "r1"); return err },
		"ListRuns":   func(s *Store) error { _, err := s.ListRuns(ctx); return err },
		"RunsOnDeck": func(s *Store) error { _, err := s.RunsOnDeck(ctx, "hash-r1"); return err },
	}
	reviewReaders := map[string]func(s *Store) error{
		"GetReview":       func(s *Store) error { _, err := s.GetReview(ctx, "r1"); return err },
		"FinishReview":    func(s *Store) error { return s.FinishReview(ctx, "r1", "b") },
		"SetAdjudication": func(s *Store) error { return s.SetAdjudication(ctx, "r1", "s1", codeIdentity, "") },
	}
	for _, tc := range []struct {
		name, update       string
		table, column, row string
		readers            map[string]func(s *Store) error
	}{
		{"run created", `UPDATE runs SET created = 'yesterday'`, "runs", "created", "run r1", runReaders},
		{"run finished", `UPDATE runs SET finished = '2024-13-01T00:00:00Z'`, "runs", "finished", "run r1", runReaders},
		{"run manifest", `UPDATE runs SET manifest = '{"run_id":'`, "runs", "manifest", "run r1", runReaders},
		{"session spec", `UPDATE sessions SET spec = '{"case":'`, "sessions", "spec", "run r1, session s1", sessionReaders},
		{"session started", `UPDATE sessions SET started = ''`, "sessions", "started", "run r1, session s1", sessionReaders},
		{"session finished", `UPDATE sessions SET finished = '12:00'`, "sessions", "finished", "run r1, session s1", sessionReaders},
		{"session row spec", `UPDATE sessions SET spec = 'x'`, "sessions", "spec", "run r1, session s1",
			map[string]func(s *Store) error{"SessionPage": func(s *Store) error { _, _, err := s.SessionPage(ctx, "r1", SessionFilter{}, 0, 10); return err }}},
		{"attempt started", `UPDATE attempts SET started = 'soon' WHERE attempt = 2`, "attempts", "started", "run r1, session s1, attempt 1/1/2", sessionReaders},
		{"answer started", `UPDATE attempts SET started = 'soon' WHERE attempt = 2`, "attempts", "started", "run r1, session s1",
			map[string]func(s *Store) error{"Responses": func(s *Store) error { _, err := s.Responses(ctx, "r1"); return err }}},
		{"message tool calls", `UPDATE messages SET tool_calls = '[{"id":' WHERE seq = 2`, "messages", "tool_calls", "run r1, session s1, message 2", sessionReaders},
		{"artifact pack", `UPDATE artifacts SET pack = '../../x'`, "artifacts", "pack", "run r1, artifact ",
			map[string]func(s *Store) error{"Artifact": func(s *Store) error {
				_, err := s.Artifact(ctx, "r1", testSession("s1", 0).TraceSHA)
				return err
			}}},
		{"freeze time", `UPDATE deck_freezes SET frozen_at = 'then'`, "deck_freezes", "frozen_at", "deck h1",
			map[string]func(s *Store) error{
				"Frozen":       func(s *Store) error { _, _, err := s.Frozen(ctx, "h1"); return err },
				"FrozenByName": func(s *Store) error { _, err := s.FrozenByName(ctx, "d1"); return err },
				"FreezeDeck":   func(s *Store) error { _, _, err := s.FreezeDeck(ctx, Freeze{Hash: "h1", Name: "d1"}, nil); return err },
			}},
		{"review seed", `UPDATE reviews SET seed = '-1'`, "reviews", "seed", "review of run r1", reviewReaders},
		{"review frozen", `UPDATE reviews SET frozen = ''`, "reviews", "frozen", "review of run r1", reviewReaders},
		{"review code", `UPDATE review_codes SET updated = 'x'`, "review_codes", "updated", "run r1, session s1, reviewer a",
			map[string]func(s *Store) error{
				"ReviewCodes":     func(s *Store) error { _, err := s.ReviewCodes(ctx, "r1"); return err },
				"FinishReview":    func(s *Store) error { return s.FinishReview(ctx, "r1", "b") },
				"SetAdjudication": func(s *Store) error { return s.SetAdjudication(ctx, "r1", "s1", codeIdentity, "") },
			}},
		{"reviewer finished", `UPDATE review_finished SET finished = 'x'`, "review_finished", "finished", "review of run r1, reviewer a",
			map[string]func(s *Store) error{
				"ReviewFinished":  func(s *Store) error { _, err := s.ReviewFinished(ctx, "r1"); return err },
				"SetAdjudication": func(s *Store) error { return s.SetAdjudication(ctx, "r1", "s1", codeIdentity, "") },
			}},
		{"adjudication", `UPDATE review_adjudications SET updated = 'x'`, "review_adjudications", "updated", "run r1, session s1",
			map[string]func(s *Store) error{"Adjudications": func(s *Store) error { _, err := s.Adjudications(ctx, "r1"); return err }}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := storeWithEveryRow(t)
			for name, read := range tc.readers {
				if err := read(s); err != nil {
					t.Fatalf("%s before the damage: %v", name, err)
				}
			}
			exec(t, s.db.DB, tc.update)
			for name, read := range tc.readers {
				err := read(s)
				var ce *ColumnError
				if !errors.As(err, &ce) {
					t.Errorf("%s = %v, want a *ColumnError", name, err)
					continue
				}
				if ce.Table != tc.table || ce.Column != tc.column || !strings.HasPrefix(ce.Row, tc.row) {
					t.Errorf("%s: error on %s.%s of %q, want %s.%s of %q", name, ce.Table, ce.Column, ce.Row, tc.table, tc.column, tc.row)
				}
				if msg := err.Error(); !strings.Contains(msg, tc.row) || !strings.Contains(msg, tc.column) {
					t.Errorf("%s: error %q does not name the row and column", name, msg)
				}
			}
		})
	}
}

// storeWithEveryRow holds a row of every table: a run, a session with
// attempts, messages and artifacts, a frozen deck, and a review that both
// reviewers finished, with an adjudication.
func storeWithEveryRow(t *testing.T) *Store {
	t.Helper()
	s := openStore(t)
	ctx := context.Background()
	createRun(t, s, "r1", base)
	if err := s.FinishRun(ctx, "r1", RunComplete, []byte(`{"run_id":"r1"}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteSessions(ctx, "r1", []Session{testSession("s1", 0)}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.FreezeDeck(ctx, Freeze{Hash: "h1", Name: "d1", Kind: "confirmation", Source: "x", FrozenAt: base}, []byte("d")); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateReview(ctx, Review{RunID: "r1", Reviewers: [2]string{"a", "b"}, Seed: 7, Frozen: base,
		Items: []ReviewItem{{SessionID: "s1", Why: "failure"}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetReviewCode(ctx, "r1", "s1", "a", codeAuthority, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishReview(ctx, "r1", "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetReviewCode(ctx, "r1", "s1", "b", codeIdentity, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishReview(ctx, "r1", "b"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetAdjudication(ctx, "r1", "s1", codeIdentity, "agreed later"); err != nil {
		t.Fatal(err)
	}
	return s
}
