package review

import (
	"context"
	"encoding/json"
	"io"
)

// Record is one line of the review export (budge review export): a sampled
// session with both reviewers' codes and notes (only once both have
// finished), the adjudication, the final code and the review status.
type Record struct {
	RunID        string  `json:"run_id"`
	SessionID    string  `json:"session_id"`
	SampledAs    string  `json:"sampled_as"`
	FailureType  string  `json:"failure_type"`
	Reviewers    any     `json:"reviewers"` // codes and notes, once both have finished
	Adjudication any     `json:"adjudication"`
	ReasonCode   *string `json:"reason_code"`
	ReviewStatus string  `json:"review_status"`
}

// Records builds the export records of a review, one per sampled session in
// sample order. s.Review must not be nil.
func (s State) Records(runID string) []Record {
	out := make([]Record, 0, len(s.Review.Items))
	for _, it := range s.Review.Items {
		rec := Record{RunID: runID, SessionID: it.SessionID, SampledAs: it.Why, FailureType: it.FailureType}
		status, code := s.Status(it.SessionID)
		rec.ReviewStatus = status
		if code != "" {
			rec.ReasonCode = &code
		}
		if s.BothFinished() {
			m := map[string]any{}
			for _, who := range s.Review.Reviewers {
				c := s.Codes[who][it.SessionID]
				m[who] = map[string]string{"code": c.Code, "note": c.Note}
			}
			rec.Reviewers = m
			if a, ok := s.Adj[it.SessionID]; ok {
				rec.Adjudication = map[string]string{"code": a.Code, "note": a.Note}
			}
		}
		out = append(out, rec)
	}
	return out
}

// Export writes the review's records as JSON lines. s.Review must not be nil.
func Export(w io.Writer, runID string, s State) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, rec := range s.Records(runID) {
		if err := enc.Encode(rec); err != nil {
			return err
		}
	}
	return nil
}

// Fields returns, for the run export (budge export), each session's
// reason_code and review_status as the run's review has them. Sessions
// outside the sample, or every session when no review was started, are
// "unreviewed" with no code.
func Fields(ctx context.Context, src Source, runID string) (func(id string) (*string, string), error) {
	s, err := Load(ctx, src, runID)
	if err != nil {
		return nil, err
	}
	return s.Fields, nil
}

// Fields returns one session's final reason code (nil when it has none) and
// its review status.
func (s State) Fields(id string) (*string, string) {
	status, code := s.Status(id)
	if code == "" {
		return nil, status
	}
	return &code, status
}
