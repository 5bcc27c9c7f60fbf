package store

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Log appends JSON lines to a run's log.jsonl. Each record is written whole;
// the log is an append-only companion of the database, never its source.
type Log struct {
	f *os.File
	w *bufio.Writer
}

// OpenLog opens the run's log for appending.
func (s *Store) OpenLog(runID string) (*Log, error) {
	f, err := os.OpenFile(filepath.Join(s.RunDir(runID), "log.jsonl"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: log: %w", err)
	}
	return &Log{f: f, w: bufio.NewWriterSize(f, 1<<16)}, nil
}

// Write appends one record.
func (l *Log) Write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = l.w.Write(b)
	return err
}

// WriteLines appends already encoded lines, each ending in a newline.
func (l *Log) WriteLines(b []byte) error {
	_, err := l.w.Write(b)
	return err
}

// Flush pushes buffered records to the file.
func (l *Log) Flush() error { return l.w.Flush() }

// Close flushes and closes the log.
func (l *Log) Close() error {
	if err := l.w.Flush(); err != nil {
		l.f.Close()
		return err
	}
	return l.f.Close()
}
