package cli

import (
	"errors"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
)

// Exit codes: the one place they are defined. The README documents them.
const (
	ExitOK         = 0 // success
	ExitError      = 1 // an unexpected failure (I/O, database)
	ExitInvalid    = 2 // invalid input: flags, decks, files, unknown run
	ExitIncomplete = 3 // the run finished with failed or missing cells, or was interrupted
	ExitBlocked    = 4 // --fail-on-block and the decision rule says investigate
	ExitSelfTest   = 5 // the checker failed its own fixtures; nothing was run
)

// usageError is an invalid command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func exitCode(err error) int {
	var ue usageError
	var probs pressure.Problems
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ue), errors.Is(err, study.ErrInvalid), errors.As(err, &probs), errors.Is(err, store.ErrNoRun):
		return ExitInvalid
	case errors.Is(err, study.ErrSelfTest):
		return ExitSelfTest
	}
	return ExitError
}
