package runner

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider"
)

// waves is a batching provider as provider/batch is one: it answers what
// an earlier wave answered (or failed), and parks any other call for the
// next wave, noting where each session parked.
type waves struct {
	mu      sync.Mutex
	results map[string]error // by call key and attempt; nil is an answer
	failing map[string]bool  // call keys whose first attempt fails in its wave
	held    []string         // the next wave's calls
	parked  map[int]Point    // by session Seq
	asked   int              // calls asked, replays included
}

func (w *waves) Info() provider.Info { return provider.Info{Name: "waves", Model: "fake-model"} }

func (w *waves) Chat(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	c, _ := provider.CallOf(ctx)
	k := fmt.Sprintf("%s#%d", callKey(req), c.Attempt)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.asked++
	if err, ok := w.results[k]; ok {
		if err != nil {
			return nil, err
		}
		return &chat.Response{Message: chat.Message{Role: chat.Assistant, Content: "re " + callKey(req)}, Usage: chat.Usage{InputTokens: 3, OutputTokens: 2}}, nil
	}
	w.held = append(w.held, k)
	w.parked[c.Seq] = Point{c.Turn, c.Attempt}
	return nil, ErrParked
}

// wave answers the held calls: the first attempt of a failing call fails.
func (w *waves) wave() map[int]Point {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, k := range w.held {
		var err error
		for f := range w.failing {
			if k == f+"#1" {
				err = &provider.Error{Kind: provider.Transient, Msg: "failed in its batch"}
			}
		}
		w.results[k] = err
	}
	w.held = nil
	p := w.parked
	w.parked = map[int]Point{}
	return p
}

// A batch run's passes: a session whose call parks ends the pass unstored
// and uncounted; run again with where it parked, it rebuilds its earlier
// calls without counting, paying, or waiting for them again, and ends as a
// session run in one go would, a failed attempt in a wave included.
func TestParkedSessionsRunAgainInPasses(t *testing.T) {
	var p plan
	jobs := p.jobs(3, 1, 2)
	w := &waves{results: map[string]error{}, failing: map[string]bool{"s00/2": true}, parked: map[int]Point{}}
	sk := &sink{}
	var sl sleeps
	cfg := config(&sl)
	cfg.Batch = true
	var total Stats
	todo := jobs
	for pass := 1; len(todo) > 0; pass++ {
		if pass > 10 {
			t.Fatal("the passes do not end")
		}
		st := run(t, cfg, w, sk, todo)
		if st.Parked != len(w.held) {
			t.Errorf("pass %d: %d sessions parked, %d calls held", pass, st.Parked, len(w.held))
		}
		total.Done += st.Done
		total.Attempts += st.Attempts
		total.Failures += st.Failures
		at := w.wave()
		todo = nil
		for _, j := range jobs {
			if pt, ok := at[j.Seq]; ok {
				j.Parked = pt
				todo = append(todo, j)
			}
		}
	}
	ss := sk.byID(t)
	if total.Done != 3 || len(ss) != 3 {
		t.Fatalf("%d sessions done, %d stored; want 3, each stored once", total.Done, len(ss))
	}
	// 6 calls and one failed attempt, each counted once however often
	// a session was rebuilt.
	if total.Attempts != 7 || total.Failures != 1 {
		t.Errorf("%d attempts, %d failures counted; want 7 and 1", total.Attempts, total.Failures)
	}
	s0 := ss["s00"]
	var got []string
	for _, a := range s0.Attempts {
		got = append(got, fmt.Sprintf("%d/%d %s", a.Call, a.Attempt, a.Outcome))
	}
	if want := []string{"1/1 ok", "2/1 error", "2/2 ok", "3/1 ok"}; !slices.Equal(got, want) {
		t.Errorf("attempts of s00: %v, want %v", got, want)
	}
	if s0.InputTokens != 9 || len(s0.Messages) != 6 || s0.Status != "complete" {
		t.Errorf("s00: %d input tokens, %d messages, status %s; want 9, 6, complete", s0.InputTokens, len(s0.Messages), s0.Status)
	}
	if d := sl.all(); len(d) != 0 {
		t.Errorf("the retry waited %v: in a batch run the next wave stands for the wait", d)
	}
	if w.asked <= total.Attempts {
		t.Errorf("the provider was asked %d times for %d counted attempts: the sessions were not rebuilt", w.asked, total.Attempts)
	}
}
