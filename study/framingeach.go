package study

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/store"
)

// ItemObservations is one item's scored sessions: the C1 answers a fixed-C1
// run takes from another run first (FromC1Run of them, by template and
// condition; that run is Manifest.BaselineC1.Run), then the run's own in
// plan order, with the trace artifact of each by session id.
type ItemObservations struct {
	Index        int
	Observations []framing.Observation
	FromC1Run    int
	Traces       map[string]string
}

func (fp *framingRun) unscored(ctx context.Context, st *store.Store, run store.Run) (Result, error) {
	return fp.result(ctx, st, run)
}

func (fp *framingRun) result(ctx context.Context, st *store.Store, run store.Run) (*FramingResult, error) {
	fp.m.Fingerprint = fp.fingerprint()
	res := &FramingResult{Run: run, Manifest: *fp.m, Snapshot: fp.snap, st: st, p: fp}
	if fp.snap.Design.FixedC1 != "" {
		if err := fp.attachBase(ctx, st, res); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// readable says why the result's sessions cannot be read again, if so.
func (r *FramingResult) readable() error {
	if r.st == nil || r.p == nil {
		return fmt.Errorf("run %s: its sessions cannot be read again: the result was not read from a store", r.Run.ID)
	}
	return nil
}

// Each scores the run's own planned sessions again from its store, one at a
// time in plan order, and hands fn each observation with the sha256 of its
// trace artifact ("" for a session never stored); an error from fn stops
// it and is returned. Scoring is deterministic, so these are the
// observations the run's measures counted; memory holds one batch of
// transcripts, never the run.
func (r *FramingResult) Each(ctx context.Context, fn func(o *framing.Observation, trace string) error) error {
	if err := r.readable(); err != nil {
		return err
	}
	return eachStored(ctx, r.st, r.p, func(_ int, o *framing.Observation, trace string) error { return fn(o, trace) })
}

// EachItem hands fn every item's observations in item order (Item for
// each), reading the run's sessions a batch at a time: memory holds one
// item's observations.
func (r *FramingResult) EachItem(ctx context.Context, fn func(it *ItemObservations) error) error {
	if err := r.readable(); err != nil {
		return err
	}
	per := r.p.plan.PerItem()
	if per == 0 {
		return nil
	}
	var cur *ItemObservations
	return eachStored(ctx, r.st, r.p, func(i int, o *framing.Observation, trace string) error {
		if i%per == 0 {
			var err error
			if cur, err = r.baselineOf(ctx, i/per); err != nil {
				return err
			}
		}
		cur.Observations = append(cur.Observations, *o)
		if trace != "" {
			cur.Traces[o.Session] = trace
		}
		if i%per == per-1 {
			return fn(cur)
		}
		return nil
	})
}

// Item is the observations of the item at index, its sessions read one by
// one.
func (r *FramingResult) Item(ctx context.Context, index int) (*ItemObservations, error) {
	if err := r.readable(); err != nil {
		return nil, err
	}
	if index < 0 || index >= len(r.Snapshot.Items) {
		return nil, fmt.Errorf("run %s has no item %d", r.Run.ID, index)
	}
	out, err := r.baselineOf(ctx, index)
	if err != nil {
		return nil, err
	}
	per := r.p.plan.PerItem()
	for i := index * per; i < (index+1)*per; i++ {
		se, err := StoredSession(ctx, r.st, r.Run.ID, r.p.plan.At(i).ID())
		if err != nil {
			return nil, err
		}
		o, trace := r.p.score(i, se)
		out.Observations = append(out.Observations, o)
		if trace != "" {
			out.Traces[o.Session] = trace
		}
	}
	return out, nil
}

// StoredSession is a run's stored session id, or nil when it was never
// stored.
func StoredSession(ctx context.Context, st *store.Store, run, id string) (*store.Session, error) {
	se, err := st.Session(ctx, run, id)
	switch {
	case errors.Is(err, store.ErrNoSession):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return &se, nil
}

// baselineOf starts an item's observations with the C1 answers a fixed-C1
// run takes from the other run, read from the store one by one.
func (r *FramingResult) baselineOf(ctx context.Context, item int) (*ItemObservations, error) {
	out := &ItemObservations{Index: item, Traces: map[string]string{}}
	b := r.p.base
	if b == nil {
		return out, nil
	}
	for _, pos := range b.pair.For(item) {
		se, err := StoredSession(ctx, r.st, b.info.Run, b.run.plan.At(pos).ID())
		if err != nil {
			return nil, err
		}
		o, trace := b.run.score(pos, se)
		b.pair.Reindex(&o, item)
		out.Observations = append(out.Observations, o)
		if trace != "" {
			out.Traces[o.Session] = trace
		}
	}
	out.FromC1Run = len(out.Observations)
	return out, nil
}

// Observations are the run's own scored sessions, in plan order: for small
// runs and tests, as they grow with the run (Each does not).
func (r *FramingResult) Observations(ctx context.Context) ([]framing.Observation, error) {
	return collect(ctx, r.Each)
}

// Paired is every observation the run's measures pair, those a fixed-C1
// run takes from the other run (by template, item and condition) and then
// its own (in plan order), with their traces: for small runs and tests, as
// they grow with the run (EachItem does not).
func (r *FramingResult) Paired(ctx context.Context) ([]framing.Observation, map[string]string, error) {
	var base, own []framing.Observation
	traces := map[string]string{}
	err := r.EachItem(ctx, func(it *ItemObservations) error {
		base = append(base, it.Observations[:it.FromC1Run]...)
		own = append(own, it.Observations[it.FromC1Run:]...)
		for k, v := range it.Traces {
			traces[k] = v
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if r.p.base != nil {
		tmpl := map[string]int{}
		for i, t := range r.Snapshot.Design.Templates {
			tmpl[t.Name] = i
		}
		slices.SortStableFunc(base, func(a, b framing.Observation) int { return tmpl[a.Template] - tmpl[b.Template] })
	}
	return append(base, own...), traces, nil
}

// Observation scores the run's own session id again from the store (a planned
// session never stored is scored as missing); ok is false when the run
// plans no such session.
func (r *FramingResult) Observation(ctx context.Context, id string) (o *framing.Observation, ok bool, err error) {
	if err := r.readable(); err != nil {
		return nil, false, err
	}
	for i := range r.p.plan.Len() {
		if r.p.plan.At(i).ID() != id {
			continue
		}
		se, err := StoredSession(ctx, r.st, r.Run.ID, id)
		if err != nil {
			return nil, false, err
		}
		out, _ := r.p.score(i, se)
		return &out, true, nil
	}
	return nil, false, nil
}
