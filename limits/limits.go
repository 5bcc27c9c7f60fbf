// Package limits reads files whole under a limit on their size, so that a
// hostile or broken file is refused before it exhausts memory.
package limits

import (
	"fmt"
	"io"
	"os"
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
