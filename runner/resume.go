package runner

import "github.com/buildlab/budge/store"

// LogLines returns the JSONL log lines Run writes for a stored session: a
// resumed run uses them to complete a log that a kill cut short. The format
// is the store's (store.LogLines).
func LogLines(runID string, se store.Session) []byte {
	return store.LogLines(runID, se)
}
