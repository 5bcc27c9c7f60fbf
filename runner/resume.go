package runner

import "github.com/buildlab/budge/store"

type discardLog struct{}

func (discardLog) WriteLines([]byte) error { return nil }
func (discardLog) Flush() error            { return nil }

// LogLines returns the JSONL log lines Run writes for a stored session: a
// resumed run uses them to complete a log that a kill cut short.
func LogLines(runID string, se store.Session) []byte {
	return logLines(Config{RunID: runID, Log: discardLog{}}, se)
}
