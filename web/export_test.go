package web

import "sync"

// HoldScoring holds the viewer's scoring of a run once it has added n
// sessions to the run's index, until release is called; reached is closed
// when it gets there. Release may be called more than once.
func HoldScoring(n int64) (reached <-chan struct{}, release func()) {
	r, gate := make(chan struct{}), make(chan struct{})
	var once, released sync.Once
	hook := func(k int64) {
		if k == n {
			once.Do(func() { close(r) })
			<-gate
		}
	}
	scoredHook.Store(&hook)
	return r, func() {
		released.Do(func() {
			scoredHook.Store(nil)
			close(gate)
		})
	}
}
