package cli

import (
	"errors"
	"fmt"
)

// Exit codes: the one place they are defined. docs/operations.md documents them.
const (
	ExitOK         = 0 // success
	ExitError      = 1 // an unexpected failure (I/O, database)
	ExitInvalid    = 2 // invalid input: flags, decks, files, unknown run
	ExitIncomplete = 3 // the run finished with failed or missing cells, or was interrupted
	ExitBlocked    = 4 // --fail-on-block and the decision rule says investigate
	ExitSelfTest   = 5 // the checker failed its own fixtures; nothing was run
	ExitUnmeasured = 6 // invalid result: too few answers were read to measure the judge
	ExitRejected   = 7 // compare --fail-on-reject and a pair's verdict rejects the change
)

// usageError is an invalid command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// codedError carries an exit code decided by a command (an incomplete run,
// a blocked decision) with an optional message.
type codedError struct {
	code int
	err  error
}

func (e codedError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e codedError) Unwrap() error { return e.err }

// invalidInput is an error a package marks as the user's input (a deck's
// problems, an unknown run, no store, a bad option): exit 2.
type invalidInput interface{ InvalidInput() bool }

// selfTestFailed is an error a package marks as the answer checker failing
// its own fixtures: exit 5.
type selfTestFailed interface{ SelfTestFailed() bool }

// exitCode is the exit code of a command's error, from what the error says
// it is: the packages mark their errors, and this is where the marks become
// codes.
func exitCode(err error) int {
	var ce codedError
	var ue usageError
	var in invalidInput
	var st selfTestFailed
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ce):
		return ce.code
	case errors.As(err, &ue), errors.As(err, &in):
		return ExitInvalid
	case errors.As(err, &st):
		return ExitSelfTest
	}
	return ExitError
}

// errorMessage is what is printed for a command's error: nothing for none,
// or for an exit code without a message.
func errorMessage(err error) string {
	var ce codedError
	if err == nil || errors.As(err, &ce) && ce.err == nil {
		return ""
	}
	return err.Error()
}
