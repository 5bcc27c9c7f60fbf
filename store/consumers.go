package store

import (
	"context"
	"encoding/json"
	"time"
)

// Narrow views of the store for its consumers: a package depends on the
// interface of what it uses, and a test hands it a fake of that much.
// *Store implements them all.

// RunReader finds and reads runs.
type RunReader interface {
	Resolve(ctx context.Context, ref string) (string, error)
	GetRun(ctx context.Context, id string) (Run, error)
	ListRuns(ctx context.Context) ([]Run, error)
	RunsOnDeck(ctx context.Context, hash string) ([]Run, error)
	Deck(ctx context.Context, hash string) (source string, content []byte, err error)
}

// RunWriter records runs and their ends.
type RunWriter interface {
	CreateRun(ctx context.Context, r Run, deckSource string, deck []byte) error
	FinishRun(ctx context.Context, id, status string, manifest json.RawMessage) error
	ReopenRun(ctx context.Context, id string, manifest json.RawMessage) error
}

// RunLeases keeps a run to one process at a time.
type RunLeases interface {
	AcquireLease(ctx context.Context, runID string, h Holder) (*Lease, error)
	CreateRunLeased(ctx context.Context, r Run, deckSource string, deck []byte, h Holder) (*Lease, error)
	RunLease(ctx context.Context, runID string) (LeaseInfo, bool, error)
}

// SessionReader reads stored sessions.
type SessionReader interface {
	Sessions(ctx context.Context, runID string) ([]Session, error)
	Session(ctx context.Context, runID, id string) (Session, error)
	SessionPage(ctx context.Context, runID string, f SessionFilter, offset, limit int) ([]SessionRow, int, error)
	StoredIDs(ctx context.Context, runID string) (map[string]string, error)
	OrphanAttempts(ctx context.Context, runID string) (map[string]int, error)
	EachStoredSeq(ctx context.Context, runID string, fn func(seq int)) error
	PendingIncarnations(ctx context.Context, runID string) (map[string]int, error)
}

// SessionWriter stores finished sessions (runner.Sink is one).
type SessionWriter interface {
	WriteSessions(ctx context.Context, runID string, sessions []Session) error
}

// ArtifactReader reads stored artifacts back by their sha256.
type ArtifactReader interface {
	Artifact(ctx context.Context, runID, sha string) ([]byte, error)
}

// AnswerReader is what a replay answers from: a run's successful attempts
// by request, and the artifacts holding their responses.
type AnswerReader interface {
	ArtifactReader
	Responses(ctx context.Context, runID string) (map[string]Attempt, error)
}

// RunLogs writes and repairs run logs.
type RunLogs interface {
	OpenLog(runID string) (*Log, error)
	AppendLog(runID string, lines []byte) error
	RepairLog(runID string) (*Logged, error)
}

// FreezeStore freezes decks and reads the freezes.
type FreezeStore interface {
	FreezeDeck(ctx context.Context, f Freeze, content []byte) (rec Freeze, already bool, err error)
	Frozen(ctx context.Context, hash string) (Freeze, bool, error)
	FrozenByName(ctx context.Context, name string) ([]Freeze, error)
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

// ReviewStore reads and records a run's explanation review.
type ReviewStore interface {
	ReviewReader
	CreateReview(ctx context.Context, r Review) error
	SetReviewCode(ctx context.Context, runID, sessionID, reviewer, code, note string) error
	FinishReview(ctx context.Context, runID, reviewer string) error
	SetAdjudication(ctx context.Context, runID, sessionID, code, note string) error
}

var (
	_ RunReader      = (*Store)(nil)
	_ RunWriter      = (*Store)(nil)
	_ RunLeases      = (*Store)(nil)
	_ SessionReader  = (*Store)(nil)
	_ SessionWriter  = (*Store)(nil)
	_ ArtifactReader = (*Store)(nil)
	_ AnswerReader   = (*Store)(nil)
	_ RunLogs        = (*Store)(nil)
	_ FreezeStore    = (*Store)(nil)
	_ ReviewStore    = (*Store)(nil)
	_ ReviewerTokens = (*Store)(nil)
)
