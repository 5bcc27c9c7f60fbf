package cli

import (
	"errors"
	"fmt"
	"testing"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/pressure/calibrate"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
)

// Every package's invalid-input and self-test errors map to their exit
// code through the mark the error carries, wrapped or not.
func TestExitCodeFromMarkedErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err  error
		want int
	}{
		{nil, ExitOK},
		{errors.New("disk full"), ExitError},
		{usageError{"bad flag"}, ExitInvalid},
		{study.ErrInvalid, ExitInvalid},
		{fmt.Errorf("deck x: %w", study.ErrInvalid), ExitInvalid},
		{pressure.Problems{{}}, ExitInvalid},
		{fmt.Errorf("%w: %w", errors.New("load"), pressure.Problems{{}}), ExitInvalid},
		{fmt.Errorf("ref: %w", store.ErrNoRun), ExitInvalid},
		{store.ErrNoStore, ExitInvalid},
		{fmt.Errorf("%w: cases", calibrate.ErrInvalid), ExitInvalid},
		{fmt.Errorf("%w: refusing", study.ErrSelfTest), ExitSelfTest},
		{codedError{ExitRejected, study.ErrInvalid}, ExitRejected},
		{study.ErrCostLimit, ExitError},
	}
	for _, c := range cases {
		if got := exitCode(c.err); got != c.want {
			t.Errorf("exitCode(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}
