package store

// inputError is an error in what the caller named (a run that does not
// exist, a location without a store), not a failure of the store: it says
// so with InvalidInput, which the command line maps to its exit code.
type inputError struct{ msg string }

func (e *inputError) Error() string { return e.msg }

// InvalidInput marks the error as the caller's input.
func (*inputError) InvalidInput() bool { return true }
