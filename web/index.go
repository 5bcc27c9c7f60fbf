package web

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
)

// The viewer scores a run once and keeps what its pages need in the store
// (store.WriteView): each session as the table shows it, and the run's
// headline measures. The runs list, the session table, its filters and the
// report page's counts read that, never the whole run again, so they answer
// as fast on a million sessions as on a hundred. A run is scored again
// when it changes (its status, its manifest, or, while it runs, how many
// sessions it has stored).

// indexVersion changes when what the index holds changes: an index
// written by another version is written again.
const indexVersion = "view-8"

// headline is a run's stored summary: what the runs list shows (the
// measures the run's result gives, study.ViewHeadline) and what the
// report page's counts link to (report.SessionCounts).
type headline struct {
	Protocol string `json:"protocol"`
	study.ViewHeadline
	report.SessionCounts
}

// indexer builds run indexes, one at a time, each once however many pages
// ask for it.
type indexer struct {
	mu       sync.Mutex
	building map[string]*build
	one      chan struct{} // one build at a time: scoring takes the cores
}

type build struct {
	done chan struct{}
	err  error
	// scored counts the sessions indexed so far, of planned.
	scored  atomic.Int64
	planned int
	// w is the index's writer, once it is written (nil before).
	w atomic.Pointer[store.ViewWriter]
}

// progress is how far a build got: sessions scored, and what of the index
// is committed.
func (bd *build) progress(run string) *stillScoring {
	e := &stillScoring{run: run, Scored: bd.scored.Load(), Planned: int64(bd.planned)}
	if w := bd.w.Load(); w != nil {
		e.Written = w.Progress()
	}
	return e
}

// stillScoring is the answer to a page of a run whose index is being built
// when the server's patience (Options.Patience) ran out: how far it got.
type stillScoring struct {
	run             string
	Scored, Planned int64
	// Written is what of the index is committed: when its rows are
	// placed, the session table shows them meanwhile.
	Written store.ViewProgress
}

func (e *stillScoring) Error() string {
	return fmt.Sprintf("run %s is being scored for the viewer: %d of %d sessions so far", e.run, e.Scored, e.Planned)
}

// partial says the table can show the rows written so far.
func (e *stillScoring) partial() bool { return e.Written.Placed && e.Written.Rows > 0 }

// basis says which state of a run an index describes. A running run's
// basis does not follow its sessions as they are stored (scoring a big run
// again on every page would not do): its index holds the sessions stored
// when it was scored, the table says so, and ?rescore=1 scores it again.
// It changes when the run finishes.
func (s *Server) basis(_ context.Context, run store.Run) (string, error) {
	h := fnv.New64a()
	h.Write(run.Manifest)
	fin := ""
	if run.Finished != nil {
		fin = run.Finished.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("%s|%s|%s|%x", indexVersion, run.Status, fin, h.Sum64()), nil
}

// rescore scores a run for the viewer again, whatever its index holds.
func (s *Server) rescore(ctx context.Context, run store.Run) error {
	b, err := s.basis(ctx, run)
	if err != nil {
		return err
	}
	bd := s.startBuild(run, b)
	select {
	case <-bd.done:
		return bd.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// index returns a run's current headline, scoring the run first when its
// index is missing or stale (waiting for a build another request started),
// for as long as the server's patience (Options.Patience) lasts.
func (s *Server) index(ctx context.Context, run store.Run) (*headline, error) {
	return s.indexWithin(ctx, run, s.opt.Patience)
}

// indexWithin is index waiting at most patience for the scoring (0: until
// it ends).
func (s *Server) indexWithin(ctx context.Context, run store.Run, patience time.Duration) (*headline, error) {
	h, b, err := s.storedHeadline(ctx, run)
	if err != nil || h != nil {
		return h, err
	}
	bd := s.startBuild(run, b)
	var waited <-chan time.Time
	if patience > 0 {
		t := time.NewTimer(patience)
		defer t.Stop()
		waited = t.C
	}
	select {
	case <-bd.done:
	case <-waited:
		return nil, bd.progress(run.ID)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if bd.err != nil {
		return nil, bd.err
	}
	h, _, err = s.storedHeadline(ctx, run)
	if err == nil && h == nil {
		err = fmt.Errorf("run %s changed while it was being scored for the viewer: reload", run.ID)
	}
	return h, err
}

// IndexAll scores for the viewer every run it serves whose index is
// missing or stale, one at a time, calling progress before each, then
// makes the sessions table's indexes (store.PrepareBrowse). budge view
// calls it once it listens, so the runs list has every headline soon.
func (s *Server) IndexAll(ctx context.Context, progress func(run store.Run)) error {
	runs, err := s.st.ListRuns(ctx)
	if err != nil {
		return err
	}
	for _, run := range runs {
		if !s.serves(run.ID) {
			continue
		}
		h, _, err := s.storedHeadline(ctx, run)
		if err != nil {
			return err
		}
		if h != nil {
			continue
		}
		if progress != nil {
			progress(run)
		}
		// However long it takes: the server's patience is a page's.
		if _, err := s.indexWithin(ctx, run, 0); err != nil {
			return fmt.Errorf("scoring run %s for the viewer: %w", run.ID, err)
		}
	}
	// The indexes of the sessions table a framing item's page reads (it
	// answers without them, more slowly).
	return s.st.PrepareBrowse(ctx)
}

// storedHeadline is the run's stored headline when it is current, and the
// run's basis.
func (s *Server) storedHeadline(ctx context.Context, run store.Run) (*headline, string, error) {
	b, err := s.basis(ctx, run)
	if err != nil {
		return nil, "", err
	}
	v, ok, err := s.st.ViewRunOf(ctx, run.ID)
	if err != nil || !ok || v.Basis != b {
		return nil, b, err
	}
	return decodeHeadline(v.Headline), b, nil // nil: written by something else, write it again
}

// decodeHeadline reads a stored headline; nil when it does not read.
func decodeHeadline(b []byte) *headline {
	var h headline
	if json.Unmarshal(b, &h) != nil {
		return nil
	}
	return &h
}

// startBuild starts scoring a run for the viewer, or returns the build
// already under way. The build outlives the request that started it.
func (s *Server) startBuild(run store.Run, basis string) *build {
	ix := &s.ix
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if bd := ix.building[run.ID]; bd != nil {
		return bd
	}
	bd := &build{done: make(chan struct{}), planned: run.Planned}
	ix.building[run.ID] = bd
	go func() {
		ix.one <- struct{}{}
		bd.err = s.writeIndex(context.Background(), run, basis, bd)
		<-ix.one
		ix.mu.Lock()
		delete(ix.building, run.ID)
		ix.mu.Unlock()
		close(bd.done)
	}()
	return bd
}

// building is how far the scoring of a run for the viewer got; nil when
// it is not being scored.
func (s *Server) building(id string) *stillScoring {
	s.ix.mu.Lock()
	defer s.ix.mu.Unlock()
	if bd := s.ix.building[id]; bd != nil {
		return bd.progress(id)
	}
	return nil
}

// writeIndex scores a run and stores its index: the run hands each
// session as the table shows it, counted here by the table's filters.
func (s *Server) writeIndex(ctx context.Context, run store.Run, basis string, bd *build) error {
	v, err := study.OpenViewer(ctx, s.st, run.ID)
	if err != nil {
		return err
	}
	// The state of the run this scoring reads: the report made from it
	// is the report of that state only.
	key, err := s.reportKey(ctx, run)
	if err != nil {
		return err
	}
	w, err := s.st.WriteView(ctx, run.ID)
	if err != nil {
		return err
	}
	defer w.Close()
	bd.w.Store(w)
	h := &headline{Protocol: run.Protocol}
	m, res, err := v.Index(ctx, s.st, counted{w, h, &bd.scored})
	if err != nil {
		return err
	}
	h.ViewHeadline = *m
	if run.Status != store.RunRunning { // a running run's report is never kept
		sc, err := res.View(ctx)
		if err != nil {
			return err
		}
		s.reports.put(run.ID, key, reportEntry{view: sc})
	}
	// Marks made after the sessions were added (discordant pairs, a
	// review's triggers) count as the table filters them.
	if h.Counts.Failures, err = w.Count(ctx, "failure"); err != nil {
		return err
	}
	if h.Counts.Discordant, err = w.Count(ctx, "discordant"); err != nil {
		return err
	}
	h.Sort()
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	return w.Finish(ctx, basis, b)
}

// counted is a view writer that counts each session it stores in the
// headline.
type counted struct {
	*store.ViewWriter
	h      *headline
	scored *atomic.Int64 // sessions so far, for pages that ask meanwhile
}

func (c counted) Add(ctx context.Context, v store.ViewSession) error {
	c.h.Add(v)
	n := c.scored.Add(1)
	if err := c.ViewWriter.Add(ctx, v); err != nil {
		return err
	}
	if hook := scoredHook.Load(); hook != nil {
		(*hook)(n)
	}
	return nil
}

// scoredHook, set only by tests, is called after each session a build
// adds, with how many it added so far: a test holds a build part way.
var scoredHook atomic.Pointer[func(n int64)]

// reportCache keeps, for the last few runs, the run as the viewer last
// scored it whole (its index's scoring) and its HTML report once written,
// each for the state of its run it was made from.
type reportCache struct {
	mu    sync.Mutex
	runs  map[string]reportEntry
	order []string
}

type reportEntry struct {
	key  string      // reportKey
	view *study.View // the scored run; nil when only its page is kept
	page string      // the HTML report; "" until written
}

const reportCacheSize = 4

// get is what is kept of run for the state key.
func (c *reportCache) get(run, key string) reportEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.runs[run]; ok && e.key == key {
		return e
	}
	return reportEntry{}
}

// put keeps e for run, with what is already kept for the same state that
// e lacks.
func (c *reportCache) put(run, key string, e reportEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runs == nil {
		c.runs = map[string]reportEntry{}
	}
	old, ok := c.runs[run]
	if !ok {
		c.order = append(c.order, run)
		if len(c.order) > reportCacheSize {
			delete(c.runs, c.order[0])
			c.order = c.order[1:]
		}
	}
	if ok && old.key == key {
		e.view = cmp.Or(e.view, old.view)
		e.page = cmp.Or(e.page, old.page)
	}
	e.key = key
	c.runs[run] = e
}

// scored is the run scored whole for its report and review in the state
// key: as its index's scoring left it when that is kept, else scored now.
func (s *Server) scored(ctx context.Context, run store.Run, key string) (*study.View, error) {
	if e := s.reports.get(run.ID, key); e.view != nil {
		return e.view, nil
	}
	sc, err := s.opt.LoadReport(ctx, s.st, run.ID)
	if err != nil {
		return nil, err
	}
	s.reports.put(run.ID, key, reportEntry{view: sc})
	return sc, nil
}

// reportKey names the state a run's report depends on: the run (its
// basis) and its review (codes, adjudications, reviewers finished).
func (s *Server) reportKey(ctx context.Context, run store.Run) (string, error) {
	b, err := s.basis(ctx, run)
	if err != nil {
		return "", err
	}
	if run.Status == store.RunRunning {
		// Sessions arrive: never kept.
		b += fmt.Sprintf("|%d", time.Now().UnixNano())
	}
	codes, err := s.st.ReviewCodes(ctx, run.ID)
	if err != nil {
		return "", err
	}
	adj, err := s.st.Adjudications(ctx, run.ID)
	if err != nil {
		return "", err
	}
	fin, err := s.st.ReviewFinished(ctx, run.ID)
	if err != nil {
		return "", err
	}
	rev, err := json.Marshal([]any{codes, adj, fin})
	if err != nil {
		return "", err
	}
	h := fnv.New64a()
	h.Write(rev)
	_, revErr := s.st.GetReview(ctx, run.ID)
	return fmt.Sprintf("%s|%x|%v", b, h.Sum64(), revErr == nil), nil
}
