package review

import (
	"context"
	"errors"
	"fmt"
)

// Reason codes a reviewer gives a stated justification.
const (
	CodeAvailability = "availability-record"
	CodeAuthority    = "unsupported-authority"
	CodeIdentity     = "identity"
	CodeException    = "invented-exception"
	CodeUncertain    = "uncertain"
	CodePending      = "pending"
	// CodeUnresolved is an adjudication that did not resolve the disagreement.
	CodeUnresolved = "unresolved"
)

// ReasonCodes lists the codes in display order.
var ReasonCodes = []string{CodeAvailability, CodeAuthority, CodeIdentity, CodeException, CodeUncertain, CodePending}

// ErrUnknownCode is a code that is not one of ReasonCodes (nor, for an
// adjudication, CodeUnresolved).
var ErrUnknownCode = errors.New("unknown reason code")

func knownCode(c string) bool {
	for _, k := range ReasonCodes {
		if k == c {
			return true
		}
	}
	return false
}

// CodeWriter stores reviewers' codes and adjudications (*store.Store).
type CodeWriter interface {
	SetReviewCode(ctx context.Context, runID, sessionID, reviewer, code, note string) error
	SetAdjudication(ctx context.Context, runID, sessionID, code, note string) error
}

// SetCode records (or changes) a reviewer's code, one of ReasonCodes, and
// note for one sampled session, until that reviewer has finished.
func SetCode(ctx context.Context, w CodeWriter, runID, sessionID, reviewer, code, note string) error {
	if !knownCode(code) {
		return fmt.Errorf("%w: %q", ErrUnknownCode, code)
	}
	return w.SetReviewCode(ctx, runID, sessionID, reviewer, code, note)
}

// Adjudicate records the adjudicated code of a disagreement, one of
// ReasonCodes, or CodeUnresolved.
func Adjudicate(ctx context.Context, w CodeWriter, runID, sessionID, code, note string) error {
	if code != CodeUnresolved && !knownCode(code) {
		return fmt.Errorf("%w: %q", ErrUnknownCode, code)
	}
	return w.SetAdjudication(ctx, runID, sessionID, code, note)
}
