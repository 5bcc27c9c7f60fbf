package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The explanation review of a run (see schema): every change is its own
// small transaction, so nothing entered is lost if the viewer or the
// browser goes away.

// Review is a run's frozen review sample and its reviewers.
type Review struct {
	RunID     string
	Reviewers [2]string
	Seed      uint64
	Successes int // declared size of the random sample of successes
	Frozen    time.Time
	Items     []ReviewItem
	// TokenSHA256 are the sha256 (hex) of each reviewer's access token,
	// written with the sample when set; GetReview does not read them back
	// (see ReviewerTokens).
	TokenSHA256 [2]string
}

// ReviewItem is one sampled session and why it was drawn.
type ReviewItem struct {
	SessionID   string
	Why         string // "failure", "discordant pair", "success sample"
	FailureType string
}

// ReviewCode is one reviewer's code and note for one session.
type ReviewCode struct {
	SessionID, Reviewer, Code, Note string
	Updated                         time.Time
}

// Errors of the review workflow.
var (
	ErrNoReview       = errors.New("no review has been started for this run")
	ErrReviewExists   = errors.New("a review sample is already frozen for this run")
	ErrNotInSample    = errors.New("session is not in the review sample")
	ErrNotReviewer    = errors.New("not one of the run's two reviewers")
	ErrFinished       = errors.New("reviewer has already finished")
	ErrNotBothDone    = errors.New("adjudication opens when both reviewers have finished")
	ErrUncodedItems   = errors.New("some sampled sessions have no code yet")
	ErrNoCode         = errors.New("no reason code")
	ErrNoDisagreement = errors.New("the reviewers agree on this session")
)

// CreateReview freezes a review sample. It fails if the run already has one:
// a sample is drawn once, before any explanation is shown.
func (s *Store) CreateReview(ctx context.Context, r Review) error {
	if r.Reviewers[0] == "" || r.Reviewers[1] == "" || r.Reviewers[0] == r.Reviewers[1] {
		return fmt.Errorf("store: a review needs two different reviewer names, got %q and %q", r.Reviewers[0], r.Reviewers[1])
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.fail(err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM reviews WHERE run_id = $1`, r.RunID).Scan(&n); err != nil {
		return s.fail(err)
	}
	if n > 0 {
		return ErrReviewExists
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO reviews (run_id, reviewer_a, reviewer_b, seed, success_sample, frozen) VALUES ($1, $2, $3, $4, $5, $6)`,
		r.RunID, r.Reviewers[0], r.Reviewers[1], fmt.Sprint(r.Seed), r.Successes, ts(r.Frozen)); err != nil {
		return s.fail(err)
	}
	for i, it := range r.Items {
		if _, err := tx.ExecContext(ctx, `INSERT INTO review_items (run_id, session_id, pos, why, failure_type) VALUES ($1, $2, $3, $4, $5)`,
			r.RunID, it.SessionID, i, it.Why, it.FailureType); err != nil {
			return s.fail(err)
		}
	}
	for i, sum := range r.TokenSHA256 {
		if sum == "" {
			continue
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO review_tokens (run_id, reviewer, token_sha256, issued) VALUES ($1, $2, $3, $4)`,
			r.RunID, r.Reviewers[i], sum, ts(r.Frozen)); err != nil {
			return s.fail(err)
		}
	}
	return s.fail(tx.Commit())
}

// GetReview reads a run's review sample; ErrNoReview when there is none.
func (s *Store) GetReview(ctx context.Context, runID string) (*Review, error) {
	r, ok, err := queryOne(ctx, s.db, scanReview, `SELECT `+reviewCols+` FROM reviews WHERE run_id = $1`, runID)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, ErrNoReview
	}
	if r.Items, err = queryAll(ctx, s.db, scanReviewItem, `SELECT `+reviewItemCols+` FROM review_items WHERE run_id = $1 ORDER BY pos`, runID); err != nil {
		return nil, err
	}
	return r, nil
}

// Reviewer reports whether name is one of the review's two reviewers.
func (r *Review) Reviewer(name string) bool {
	return name != "" && (name == r.Reviewers[0] || name == r.Reviewers[1])
}

// Has reports whether a session is in the sample.
func (r *Review) Has(id string) bool {
	for _, it := range r.Items {
		if it.SessionID == id {
			return true
		}
	}
	return false
}

// SetReviewCode records (or changes) a reviewer's code and note for one
// sampled session, until that reviewer has finished. The codes are the
// review's vocabulary: review.SetCode checks them.
func (s *Store) SetReviewCode(ctx context.Context, runID, sessionID, reviewer, code, note string) error {
	r, err := s.GetReview(ctx, runID)
	if err != nil {
		return err
	}
	switch {
	case !r.Reviewer(reviewer):
		return fmt.Errorf("%w: %q", ErrNotReviewer, reviewer)
	case !r.Has(sessionID):
		return fmt.Errorf("%w: %s", ErrNotInSample, sessionID)
	case code == "":
		return fmt.Errorf("%w for %s by %s", ErrNoCode, sessionID, reviewer)
	}
	done, err := s.ReviewFinished(ctx, runID)
	if err != nil {
		return err
	}
	if _, ok := done[reviewer]; ok {
		return fmt.Errorf("%w: %s", ErrFinished, reviewer)
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO review_codes (run_id, session_id, reviewer, code, note, updated) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (run_id, session_id, reviewer) DO UPDATE SET code = excluded.code, note = excluded.note, updated = excluded.updated`,
		runID, sessionID, reviewer, code, note, ts(time.Now()))
	if err != nil {
		return s.fail(err)
	}
	return nil
}

// ReviewCodes returns every code of a run's review by reviewer and session.
// Callers decide who may see what; see package review for the blinding
// rules.
func (s *Store) ReviewCodes(ctx context.Context, runID string) (map[string]map[string]ReviewCode, error) {
	out := map[string]map[string]ReviewCode{}
	err := queryEach(ctx, s.db, scanReviewCode, func(c ReviewCode) {
		if out[c.Reviewer] == nil {
			out[c.Reviewer] = map[string]ReviewCode{}
		}
		out[c.Reviewer][c.SessionID] = c
	}, `SELECT `+reviewCodeCols+` FROM review_codes WHERE run_id = $1`, runID)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// FinishReview marks a reviewer as finished. Every sampled session must
// have a code (pending is a code); after this the reviewer's codes are final.
func (s *Store) FinishReview(ctx context.Context, runID, reviewer string) error {
	r, err := s.GetReview(ctx, runID)
	if err != nil {
		return err
	}
	if !r.Reviewer(reviewer) {
		return fmt.Errorf("%w: %q", ErrNotReviewer, reviewer)
	}
	codes, err := s.ReviewCodes(ctx, runID)
	if err != nil {
		return err
	}
	if missing := len(r.Items) - len(codes[reviewer]); missing > 0 {
		return fmt.Errorf("%w: %d of %d", ErrUncodedItems, missing, len(r.Items))
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO review_finished (run_id, reviewer, finished) VALUES ($1, $2, $3) ON CONFLICT (run_id, reviewer) DO NOTHING`,
		runID, reviewer, ts(time.Now()))
	if err != nil {
		return s.fail(err)
	}
	return nil
}

// ReviewFinished returns when each finished reviewer finished.
func (s *Store) ReviewFinished(ctx context.Context, runID string) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	err := queryEach(ctx, s.db, scanReviewFinished, func(f pair[time.Time]) { out[f.key] = f.val },
		`SELECT `+reviewFinishedCols+` FROM review_finished WHERE run_id = $1`, runID)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SetAdjudication records the adjudicated code of a disagreement (checked
// by review.Adjudicate). It is allowed only once both reviewers have finished and
// only for sessions they coded differently.
func (s *Store) SetAdjudication(ctx context.Context, runID, sessionID, code, note string) error {
	r, err := s.GetReview(ctx, runID)
	if err != nil {
		return err
	}
	if !r.Has(sessionID) {
		return fmt.Errorf("%w: %s", ErrNotInSample, sessionID)
	}
	if code == "" {
		return fmt.Errorf("%w for the adjudication of %s", ErrNoCode, sessionID)
	}
	done, err := s.ReviewFinished(ctx, runID)
	if err != nil {
		return err
	}
	if len(done) < 2 {
		return ErrNotBothDone
	}
	codes, err := s.ReviewCodes(ctx, runID)
	if err != nil {
		return err
	}
	if codes[r.Reviewers[0]][sessionID].Code == codes[r.Reviewers[1]][sessionID].Code {
		return fmt.Errorf("%w: %s", ErrNoDisagreement, sessionID)
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO review_adjudications (run_id, session_id, code, note, updated) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (run_id, session_id) DO UPDATE SET code = excluded.code, note = excluded.note, updated = excluded.updated`,
		runID, sessionID, code, note, ts(time.Now()))
	if err != nil {
		return s.fail(err)
	}
	return nil
}

// Adjudications returns the adjudicated codes of a run by session.
func (s *Store) Adjudications(ctx context.Context, runID string) (map[string]ReviewCode, error) {
	out := map[string]ReviewCode{}
	err := queryEach(ctx, s.db, scanReviewCode, func(c ReviewCode) { out[c.SessionID] = c },
		`SELECT `+adjudicationCols+` FROM review_adjudications WHERE run_id = $1`, runID)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SetReviewerToken records (or replaces) the sha256 of a reviewer's access
// token: a token issued again makes the old one stop working. The store
// never holds the token itself.
func (s *Store) SetReviewerToken(ctx context.Context, runID, reviewer, sha256hex string) error {
	r, err := s.GetReview(ctx, runID)
	if err != nil {
		return err
	}
	if !r.Reviewer(reviewer) {
		return fmt.Errorf("%w: %q", ErrNotReviewer, reviewer)
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO review_tokens (run_id, reviewer, token_sha256, issued) VALUES ($1, $2, $3, $4)
		ON CONFLICT (run_id, reviewer) DO UPDATE SET token_sha256 = excluded.token_sha256, issued = excluded.issued`,
		runID, reviewer, sha256hex, ts(time.Now()))
	return s.fail(err)
}

// ReviewerTokens returns the sha256 of each reviewer's access token by
// reviewer (a review frozen before tokens existed has none until one is
// issued).
func (s *Store) ReviewerTokens(ctx context.Context, runID string) (map[string]string, error) {
	return queryMap[string](ctx, s.db, `SELECT reviewer, token_sha256 FROM review_tokens WHERE run_id = $1`, runID)
}
