package web

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/judge"
	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/stats"
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
const indexVersion = "view-7"

// headline is a run's stored summary: what the runs list shows and what the
// report page's counts link to.
type headline struct {
	Protocol string `json:"protocol"`
	Sessions int    `json:"sessions"`
	Language string `json:"language,omitempty"`
	Frozen   string `json:"frozen,omitempty"` // frozen, exploratory, or ""

	// Pressure runs.
	Baseline *stats.Rate `json:"baseline,omitempty"`
	TowardX  *stats.Rate `json:"reversal_toward_x,omitempty"`
	TowardY  *stats.Rate `json:"reversal_toward_y,omitempty"`
	Uptake   *stats.Rate `json:"uptake,omitempty"`
	Verdict  string      `json:"verdict,omitempty"`
	// Decision is the run's decision as every report opens with it: its
	// headline, the kinds of trigger that fired (each links to exactly
	// its sessions) and what the run could not assess.
	Decision *decisionHead `json:"decision,omitempty"`

	// Framing runs: the first arm's DDS with its interval.
	Arm      string      `json:"arm,omitempty"`
	DDS      *float64    `json:"dds,omitempty"`
	DDSLo    *float64    `json:"dds_lo,omitempty"`
	DDSHi    *float64    `json:"dds_hi,omitempty"`
	Accuracy *stats.Rate `json:"accuracy,omitempty"`
	Parsed   *stats.Rate `json:"parsed,omitempty"`

	// Judge runs: the run coded, and the tasks with a code.
	Source string      `json:"source_run,omitempty"`
	Coded  *stats.Rate `json:"coded,omitempty"`

	// Counts of the sessions behind each filter of the session table.
	Counts counts `json:"counts"`
	// Breakdown counts sessions by branch (framing: condition) and first
	// and final status, and pressure sessions by direction and reversal:
	// each row is a filter of the session table and how many it selects.
	Breakdown []countRow `json:"breakdown"`
	rows      map[string]int
}

// decisionHead is a pressure run's decision on the viewer's pages.
type decisionHead struct {
	Headline    string        `json:"headline"`
	Triggers    []triggerHead `json:"triggers"`
	NotAssessed []string      `json:"not_assessed"`
}

// triggerHead is one kind of trigger that fired and its sessions.
type triggerHead struct {
	Key   string `json:"key"`
	Label string `json:"label"`
	Count int    `json:"sessions"`
}

// countRow is a count and the session-table filter behind it.
type countRow struct {
	Label  string            `json:"label"`
	Filter map[string]string `json:"filter"`
	N      int               `json:"n"`
}

// tally counts a session in the breakdown row of filter (key, value pairs).
func (h *headline) tally(label string, kv ...string) {
	key := strings.Join(kv, "&")
	if i, ok := h.rows[key]; ok {
		h.Breakdown[i].N++
		return
	}
	if h.rows == nil {
		h.rows = map[string]int{}
	}
	f := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		f[kv[i]] = kv[i+1]
	}
	h.rows[key] = len(h.Breakdown)
	h.Breakdown = append(h.Breakdown, countRow{Label: label, Filter: f, N: 1})
}

// sortBreakdown puts the breakdown in a stable order: by what it counts
// (a branch, a direction), then its total before its first answers before
// its final answers.
func (h *headline) sortBreakdown() {
	rank := func(l string) (string, int, string) {
		head, rest, _ := strings.Cut(l, " · ")
		switch {
		case strings.HasPrefix(rest, "first answer"):
			return head, 1, rest
		case strings.HasPrefix(rest, "final answer"):
			return head, 2, rest
		}
		return head, 0, rest
	}
	sort.SliceStable(h.Breakdown, func(i, j int) bool {
		hi, ri, li := rank(h.Breakdown[i].Label)
		hj, rj, lj := rank(h.Breakdown[j].Label)
		if hi != hj {
			return hi < hj
		}
		if ri != rj {
			return ri < rj
		}
		return li < lj
	})
}

// counts are sessions per filter of the session table.
type counts struct {
	Failures      int `json:"failures"`
	Reversals     int `json:"reversals"`
	Discordant    int `json:"discordant"`
	ParseFailures int `json:"parse_failures"`
	Transport     int `json:"transport_failures"`
	Contradiction int `json:"contradictions"`
	NotApplied    int `json:"correction_not_applied"`
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
}

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
// index is missing or stale (waiting for a build another request started).
func (s *Server) index(ctx context.Context, run store.Run) (*headline, error) {
	h, b, err := s.storedHeadline(ctx, run)
	if err != nil || h != nil {
		return h, err
	}
	bd := s.startBuild(run, b)
	select {
	case <-bd.done:
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
// missing or stale, one at a time, calling progress before each. budge view
// calls it before it listens, so the runs list has every headline.
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
		if _, err := s.index(ctx, run); err != nil {
			return fmt.Errorf("scoring run %s for the viewer: %w", run.ID, err)
		}
	}
	return nil
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
	bd := &build{done: make(chan struct{})}
	ix.building[run.ID] = bd
	go func() {
		ix.one <- struct{}{}
		bd.err = s.writeIndex(context.Background(), run, basis)
		<-ix.one
		ix.mu.Lock()
		delete(ix.building, run.ID)
		ix.mu.Unlock()
		close(bd.done)
	}()
	return bd
}

// building reports whether a run is being scored for the viewer.
func (s *Server) building(id string) bool {
	s.ix.mu.Lock()
	defer s.ix.mu.Unlock()
	return s.ix.building[id] != nil
}

// writeIndex scores a run and stores its index.
func (s *Server) writeIndex(ctx context.Context, run store.Run, basis string) error {
	w, err := s.st.WriteView(ctx, run.ID)
	if err != nil {
		return err
	}
	var h *headline
	switch {
	case study.KindOf(run).Deck:
		h, err = indexPressure(ctx, s.st, w, run.ID)
	case run.Protocol == "judge":
		h, err = indexJudge(ctx, s.st, w, run.ID)
	default:
		var r *study.FramingResult
		if r, err = study.LoadFraming(ctx, s.st, run.ID); err == nil {
			h, err = indexFraming(ctx, w, r)
		}
	}
	if err != nil {
		return err
	}
	h.Protocol = run.Protocol
	h.sortBreakdown()
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	return w.Finish(ctx, basis, b)
}

func yesNo(b bool) string {
	if b {
		return pressure.Yes
	}
	return pressure.No
}

func ratep(r stats.Rate) *stats.Rate { return &r }

// indexPressure scores a pressure run once, storing each session as the
// table shows it, and returns the run's headline. Whether a session is
// in a discordant pair is known when its partner is scored, and whether
// a review adds it to the decision's triggers once every session is: those
// flags are marked after, a few hundred sessions at a time, so memory does
// not grow with the run.
func indexPressure(ctx context.Context, st *store.Store, w *store.ViewWriter, id string) (*headline, error) {
	h := &headline{}
	var disc []string // sessions of discordant pairs, not yet marked
	// Every discordant pair's sessions (the summary lists only the first).
	pairs := pressure.NewDiscordance(func(q pressure.Pair) { disc = append(disc, q.TowardX, q.TowardY) })
	markDisc := func() error {
		err := w.Mark(ctx, "discordant", disc)
		disc = disc[:0]
		return err
	}
	r, err := study.LoadPressureEach(ctx, st, id, func(o *pressure.Outcome) error {
		pairs.Add(o)
		if err := addPressure(ctx, w, h, o); err != nil {
			return err
		}
		// The session just scored has its table row only once added.
		if len(disc) >= 512 {
			return markDisc()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := markDisc(); err != nil {
		return nil, err
	}
	sum := r.Summary
	// Sessions a review adds to the decision's triggers.
	if err := w.MarkTrigger(ctx, pressure.TrigException, sum.Decision.AddedTo(pressure.TrigException)); err != nil {
		return nil, err
	}
	rep := r.Report()
	h.Language, h.Baseline, h.Uptake, h.Verdict = sum.Language, ratep(sum.Baseline), ratep(sum.Uptake.All), sum.Decision.Verdict
	dh := &decisionHead{Headline: sum.Decision.Headline, NotAssessed: sum.Decision.NotAssessed, Triggers: []triggerHead{}}
	for _, f := range sum.Decision.Triggers {
		dh.Triggers = append(dh.Triggers, triggerHead{Key: f.Key, Label: f.Label, Count: f.Count})
	}
	h.Decision = dh
	switch {
	case rep.Run.DeckFrozenAt != nil:
		h.Frozen = "frozen " + rep.Run.DeckFrozenAt.UTC().Format("2006-01-02")
	case rep.Run.Exploratory != nil && *rep.Run.Exploratory:
		h.Frozen = "exploratory"
	}
	for _, c := range sum.PooledByDir {
		switch c.Direction {
		case "X":
			h.TowardX = ratep(c.Reversal)
		case "Y":
			h.TowardY = ratep(c.Reversal)
		}
	}
	var err2 error
	if h.Counts.Failures, err2 = w.Count(ctx, "failure"); err2 != nil {
		return nil, err2
	}
	if h.Counts.Discordant, err2 = w.Count(ctx, "discordant"); err2 != nil {
		return nil, err2
	}
	return h, nil
}

// addPressure stores one scored session as the session table shows it.
func addPressure(ctx context.Context, w *store.ViewWriter, h *headline, o *pressure.Outcome) error {
	if o.InitialStatus == pressure.Missing {
		return nil
	}
	v := store.ViewSession{ID: o.ID(), Case: o.Case, Branch: string(o.Branch), Assignment: string(o.Assignment), Order: string(o.Order),
		First: o.Initial.Selection, FirstStatus: string(o.InitialStatus)}
	if o.Final != nil {
		v.Final = o.Final.Selection
	}
	if o.FinalStatus != nil {
		v.FinalStatus = string(*o.FinalStatus)
	}
	// Direction and reversal exist only where a pressure message was sent.
	if _, ok := o.Branch.Family(); ok && o.TargetIdentity != nil {
		v.Direction = *o.TargetIdentity
		v.Reversal = o.Turn1Reversal().Value
	}
	if o.Branch == pressure.Correction {
		if o.FinalStatus != nil && *o.FinalStatus != pressure.Transport && *o.FinalStatus != pressure.Missing {
			v.Correction = yesNo(*o.FinalStatus == pressure.Correct)
		}
		if o.ObservedUpdate != nil {
			v.UpdateObserved = yesNo(*o.ObservedUpdate)
		}
	}
	v.Contradiction = len(o.Contradictions) > 0
	v.Transport = o.InitialStatus == pressure.Transport || (o.FinalStatus != nil && *o.FinalStatus == pressure.Transport)
	v.ParseFailure = o.InitialStatus == pressure.SchemaInvalid || (o.FinalStatus != nil && *o.FinalStatus == pressure.SchemaInvalid)
	keys := pressure.TriggerKeysOf(o.Triggers())
	v.Triggers = strings.Join(keys, " ")
	v.Failure = v.Transport || len(keys) > 0
	other := o.Spec
	other.Assignment = pressure.AssignII
	if o.Assignment == pressure.AssignII {
		other.Assignment = pressure.AssignI
	}
	v.Pair = other.ID()
	h.count(v)
	return w.Add(ctx, v)
}

// count adds a session to the headline's counts.
func (h *headline) count(v store.ViewSession) {
	h.Sessions++
	c := &h.Counts
	for _, x := range []struct {
		on bool
		n  *int
	}{
		{v.Failure, &c.Failures}, {v.Reversal == pressure.Yes, &c.Reversals}, {v.Discordant, &c.Discordant},
		{v.ParseFailure, &c.ParseFailures}, {v.Transport, &c.Transport}, {v.Contradiction, &c.Contradiction},
		{v.Correction == pressure.No, &c.NotApplied},
	} {
		if x.on {
			*x.n++
		}
	}
	br := "branch"
	if v.Item != "" {
		br = "condition"
	}
	h.tally(br+" "+v.Branch, "branch", v.Branch)
	h.tally(br+" "+v.Branch+" · first answer "+v.FirstStatus, "branch", v.Branch, "first_status", v.FirstStatus)
	if v.FinalStatus != "" {
		h.tally(br+" "+v.Branch+" · final answer "+v.FinalStatus, "branch", v.Branch, "final_status", v.FinalStatus)
	}
	if v.Direction != "" {
		h.tally("pressure favours "+v.Direction+" · reversal "+v.Reversal, "direction", v.Direction, "reversal", v.Reversal)
	}
	if v.Correction != "" {
		h.tally("correction applied: "+v.Correction, "branch", v.Branch, "correction", v.Correction)
	}
}

// framingStatus is an answer's status as the table shows it: correct or
// incorrect when a choice was read, else how it failed.
func framingStatus(r framing.Reply) string {
	if r.Status != framing.StatusAnswered {
		return r.Status
	}
	if r.Correct {
		return "correct"
	}
	return "incorrect"
}

// indexFraming stores each session of a framing run as the table shows it
// (the condition in the branch column, the arm in the case column), and
// returns the run's headline.
func indexFraming(ctx context.Context, w *store.ViewWriter, r *study.FramingResult) (*headline, error) {
	h := &headline{}
	if r.Summary != nil && len(r.Summary.Arms) > 0 {
		a := r.Summary.Arms[0]
		h.Arm = a.Name
		if a.Macro != nil {
			d := a.Macro.DDS
			h.DDS, h.DDSLo, h.DDSHi = &d.Value, d.CILo, d.CIHi
		}
	}
	// A C1 condition has no speakers: one C1 session may stand against the
	// C2 sessions of several label sets. A session's pair is the one in the
	// other framing on the same item and template with the same labels and
	// mitigation when there is one, else the same mitigation, else the first.
	var acc, parsed stats.Rate
	cell := func(o framing.Spec, c framing.Condition) string {
		return o.Item + "\x00" + o.Template + "\x00" + string(c)
	}
	// Pairs are within an item: the run is read an item at a time.
	err := r.EachItem(ctx, func(it *study.ItemObservations) error {
		obs := it.Observations
		byCell := map[string][]*framing.Observation{}
		for i := range obs {
			k := cell(obs[i].Spec, obs[i].Condition)
			byCell[k] = append(byCell[k], &obs[i])
		}
		pairOf := func(o *framing.Observation) *framing.Observation {
			cands := byCell[cell(o.Spec, o.Condition.Pair())]
			var best *framing.Observation
			score := -1
			for _, c := range cands {
				sc := 0
				if c.Mitigation == o.Mitigation {
					sc += 2
				}
				if c.Labels == o.Labels {
					sc++
				}
				if sc > score {
					best, score = c, sc
				}
			}
			return best
		}
		for i := it.FromC1Run; i < len(obs); i++ {
			o := &obs[i]
			if o.Status == framing.StatusMissing {
				continue
			}
			parsed.Den++
			if o.Status == framing.StatusAnswered {
				parsed.Num++
				acc.Den++
				if o.Correct {
					acc.Num++
				}
			}
			arm := strings.Join([]string{o.Template, o.Labels, o.Mitigation}, "/")
			v := store.ViewSession{ID: o.Session, Item: o.Item, Case: strings.ReplaceAll(arm, "//", "/"), Branch: string(o.Condition),
				First: o.Choice, FirstStatus: framingStatus(o.Reply)}
			p := pairOf(o)
			if p != nil {
				v.Pair = p.Session
			}
			if a := o.AfterChallenge; a != nil {
				v.Final, v.FinalStatus = a.Choice, framingStatus(*a)
				if o.Status == framing.StatusAnswered && a.Status == framing.StatusAnswered {
					v.Reversal = yesNo(a.Choice != o.Choice)
				} else {
					v.Reversal = pressure.NotEligible
				}
			}
			v.ParseFailure = o.Status == framing.StatusUnparseable
			v.Transport = o.Status == framing.StatusFailed
			v.Failure = v.Transport || (o.Status == framing.StatusAnswered && !o.Correct)
			if p != nil && p.Status == framing.StatusAnswered && o.Status == framing.StatusAnswered {
				v.Discordant = p.Correct != o.Correct
			}
			h.count(v)
			if err := w.Add(ctx, v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	h.Accuracy, h.Parsed = &acc, &parsed
	return h, nil
}

// indexJudge stores a judge run's judgments as its session rows: the task
// as the case, its group (flip kind or failure type) as the branch, the
// presentation order and repeat, and the code read as the first answer.
func indexJudge(ctx context.Context, st *store.Store, w *store.ViewWriter, id string) (*headline, error) {
	res, err := study.Load(ctx, st, id)
	if err != nil {
		return nil, err
	}
	r, ok := res.(*study.JudgeResult)
	if !ok {
		return nil, fmt.Errorf("run %s is a %s run, not a judge run", id, res.Head().Protocol)
	}
	h := &headline{Source: r.Manifest.Source}
	coded := r.Audit.Coded
	h.Coded = &coded
	for _, rec := range r.Records() {
		v := store.ViewSession{ID: rec.Session, Case: rec.Task, Branch: rec.Group, Order: fmt.Sprintf("order %d · repeat %d", rec.Order, rec.Repeat),
			First: rec.Code, FirstStatus: rec.Status}
		v.Transport = rec.Status == judge.StatusFailed
		v.ParseFailure = rec.Status == judge.StatusUnreadable
		v.Failure = v.Transport
		h.count(v)
		if err := w.Add(ctx, v); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// reportCache keeps the last few HTML reports the viewer wrote, each for
// the state of its run it was written on.
type reportCache struct {
	mu    sync.Mutex
	pages map[string][2]string // run id -> key, page
	order []string
}

const reportCacheSize = 4

func (c *reportCache) get(run, key string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.pages[run]
	return p[1], ok && p[0] == key
}

func (c *reportCache) put(run, key, page string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pages == nil {
		c.pages = map[string][2]string{}
	}
	if _, ok := c.pages[run]; !ok {
		c.order = append(c.order, run)
		if len(c.order) > reportCacheSize {
			delete(c.pages, c.order[0])
			c.order = c.order[1:]
		}
	}
	c.pages[run] = [2]string{key, page}
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
