package dataset

import (
	"errors"
	"fmt"
	"io"

	"github.com/buildlab/budge/limits"
)

// Limits on data files, so that a hostile or broken file is refused with
// its file and line instead of exhausting memory. They are far above the
// released data sets (TruthfulQA and the DialDefer files are a few
// megabytes; their longest lines, r/AIO transcripts and result histories,
// run to hundreds of kilobytes).
const (
	// MaxDataFileBytes is the largest data or result file read.
	MaxDataFileBytes = 256 << 20
	// MaxLineBytes is the longest JSONL line, or CSV record, accepted.
	MaxLineBytes = 4 << 20
	// MaxNestingDepth is the deepest nesting of arrays and objects in a
	// JSONL record, and of lists, tuples and dicts in a Python literal
	// (a conversation history).
	MaxNestingDepth = 64
)

// readDataFile reads a file whole, refusing one over MaxDataFileBytes
// before reading it.
func readDataFile(path string) ([]byte, error) {
	data, err := limits.ReadFile(path, MaxDataFileBytes)
	var big *limits.TooLarge
	var rerr *limits.ReadError
	switch {
	case errors.As(err, &big):
		return nil, Problems{tooLargeFile(path, big.Size)}
	case errors.As(err, &rerr):
		return nil, fmt.Errorf("data: %s: %w", path, rerr.Err)
	case err != nil:
		return nil, fmt.Errorf("data: %w", err)
	}
	return data, nil
}

// readAtMost reads r to its end or to one byte past MaxDataFileBytes.
func readAtMost(r io.Reader) ([]byte, error) {
	return io.ReadAll(io.LimitReader(r, MaxDataFileBytes+1))
}

func tooLargeFile(path string, size int64) Problem {
	is := fmt.Sprintf("more than %d bytes", MaxDataFileBytes)
	if size >= 0 {
		is = fmt.Sprintf("%d bytes", size)
	}
	return Problem{File: path, Reason: fmt.Sprintf("the file is %s: a data file may be at most %d MiB (MaxDataFileBytes); split it into several files in one folder", is, MaxDataFileBytes>>20)}
}

func lineTooLong(what string) string {
	return fmt.Sprintf("%s is longer than %d MiB (MaxLineBytes), the limit for one record", what, MaxLineBytes>>20)
}

func tooDeep(what string) string {
	return fmt.Sprintf("%s is nested more than %d levels deep (MaxNestingDepth), the limit for one record", what, MaxNestingDepth)
}

// jsonDepth returns how deeply the arrays and objects of a JSON text nest,
// stopping once past limit. Brackets inside strings do not count.
func jsonDepth(b []byte, limit int) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			if depth > deepest {
				deepest = depth
				if deepest > limit {
					return deepest
				}
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return deepest
}
