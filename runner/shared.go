package runner

import (
	"fmt"
	"sync"

	"github.com/buildlab/budge/provider"
)

// SharedFailureAfter is how many of a run's first calls must fail with the
// same kind and status for the run to say, as it happens, that its calls
// fail for one shared reason.
const SharedFailureAfter = 5

// sharedFailure watches a run's first calls: when the first
// SharedFailureAfter all fail alike (the same kind and HTTP status), it
// tells Config.Notice once, with the first failure's message, so that a run
// whose every call fails the same way (a wrong model, a refused key) does
// not go on silently to its end. Any success, or a different failure,
// stops the watch.
type sharedFailure struct {
	notice func(string)

	mu       sync.Mutex
	watching bool
	n        int
	kind     provider.Kind
	status   int
	first    string
}

func newSharedFailure(notice func(string)) *sharedFailure {
	return &sharedFailure{notice: notice, watching: notice != nil}
}

// report records one finished call: pe is nil for a success.
func (s *sharedFailure) report(pe *provider.Error) {
	s.mu.Lock()
	if !s.watching {
		s.mu.Unlock()
		return
	}
	switch {
	case pe == nil || pe.Kind == provider.Canceled:
		s.watching = pe != nil // a cancelled call says nothing either way
		s.mu.Unlock()
		return
	case s.n == 0:
		s.kind, s.status, s.first = pe.Kind, pe.Status, pe.Error()
	case pe.Kind != s.kind || pe.Status != s.status:
		s.watching = false
		s.mu.Unlock()
		return
	}
	s.n++
	if s.n < SharedFailureAfter {
		s.mu.Unlock()
		return
	}
	s.watching = false
	msg := fmt.Sprintf("the first %d calls all failed the same way: %s\nthe run goes on and may fail alike to its end: Ctrl-C stops it (it stays resumable with --resume)", s.n, s.first)
	s.mu.Unlock()
	s.notice(msg)
}
