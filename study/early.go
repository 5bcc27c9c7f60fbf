package study

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/store"
)

// early scores a run's sessions as the writer stores them, instead of
// reading them all back once the run is over: a session is scored when
// every session before it in plan order is stored, so the protocol's
// scorer sees the sessions in plan order, as scoreStored hands them, and
// only the sessions stored ahead of that point wait in memory (the
// schedule shuffles sessions within a repeat, so they are about a repeat
// and the calls in flight). At the end its scores stand for the stored
// ones only when every planned session was stored by this process as its
// first incarnation; otherwise (a resume, a session interrupted, another
// worker, more sessions waiting than maxAhead) the run is scored from the
// store as before, and what early scored is dropped.
type early struct {
	in    chan []store.Session
	done  chan struct{}
	close func() // ends the scoring goroutine (once)

	// Owned by the scoring goroutine until done is closed.
	plan  *inPlan
	ahead map[int]store.Session
	off   bool // gave up: the store scores the run
}

// maxAhead bounds the sessions stored ahead of the next one in plan order
// that early keeps; past it, it gives up.
const maxAhead = 4096

// newEarly starts scoring p's sessions as they are stored.
func newEarly(p protocol) *early {
	e := &early{in: make(chan []store.Session, 4), done: make(chan struct{}), plan: newInPlan(p, p.scorer()), ahead: map[int]store.Session{}}
	e.close = sync.OnceFunc(func() {
		close(e.in)
		<-e.done
	})
	go e.loop()
	return e
}

// stored is the runner's Config.Stored: it copies what scoring reads of
// each session, the tool calls' arguments as the store keeps them.
func (e *early) stored(batch []store.Session) {
	out := make([]store.Session, 0, len(batch))
	for _, se := range batch {
		se.Artifacts = nil
		se.Messages = storedMessages(se.Messages)
		out = append(out, se)
	}
	e.in <- out
}

// storedMessages is msgs as the store reads them back: tool calls go
// through their JSON column, which compacts their arguments.
func storedMessages(msgs []chat.Entry) []chat.Entry {
	copied := false
	for i, m := range msgs {
		if len(m.ToolCalls) == 0 {
			continue
		}
		b, err := json.Marshal(m.ToolCalls)
		var calls []chat.ToolCall
		if err == nil && json.Unmarshal(b, &calls) == nil {
			if !copied {
				msgs, copied = slices.Clone(msgs), true
			}
			msgs[i].ToolCalls = calls
		}
	}
	return msgs
}

func (e *early) loop() {
	defer close(e.done)
	for batch := range e.in {
		if e.off {
			continue
		}
		for _, se := range batch {
			if !e.take(se) {
				e.off, e.ahead = true, nil
				break
			}
		}
	}
}

// take keeps se and scores the sessions that are next in plan order; it
// says false when early must give up.
func (e *early) take(se store.Session) bool {
	switch {
	case se.Status == store.SessionInterrupted:
		// Its cell stays missing (only its attempts are stored).
		return false
	case se.Incarnation != 1:
		// Earlier incarnations' attempts are stored with it.
		return false
	case !e.plan.fits(&se):
		return false
	}
	if _, dup := e.ahead[se.Seq]; dup {
		return false
	}
	e.ahead[se.Seq] = se
	for {
		s, ok := e.ahead[e.plan.next]
		if !ok {
			break
		}
		delete(e.ahead, e.plan.next)
		e.plan.score(&s)
	}
	if stopped(e.plan.sc) != nil {
		return false
	}
	return len(e.ahead) <= maxAhead
}

// scored waits for the sessions handed to early and returns its scorer and
// tally when they stand for the stored run: every planned session scored,
// by the only worker the run had.
func (e *early) scored(h *Header) (sessionScorer, *tallied, bool) {
	if e == nil {
		return nil, nil, false
	}
	e.close()
	if e.off || e.plan.next != e.plan.planned || len(h.Net.Workers) > 1 {
		return nil, nil, false
	}
	return e.plan.sc, e.plan.t, true
}

// earlyRuns counts the runs scored as they were stored (tests read it).
var earlyRuns atomic.Int64

// scoreRun scores a finished run: from what early scored when it stands
// for the stored run, otherwise from the store.
func scoreRun(ctx context.Context, st *store.Store, p protocol, e *early) (sessionScorer, error) {
	if sc, t, ok := e.scored(p.head()); ok {
		earlyRuns.Add(1)
		return settle(ctx, st, p, sc, t)
	}
	return scoreStored(ctx, st, p)
}
