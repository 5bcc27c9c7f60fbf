package study

import (
	"context"
	"errors"
	"fmt"

	"github.com/buildlab/budge/provider"
)

// preflight asks the model's endpoint, before a run, a resume or a worker
// sends anything, whether the run's calls can succeed at all
// (provider.Preflight): a wrong model name, a refused key, nothing
// listening, an unknown host or a server that does not speak the API stop
// the run here, as invalid input, before anything is stored. A problem
// that may pass (a rate limit, a server error, no answer in time) is shown
// through c.Notice and the run goes on.
//
// It is skipped under NoPreflight, for a provider that answers in process
// (the simulator, a replay) and for one the caller passed in Control: that
// one is the caller's to check.
func preflight(ctx context.Context, c Control, prov provider.Provider) error {
	if c.NoPreflight || c.Provider != nil {
		return nil
	}
	note, err := provider.Preflight(ctx, prov)
	if err != nil {
		if _, ok := errors.AsType[*provider.PreflightError](err); ok {
			return fmt.Errorf("%w: %w\n  (nothing was sent or stored; --no-preflight skips this check)", ErrInvalid, err)
		}
		return err
	}
	if note != "" && c.Notice != nil {
		c.Notice(note)
	}
	return nil
}
