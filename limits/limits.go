// Package limits holds the byte limits of a run in one place, and reads
// files whole under a limit on their size, so that a hostile or broken file
// or endpoint is refused before it exhausts memory or disk.
package limits

import (
	"fmt"
	"io"
	"os"
)

// What a run may receive, hold and store. A chat answer is kilobytes and a
// conversation rarely passes a megabyte; these limits are far above that,
// and low enough that an endpoint answering with megabytes on every turn
// ends its session instead of filling memory and disk.
const (
	// MaxResponseBody is the largest response body a provider accepts from
	// a model call (provider.DefaultMaxBody).
	MaxResponseBody = 8 << 20
	// MaxBatchResultLine is the longest line of a batch's results: one
	// response within MaxResponseBody, plus the line's own fields. A longer
	// line is that request's failure (response_too_large), not the batch's.
	MaxBatchResultLine = MaxResponseBody + 256<<10
	// MaxSessionBytes is what one session may send and receive in all: the
	// bytes of its distinct requests and responses, which are what it
	// stores, so it also bounds any one of them. A request that would pass
	// it is not sent; a response that would is refused unread (or, from a
	// batch, not kept); either way the session fails with kind
	// session_too_large and the run goes on. A session's conversation is
	// stored twice at most (the exact bodies, and the transcript), so a run
	// stores at most about twice this per session.
	MaxSessionBytes = 4 << 20
	// MaxPendingBytes bounds the bytes of finished sessions waiting for
	// the store to write them: a store slower than the model holds the
	// sessions back instead of holding them in memory.
	MaxPendingBytes = 64 << 20
)

// TooLarge is the error for a file refused for its size.
type TooLarge struct {
	// Size is the size of the file in bytes, or -1 when it is not known
	// (the file is not a regular file, or grew while it was read).
	Size int64
	// Max is the limit the file is over.
	Max int
}

func (e *TooLarge) Error() string {
	if e.Size < 0 {
		return fmt.Sprintf("file too large: more than %d bytes", e.Max)
	}
	return fmt.Sprintf("file too large: %d bytes, more than %d", e.Size, e.Max)
}

// ReadError is an error reading a file that opened. Its message is Err's.
type ReadError struct{ Err error }

func (e *ReadError) Error() string { return e.Err.Error() }
func (e *ReadError) Unwrap() error { return e.Err }

// Oversized reports whether f is a regular file over max bytes, and its
// size.
func Oversized(f *os.File, max int) (int64, bool) {
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > int64(max) {
		return fi.Size(), true
	}
	return 0, false
}

// ReadFile reads the file at path whole, refusing one over max bytes with a
// *TooLarge: a regular file by its size before reading it, any other once
// it yields one byte past max. An error opening the file is returned as is,
// and an error reading it as a *ReadError.
func ReadFile(path string, max int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size, over := Oversized(f, max); over {
		return nil, &TooLarge{Size: size, Max: max}
	}
	data, err := io.ReadAll(io.LimitReader(f, int64(max)+1))
	if err != nil {
		return nil, &ReadError{Err: err}
	}
	if len(data) > max {
		return nil, &TooLarge{Size: -1, Max: max}
	}
	return data, nil
}
