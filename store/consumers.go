package store

import (
	"context"
	"time"
)

// Narrow views of the store for the consumers that take one: a package
// depends on the interface of what it uses, and a test hands it a fake of
// that much. *Store implements them all.

// SessionWriter stores finished sessions (runner.Sink is one).
type SessionWriter interface {
	WriteSessions(ctx context.Context, runID string, sessions []Session) error
}

// AnswerReader is what a replay answers from: a run's successful attempts
// by request, and the artifacts holding their responses.
type AnswerReader interface {
	Artifact(ctx context.Context, runID, sha string) ([]byte, error)
	Responses(ctx context.Context, runID string) (map[string]Attempt, error)
}

// ReviewReader reads a run's explanation review.
type ReviewReader interface {
	GetReview(ctx context.Context, runID string) (*Review, error)
	ReviewCodes(ctx context.Context, runID string) (map[string]map[string]ReviewCode, error)
	ReviewFinished(ctx context.Context, runID string) (map[string]time.Time, error)
	Adjudications(ctx context.Context, runID string) (map[string]ReviewCode, error)
}

// ReviewerTokens reads and replaces the hashes of reviewers' access tokens.
type ReviewerTokens interface {
	ReviewerTokens(ctx context.Context, runID string) (map[string]string, error)
	SetReviewerToken(ctx context.Context, runID, reviewer, sha256hex string) error
}

var (
	_ SessionWriter  = (*Store)(nil)
	_ AnswerReader   = (*Store)(nil)
	_ ReviewReader   = (*Store)(nil)
	_ ReviewerTokens = (*Store)(nil)
)
