package review

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"

	"github.com/buildlab/budge/store"
)

// Each reviewer opens their own pages with their own token, issued when the
// sample is frozen (Freeze) or issued again (Reissue). The store keeps only
// its sha256, so a token is shown once, to whoever froze the sample or
// issued it again, and is never in a report, an export or a log.

// tokenBytes is the size of a reviewer token's randomness (160 bits).
const tokenBytes = 20

// newToken returns a fresh reviewer token and its sha256.
func newToken() (token, sum string, err error) {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("review: drawing a reviewer token: %w", err)
	}
	token = "rv-" + hex.EncodeToString(b)
	return token, TokenSHA256(token), nil
}

// TokenSHA256 is the hash under which a reviewer token is stored.
func TokenSHA256(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// Reissue issues a new token for one reviewer of a frozen review; the old
// one stops working. It is how the person running the review gets a token
// again: the store cannot give back one it only holds the hash of.
func Reissue(ctx context.Context, w store.ReviewerTokens, runID, reviewer string) (string, error) {
	token, sum, err := newToken()
	if err != nil {
		return "", err
	}
	if err := w.SetReviewerToken(ctx, runID, reviewer, sum); err != nil {
		return "", err
	}
	return token, nil
}

// Authorized reports whether token is reviewer who's own token for the
// run's review. An empty token or a reviewer without a token never is.
func Authorized(ctx context.Context, src store.ReviewerTokens, runID, who, token string) (bool, error) {
	if token == "" || who == "" {
		return false, nil
	}
	sums, err := src.ReviewerTokens(ctx, runID)
	if err != nil {
		return false, err
	}
	want, ok := sums[who]
	if !ok {
		return false, nil
	}
	return subtle.ConstantTimeCompare([]byte(TokenSHA256(token)), []byte(want)) == 1, nil
}

// Visible returns the codes reviewer who may see, by reviewer: their own
// always, the other reviewer's only once both have finished. Anyone else
// (who is not a reviewer) sees codes only once both have finished.
func (s State) Visible(who string) map[string]map[string]store.ReviewCode {
	out := map[string]map[string]store.ReviewCode{}
	if s.Review == nil {
		return out
	}
	for _, r := range s.Review.Reviewers {
		if r == who || s.BothFinished() {
			out[r] = s.Codes[r]
		}
	}
	return out
}
