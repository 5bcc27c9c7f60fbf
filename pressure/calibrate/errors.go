package calibrate

// inputError is bad input to a calibration (options, deck, grid): it says
// so with InvalidInput, which the command line maps to its exit code.
type inputError struct{ msg string }

func (e *inputError) Error() string { return e.msg }

// InvalidInput marks the error as the caller's input.
func (*inputError) InvalidInput() bool { return true }
