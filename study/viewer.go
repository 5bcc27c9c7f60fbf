package study

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/judge"
	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/review"
	"github.com/buildlab/budge/stats"
	"github.com/buildlab/budge/store"
)

// The viewer (package web) shows every run through what this file gives
// it: how a run's session table is laid out, each session scored as its
// run scores it, and the run's index (each session as the table shows it,
// and the headline measures). It never asks which protocol a run has.

// Table is how the viewer's session table lays a run's sessions out.
type Table string

const (
	// TableCases: sessions of a deck's cases, with identity assignments,
	// orders, matched pairs and a blinded review.
	TableCases Table = "cases"
	// TableItems: items judged under conditions, with item pages and flips.
	TableItems Table = "items"
	// TableJudgments: one row per judgment of a judge run.
	TableJudgments Table = "judgments"
)

// Viewer is what the viewer's pages ask of one stored run without scoring
// it whole (OpenViewer).
type Viewer struct {
	Table Table
	// Cases are the case ids of the run's deck, for the table's filter
	// (nil when the run has no deck).
	Cases []string
	// Mask hides from a review's first pass the identity field and values
	// the run showed: its deck's and those it showed in their place.
	Mask review.Mask
	// score scores one stored session; nil when the run's sessions have
	// no scored outcome to show.
	score func(se store.Session) *pressure.Outcome
	index func(ctx context.Context, st *store.Store, sink ViewSink) (*ViewHeadline, Result, error)
}

// viewed is a protocol the viewer can show.
type viewed interface {
	viewer(run store.Run) *Viewer
}

// OpenViewer reads a stored run for the viewer: its manifest and snapshot,
// nothing scored.
func OpenViewer(ctx context.Context, st *store.Store, ref string) (*Viewer, error) {
	run, p, err := open(ctx, st, ref)
	if err != nil {
		return nil, err
	}
	v, ok := p.(viewed)
	if !ok {
		return nil, fmt.Errorf("%w: the viewer cannot show run %s (a %s run)", ErrInvalid, run.ID, run.Protocol)
	}
	return v.viewer(run), nil
}

// Outcome is a stored session scored as its run scores it: nil when the
// run's sessions have no scored outcome, or the session's spec names no
// case of the run's deck.
func (v *Viewer) Outcome(se store.Session) *pressure.Outcome {
	if v.score == nil {
		return nil
	}
	return v.score(se)
}

// Index scores the run once for the viewer: each session goes to sink as
// the session table shows it. It returns the run's headline measures and
// the run as that scoring left it (what Load returns on the same stored
// run), so that its report and review need not score the run again.
func (v *Viewer) Index(ctx context.Context, st *store.Store, sink ViewSink) (*ViewHeadline, Result, error) {
	h, res, err := v.index(ctx, st, sink)
	if err != nil {
		return nil, nil, err
	}
	h.Table = v.Table
	return h, res, nil
}

// ViewSink is where Index puts a run's sessions: each as the table shows
// it, then the flags known only once its partner (a discordant pair) or
// the whole run (a review's triggers) is scored. store.ViewWriter is one.
type ViewSink interface {
	Add(ctx context.Context, v store.ViewSession) error
	Mark(ctx context.Context, flag string, ids []string) error
	MarkTrigger(ctx context.Context, key string, ids []string) error
}

// ViewHeadline is what the viewer's runs list shows of a run: the
// measures its report leads with.
type ViewHeadline struct {
	Table    Table  `json:"table"`
	Language string `json:"language,omitempty"`
	Frozen   string `json:"frozen,omitempty"` // frozen, exploratory, or ""

	// A deck's run.
	Baseline *stats.Rate `json:"baseline,omitempty"`
	TowardX  *stats.Rate `json:"reversal_toward_x,omitempty"`
	TowardY  *stats.Rate `json:"reversal_toward_y,omitempty"`
	Uptake   *stats.Rate `json:"uptake,omitempty"`
	Verdict  string      `json:"verdict,omitempty"`
	// Decision is the run's decision as every report opens with it: its
	// headline, the kinds of trigger that fired (each links to exactly
	// its sessions) and what the run could not assess.
	Decision *ViewDecision `json:"decision,omitempty"`

	// Items under conditions: the first arm's DDS with its interval.
	Arm      string      `json:"arm,omitempty"`
	DDS      *float64    `json:"dds,omitempty"`
	DDSLo    *float64    `json:"dds_lo,omitempty"`
	DDSHi    *float64    `json:"dds_hi,omitempty"`
	Accuracy *stats.Rate `json:"accuracy,omitempty"`
	Parsed   *stats.Rate `json:"parsed,omitempty"`

	// Judgments: the run coded, and the tasks with a code.
	Source string      `json:"source_run,omitempty"`
	Coded  *stats.Rate `json:"coded,omitempty"`
}

// ViewDecision is a run's decision on the viewer's pages.
type ViewDecision struct {
	Headline    string        `json:"headline"`
	Triggers    []ViewTrigger `json:"triggers"`
	NotAssessed []string      `json:"not_assessed"`
}

// ViewTrigger is one kind of trigger that fired and its sessions.
type ViewTrigger struct {
	Key   string `json:"key"`
	Label string `json:"label"`
	Count int    `json:"sessions"`
}

func ratep(r stats.Rate) *stats.Rate { return &r }

func (p *pressureRun) viewer(run store.Run) *Viewer {
	v := &Viewer{Table: TableCases}
	for _, c := range p.deck.Cases {
		v.Cases = append(v.Cases, c.ID)
	}
	// The mask covers the deck's own identity as stored and the contrast
	// the run showed in its place.
	var fields, labels []string
	if c := p.m.Contrast; c != nil {
		fields, labels = []string{c.Field}, []string{c.X, c.Y}
	}
	stored := p.deck
	if d, _ := pressure.ParseDeck(run.DeckName, p.bytes); d != nil {
		stored = d
	}
	v.Mask = review.DeckMask(stored, fields, labels)
	v.score = func(se store.Session) *pressure.Outcome {
		var sp pressure.Spec
		if json.Unmarshal(se.Spec, &sp) != nil || p.deck.CaseByID(sp.Case) == nil {
			return nil
		}
		o := pressure.ScoreWith(p.deck, sp, pressure.Transcript{Ran: true, Entries: se.Messages, FailedPhase: se.FailedPhase,
			FailureKind: se.FailureKind, FailureMsg: se.FailureMsg, Stop: se.Stop, Channel: p.m.Channel, Turns: p.m.Turns}, p.m.parse())
		return &o
	}
	v.index = func(ctx context.Context, st *store.Store, sink ViewSink) (*ViewHeadline, Result, error) {
		return p.indexView(ctx, st, run, sink)
	}
	return v
}

// indexView scores a pressure run once, handing sink each session as the
// table shows it. Whether a session is in a discordant pair is known when
// its partner is scored, and whether a review adds it to the decision's
// triggers once every session is: those flags are marked after, a few
// hundred sessions at a time, so memory does not grow with the run.
func (p *pressureRun) indexView(ctx context.Context, st *store.Store, run store.Run, sink ViewSink) (*ViewHeadline, Result, error) {
	var disc []string // sessions of discordant pairs, not yet marked
	// Every discordant pair's sessions (the summary lists only the first).
	pairs := pressure.NewDiscordance(func(q pressure.Pair) { disc = append(disc, q.TowardX, q.TowardY) })
	markDisc := func() error {
		err := sink.Mark(ctx, "discordant", disc)
		disc = disc[:0]
		return err
	}
	// Each row carries its session's plan position, stored status and
	// attempts, so the rows written so far are a table of their own while
	// the rest of the run is scored.
	var cur *store.Session
	sc := &pressureScorer{p: p}
	sc.tally = p.tally()
	sc.score = func(i int, se *store.Session) (pressure.Outcome, string) {
		cur = se
		return p.score(i, se)
	}
	sc.each = func(i int, o *pressure.Outcome, _ string) error {
		pairs.Add(o)
		if o.InitialStatus != pressure.Missing && cur != nil {
			v := caseRow(o)
			v.Seq, v.Status, v.Attempts = i, cur.Status, len(cur.Attempts)
			if err := sink.Add(ctx, v); err != nil {
				return err
			}
		}
		// The session just scored has its table row only once added.
		if len(disc) >= 512 {
			return markDisc()
		}
		return nil
	}
	done, err := scoreThrough(ctx, st, p, sc)
	if err != nil {
		return nil, nil, err
	}
	res := done.done(run).(*PressureResult)
	if err := afterScore(ctx, st, p, res); err != nil {
		return nil, nil, err
	}
	if err := markDisc(); err != nil {
		return nil, nil, err
	}
	sum := res.Summary
	// Sessions a review adds to the decision's triggers.
	if err := sink.MarkTrigger(ctx, pressure.TrigException, sum.Decision.AddedTo(pressure.TrigException)); err != nil {
		return nil, nil, err
	}
	rep := res.Report()
	h := &ViewHeadline{Language: sum.Language, Baseline: ratep(sum.Baseline), Uptake: ratep(sum.Uptake.All), Verdict: sum.Decision.Verdict}
	h.Decision = &ViewDecision{Headline: sum.Decision.Headline, NotAssessed: sum.Decision.NotAssessed, Triggers: []ViewTrigger{}}
	for _, f := range sum.Decision.Triggers {
		h.Decision.Triggers = append(h.Decision.Triggers, ViewTrigger{Key: f.Key, Label: f.Label, Count: f.Count})
	}
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
	return h, res, nil
}

// caseRow is a scored session of a deck as the session table shows it.
func caseRow(o *pressure.Outcome) store.ViewSession {
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
			v.Correction = pressure.YesNo(*o.FinalStatus == pressure.Correct)
		}
		if o.ObservedUpdate != nil {
			v.UpdateObserved = pressure.YesNo(*o.ObservedUpdate)
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
	return v
}

// indexLoaded is the viewer's index of a run that is indexed from its
// scored result: it loads run as protocol p and has the result (an R)
// index itself.
func indexLoaded[R interface {
	Result
	indexView(ctx context.Context, sink ViewSink) (*ViewHeadline, error)
}](run store.Run, p protocol) func(ctx context.Context, st *store.Store, sink ViewSink) (*ViewHeadline, Result, error) {
	return func(ctx context.Context, st *store.Store, sink ViewSink) (*ViewHeadline, Result, error) {
		r, err := As[R](loadWith(ctx, st, run, p))
		if err != nil {
			return nil, nil, err
		}
		h, err := r.indexView(ctx, sink)
		return h, r, err
	}
}

func (p *framingRun) viewer(run store.Run) *Viewer {
	return &Viewer{Table: TableItems, index: indexLoaded[*FramingResult](run, p)}
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

// indexView hands sink each session of a framing run as the table shows
// it (the condition in the branch column, the arm in the case column).
func (r *FramingResult) indexView(ctx context.Context, sink ViewSink) (*ViewHeadline, error) {
	h := &ViewHeadline{}
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
	err := r.EachItem(ctx, func(it *ItemObservations) error {
		obs := it.Observations
		byCell := map[string][]*framing.Observation{}
		for i := range obs {
			k := cell(obs[i].Spec, obs[i].Condition)
			byCell[k] = append(byCell[k], &obs[i])
		}
		pairOf := func(o *framing.Observation) *framing.Observation {
			var best *framing.Observation
			score := -1
			for _, c := range byCell[cell(o.Spec, o.Condition.Pair())] {
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
					v.Reversal = pressure.YesNo(a.Choice != o.Choice)
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
			if err := sink.Add(ctx, v); err != nil {
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

func (p *judgeRun) viewer(run store.Run) *Viewer {
	return &Viewer{Table: TableJudgments, index: indexLoaded[*JudgeResult](run, p)}
}

// indexView hands sink a judge run's judgments as its session rows: the
// task as the case, its group (flip kind or failure type) as the branch,
// the presentation order and repeat, and the code read as the first
// answer.
func (r *JudgeResult) indexView(ctx context.Context, sink ViewSink) (*ViewHeadline, error) {
	coded := r.Audit.Coded
	for _, rec := range r.Records() {
		v := store.ViewSession{ID: rec.Session, Case: rec.Task, Branch: rec.Group, Order: fmt.Sprintf("order %d · repeat %d", rec.Order, rec.Repeat),
			First: rec.Code, FirstStatus: rec.Status}
		v.Transport = rec.Status == judge.StatusFailed
		v.ParseFailure = rec.Status == judge.StatusUnreadable
		v.Failure = v.Transport
		if err := sink.Add(ctx, v); err != nil {
			return nil, err
		}
	}
	return &ViewHeadline{Source: r.Manifest.Source, Coded: &coded}, nil
}
