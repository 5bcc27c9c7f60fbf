package study

import (
	"context"
	"fmt"
	"sort"

	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/runner"
	"github.com/buildlab/budge/store"
)

// resumeProvider opens the recorded model (at the recorded base URL unless
// the caller gives another) and refuses one that would mix models.
func resumeProvider(c Control, h *Header, p protocol) (provider.Provider, error) {
	prov := c.Provider
	if prov == nil {
		eo := c.Endpoint
		if eo.BaseURL == "" {
			eo.BaseURL = baseURLOf(h.Provider)
		}
		var err error
		if prov, err = p.open(eo); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
	}
	info := prov.Info()
	if info.Name != h.Provider.Name || info.Model != h.Model {
		return nil, fmt.Errorf("%w: run %s was made with %s (%s); resuming it with %s (%s) would mix models", ErrInvalid, h.RunID, h.Model, h.Provider.Name, info.Model, info.Name)
	}
	if ch, ok := p.(checker); ok {
		if err := ch.check(info); err != nil {
			return nil, err
		}
	}
	return prov, nil
}

// undone is what a stored run has left to run: the plan positions of the
// sessions it has not stored, one bit each, and the incarnations earlier
// processes left of those (the sessions they had attempts of), so memory
// holds a bit per planned session and an entry per session in flight.
type undone struct {
	bits         []uint64
	left         int
	incarnations map[string]int
}

func (u *undone) has(i int) bool { return u.bits[i/64]&(1<<(i%64)) != 0 }

// allOf is every one of planned sessions left to run, as in a new run.
func allOf(planned int) *undone {
	u := &undone{bits: make([]uint64, (planned+63)/64), left: planned}
	for i := range planned {
		u.bits[i/64] |= 1 << (i % 64)
	}
	return u
}

// remaining reads what run id, of planned sessions, has left to run.
func remaining(ctx context.Context, st *store.Store, id string, planned int) (*undone, error) {
	u := allOf(planned)
	err := st.EachStoredSeq(ctx, id, func(seq int) {
		if seq >= 0 && seq < planned && u.has(seq) {
			u.bits[seq/64] &^= 1 << (seq % 64)
			u.left--
		}
	})
	if err != nil {
		return nil, err
	}
	if u.incarnations, err = st.PendingIncarnations(ctx, id); err != nil {
		return nil, err
	}
	return u, nil
}

// repairLog mends a run's log before more is appended to it: a kill can
// cut its last line, or lose the records of sessions the database had
// already committed. The stored sessions are read a batch at a time.
func repairLog(ctx context.Context, st *store.Store, id string) error {
	logged, err := st.RepairLog(id)
	if err != nil {
		return err
	}
	var lost []byte
	err = st.EachSessions(ctx, id, scoreBatch, func(batch []store.Session) error {
		for _, se := range batch {
			if !logged.Has(se.ID) {
				lost = append(lost, runner.LogLines(id, se)...)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return st.AppendLog(id, lost)
}

// transportFailed lists the sessions of a run stored as failed for a
// reason that says nothing about the model (rate limits, server errors,
// timeouts, broken connections and bodies), in order.
func transportFailed(ctx context.Context, st *store.Store, id string) ([]string, error) {
	kinds, err := st.FailedKinds(ctx, id)
	if err != nil {
		return nil, err
	}
	var out []string
	for sid, k := range kinds {
		if provider.Kind(k).Infrastructure() {
			out = append(out, sid)
		}
	}
	sort.Strings(out)
	return out, nil
}
