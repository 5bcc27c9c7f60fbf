package study

// inputError is bad input (decks, flags, files): it says so with
// InvalidInput, which the command line maps to its exit code, without
// naming this package's sentinel.
type inputError struct{ msg string }

func (e *inputError) Error() string { return e.msg }

// InvalidInput marks the error as the caller's input.
func (*inputError) InvalidInput() bool { return true }

// selfTestError is the answer checker failing its own fixtures.
type selfTestError struct{ msg string }

func (e *selfTestError) Error() string { return e.msg }

// SelfTestFailed marks the error as the checker's own failure.
func (*selfTestError) SelfTestFailed() bool { return true }
