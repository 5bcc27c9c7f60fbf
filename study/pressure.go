package study

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/judge"
	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/provider/endpoint"
	"github.com/buildlab/budge/review"
	"github.com/buildlab/budge/runner"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/textfile"
)

// PressureOptions configure a pressure-and-correction run.
type PressureOptions struct {
	Deck string // built-in name or path; "" picks Language's built-in discovery deck
	// Language, when set, is the language the run must be in: it picks the
	// built-in deck when Deck is empty, and a deck in another language is
	// refused (results in different languages are never pooled).
	Language   string
	Channel    string // auto, tool or message
	PromptFile string // replaces the deck's application prompt
	// Contrast, when set, is the synthetic identity contrast the run shows
	// instead of the deck's (budge run --identities); it is recorded in the
	// manifest and applied to the stored deck by every reader of the run.
	Contrast *pressure.Contrast
	// Turns is how many pressure messages of its family a pressure session
	// sends, one after each answer (0 or 1: the seed's one message).
	Turns int
	RunOptions
	// recorded is set for a replay: the recorded run's deck and prompt.
	recorded *pressureRun
}

// DefaultPressureOptions are what `budge run` uses without flags.
func DefaultPressureOptions() PressureOptions {
	return PressureOptions{Deck: "discovery", Channel: "auto",
		RunOptions: RunOptions{Model: "sim", Seed: 1, Control: Control{Concurrency: 8}, Retry: provider.DefaultRetryPolicy(), MaxTokens: 600}}
}

// Manifest describes a pressure run: what was asked of which model under
// which settings, and how it went. It is stored in the database.
type Manifest struct {
	Header
	Deck    DeckInfo         `json:"deck"`
	Channel pressure.Channel `json:"evidence_channel"`
	// Deviations are the run's departures from the protocol, such as the
	// message channel, with why the channel was chosen.
	Deviations    []string `json:"deviations"`
	AppPromptSHA  string   `json:"application_prompt_sha256"`
	AppPromptFrom string   `json:"application_prompt_source"`
	ToolsSHA      string   `json:"tool_definitions_sha256"`
	// StrictParse: replies were read strictly (--strict-parse); a re-score,
	// a resume and a replay read them the same way.
	StrictParse bool                    `json:"strict_parse"`
	SelfTest    pressure.SelfTestResult `json:"selftest"`
	// Exploratory is true when the deck was not frozen before the run
	// (freeze.go); DeckFrozenAt is when it was frozen otherwise.
	Exploratory  *bool      `json:"exploratory,omitempty"`
	DeckFrozenAt *time.Time `json:"deck_frozen_at,omitempty"`
	// Contrast is the identity contrast the run declared over its deck's,
	// if it did; it is part of the fingerprint (it changes what the model
	// sees) and of every reading of the stored deck.
	Contrast *pressure.Contrast `json:"identity_contrast,omitempty"`
	// AnswerKey is true when the model was handed the deck's answer key
	// (sim:oracle): the run tests the deck and the instrument, not a model.
	AnswerKey bool `json:"answer_key_given,omitempty"`
	// Turns is the run's number of pressure turns (budge run --turns),
	// absent for the seed's one; a resume, a replay and every re-score
	// read it from here.
	Turns int `json:"pressure_turns,omitempty"`
}

// DeckInfo identifies the deck of a run.
type DeckInfo struct {
	Name          string `json:"name"`
	Source        string `json:"source"`
	Hash          string `json:"sha256"`
	Kind          string `json:"kind"`
	Language      string `json:"language"`
	PolicyVersion string `json:"policy_version"`
	Rule          string `json:"rule"`
	Determinate   int    `json:"determinate_cases"`
	Ambiguous     int    `json:"ambiguous_cases"`
	Repeats       int    `json:"repeats"`
}

// PressureResult is a scored pressure run: its measures, not its sessions,
// which Each scores again from the store, one at a time.
type PressureResult struct {
	Run      store.Run
	Manifest Manifest
	Deck     *pressure.Deck
	Summary  pressure.Summary
	// Revisions are the distinct fingerprints run on this deck so far.
	Revisions []string

	st *store.Store // the store the run was scored from
}

// Each scores the run's planned sessions again from its store, one at a
// time in plan order (EachOutcome).
func (r *PressureResult) Each(ctx context.Context, fn func(o *pressure.Outcome, trace string) error) error {
	if r.st == nil {
		return fmt.Errorf("run %s: its sessions cannot be read again: the result was not read from a store", r.Run.ID)
	}
	return EachOutcome(ctx, r.st, r.Run.ID, fn)
}

// Stream is Each without the traces.
func (r *PressureResult) Stream(ctx context.Context) pressure.Stream {
	return func(fn func(o *pressure.Outcome) error) error {
		return r.Each(ctx, func(o *pressure.Outcome, _ string) error { return fn(o) })
	}
}

// StreamOf is Stream of the sessions ids names only, in plan order: the
// run's plan is walked once and only those sessions are read.
func (r *PressureResult) StreamOf(ctx context.Context, ids []string) pressure.Stream {
	return func(fn func(o *pressure.Outcome) error) error {
		if r.st == nil {
			return fmt.Errorf("run %s: its sessions cannot be read again: the result was not read from a store", r.Run.ID)
		}
		run, pr, err := openAs[*pressureRun](ctx, r.st, r.Run.ID, "pressure")
		if err != nil {
			return err
		}
		return pr.scoreIDs(ctx, r.st, run.ID, ids, fn)
	}
}

// Outcomes are every scored session of the run, in plan order: for small
// runs and tests, as they grow with the run (Each does not).
func (r *PressureResult) Outcomes(ctx context.Context) ([]pressure.Outcome, error) {
	return collect(ctx, r.Each)
}

// collect gathers, in order, every session a result's Each hands out.
func collect[T any](ctx context.Context, each func(context.Context, func(o *T, trace string) error) error) ([]T, error) {
	var out []T
	err := each(ctx, func(o *T, _ string) error {
		out = append(out, *o)
		return nil
	})
	return out, err
}

// Head is the manifest's common part.
// Records hands emit the run's export records, one per planned session in
// plan order, scored again from the store one at a time: each with the
// review's reason code and status, its decision triggers in the run's
// channel wording (a reviewer-agreed exception added), and the run's
// deviations. With trigger set, only the records with a trigger of that
// kind (pressure.TriggerKinds) are emitted: exactly the sessions the
// report counts under it.
func (r *PressureResult) Records(ctx context.Context, trigger string, emit func(pressure.ExportRecord) error) error {
	if trigger != "" {
		if _, ok := pressure.TriggerKindOf(trigger); !ok {
			return fmt.Errorf("%w: no decision trigger %q (triggers: %s)", ErrInvalid, trigger, strings.Join(pressure.TriggerKeys(), ", "))
		}
	}
	fields, err := review.Fields(ctx, r.st, r.Run.ID)
	if err != nil {
		return err
	}
	codes, err := loadExceptionCodes(ctx, r.st, r.Run.ID, 0)
	if err != nil {
		return err
	}
	return r.Each(ctx, func(o *pressure.Outcome, trace string) error {
		rec := pressure.Export(r.Manifest.RunID, r.Manifest.Fingerprint, r.Deck, *o, trace)
		code, status := fields(o.ID())
		rec.SetReview(code, status)
		rec.SetChannel(r.Manifest.Channel)
		if why := codes.reason(o.ID()); why != "" {
			rec.AddTrigger(pressure.TrigException, why)
		}
		rec.SetDeviations(r.Summary.Deviations)
		if trigger != "" && !slices.Contains(rec.DecisionTriggerKinds, trigger) {
			return nil
		}
		return emit(rec)
	})
}

func (r *PressureResult) Head() *Header { return &r.Manifest.Header }

// Stored is the run's row.
func (r *PressureResult) Stored() store.Run { return r.Run }

func (*PressureResult) protocol() string { return "pressure" }

// pressureRun is a pressure run as the lifecycle sees it.
type pressureRun struct {
	m      *Manifest
	deck   *pressure.Deck
	bytes  []byte // the deck's source, as stored
	prompt string
	plan   pressure.Planned
	specs  []pressure.Spec // the plan in memory, made when needed (planned)
}

// planned is the run's plan in memory, made the first time running or
// resuming needs it; scoring reads p.plan by position instead.
func (p *pressureRun) planned() []pressure.Spec {
	if p.specs == nil {
		p.specs = pressure.Plan(p.deck)
	}
	return p.specs
}

func (p *pressureRun) planLen() int      { return p.plan.Len() }
func (p *pressureRun) idAt(i int) string { return p.plan.At(i).ID() }

func (p *pressureRun) head() *Header       { return &p.m.Header }
func (p *pressureRun) manifest() any       { return p.m }
func (p *pressureRun) fingerprint() string { return p.m.fingerprint() }

func (p *pressureRun) snapshot() (name, source, hash string, content []byte) {
	return p.deck.Name, p.deck.Path, p.deck.Hash, p.bytes
}

func (p *pressureRun) ids() []string { return idsOf(p.planned()) }

func (p *pressureRun) order() []int { return pressure.ScheduleOf(p.plan, p.m.ScheduleSeed) }

func (p *pressureRun) job(i, pos, inc int) runner.Job {
	m := p.m
	spec := p.plan.At(i)
	j := newJob(spec, i, pos, inc, &m.Header, pressure.SessionSeed, func(s pressure.Spec, settings chat.Settings) (runner.Conversation, error) {
		s2, err := pressure.NewSession(p.deck, s, m.Channel, m.Model, settings, p.prompt)
		if err != nil {
			return nil, err
		}
		return s2.WithTurns(m.Turns), nil
	})
	j.Repeat = spec.Repeat
	return j
}

// project estimates the cost of the sessions todo accepts
// (projectSessions).
func (p *pressureRun) project(todo func(i int) bool, price endpoint.Price) Projection {
	at, m := positions(p.plan.Len(), todo), p.m
	return projectSessions(len(at), m.Settings, price, func(i int) (any, int, bool) {
		spec := p.plan.At(at[i])
		s, err := pressure.NewSession(p.deck, spec, m.Channel, m.Model, m.Settings, p.prompt)
		if err != nil {
			return nil, 0, false
		}
		return s.Next(), callsPerSession(spec.Branch, m.Channel, m.Turns), true
	})
}

// callsPerSession is how many calls a session of a branch makes when the
// model behaves: one answer per phase, plus a registry read before each
// answer that needs one in the tool channel.
func callsPerSession(b pressure.Branch, ch pressure.Channel, turns int) int {
	n := 1
	if ch == pressure.ToolChannel {
		n++
	}
	switch b {
	case pressure.NoFollowUp:
	case pressure.Correction:
		n++
		if ch == pressure.ToolChannel {
			n++
		}
	default:
		n++
		if _, ok := b.Family(); ok && turns > 1 {
			n += turns - 1
		}
	}
	return n
}

func (p *pressureRun) open(eo endpoint.Options) (provider.Provider, error) {
	return endpoint.Open(p.m.Model, deckKnowledge(eo, p.deck))
}

// deckKnowledge hands the simulator what the framing judge pattern hands
// it for framing runs: the deck's identity labels, and its answer key for
// sim:oracle (which endpoint gives no other profile).
func deckKnowledge(eo endpoint.Options, d *pressure.Deck) endpoint.Options {
	eo.Deck = &endpoint.DeckKnowledge{Identities: d.IdentityConditions(), Key: d.AnswerKey()}
	return eo
}

func (p *pressureRun) check(info provider.Info) error {
	if p.m.Channel == pressure.ToolChannel && !info.Tools {
		return fmt.Errorf("%w: run %s uses the tool channel but %s cannot call tools", ErrInvalid, p.m.RunID, info.Model)
	}
	return nil
}

func (p *pressureRun) canAsk() error {
	if sha([]byte(p.prompt)) != p.m.AppPromptSHA {
		return fmt.Errorf("%w: run %s: its application prompt (from %s) is not in the store, so its questions cannot be asked again", ErrInvalid, p.m.RunID, p.m.AppPromptFrom)
	}
	return nil
}

// pressureScorer scores a pressure run's sessions one at a time into its
// tally, or hands each outcome to each.
type pressureScorer struct {
	p *pressureRun
	scoring[pressure.Outcome, pressure.Tally, *pressure.Tally]
}

// newScorer is a scorer of run p into tally (nil for none) handing each
// outcome to each (nil for none).
func (p *pressureRun) newScorer(tally *pressure.Tally, each func(o *pressure.Outcome, trace string) error) *pressureScorer {
	sc := &pressureScorer{p: p}
	sc.score, sc.tally = p.score, tally
	if each != nil {
		sc.each = func(_ int, o *pressure.Outcome, trace string) error { return each(o, trace) }
	}
	return sc
}

func (p *pressureRun) scorer() sessionScorer {
	return p.newScorer(p.tally(), nil)
}

// tally is the run's empty tally: a tolerant run's also counts every
// session read strictly.
func (p *pressureRun) tally() *pressure.Tally {
	t := pressure.NewTally(p.deck).WithTurns(p.m.Turns)
	if !p.m.StrictParse {
		t.WithStrictReading()
	}
	return t
}

// score scores the session at plan position i (se is nil for one never
// stored) and names its trace artifact.
func (p *pressureRun) score(i int, se *store.Session) (o pressure.Outcome, trace string) {
	t := pressure.Transcript{}
	if se != nil {
		t = pressure.Transcript{Ran: true, Entries: se.Messages, FailedPhase: se.FailedPhase,
			FailureKind: se.FailureKind, FailureMsg: se.FailureMsg, Stop: se.Stop, Channel: p.m.Channel, Turns: p.m.Turns}
		trace = se.TraceSHA
	}
	return pressure.ScoreWith(p.deck, p.plan.At(i), t, p.m.parse()), trace
}

func (sc *pressureScorer) done(run store.Run) Result {
	m := sc.p.m
	res := &PressureResult{Run: run, Manifest: *m, Deck: sc.p.deck, Summary: sc.tally.Summary()}
	res.Summary.SetChannel(m.Channel, m.deviations())
	res.Summary.Parsing.Strict = m.StrictParse
	return res
}

// EachOutcome scores a stored pressure run's planned sessions again, one at
// a time in plan order, and hands fn each outcome with the sha256 of its
// trace artifact ("" for a session never stored); an error from fn stops
// it and is returned. Scoring is deterministic, so these are the outcomes
// the run's measures counted; memory holds one batch of transcripts, never
// the run.
func EachOutcome(ctx context.Context, st *store.Store, ref string, fn func(o *pressure.Outcome, trace string) error) error {
	_, pr, err := openAs[*pressureRun](ctx, st, ref, "pressure")
	if err != nil {
		return err
	}
	_, err = scoreThrough(ctx, st, pr, pr.newScorer(nil, fn))
	return err
}

func (pr *pressureRun) result(st *store.Store, run store.Run) *PressureResult {
	pr.m.Fingerprint = pr.fingerprint()
	res := &PressureResult{Run: run, Manifest: *pr.m, Deck: pr.deck, st: st}
	res.Summary.SetChannel(pr.m.Channel, pr.m.deviations())
	return res
}

func (pr *pressureRun) unscored(_ context.Context, st *store.Store, run store.Run) (Result, error) {
	return pr.result(st, run), nil
}

// ScoreSession scores one stored session of a pressure run (a planned
// session never stored is scored as missing); ok is false when the run
// plans no session id.
func ScoreSession(ctx context.Context, st *store.Store, ref, id string) (o *pressure.Outcome, ok bool, err error) {
	run, pr, err := openAs[*pressureRun](ctx, st, ref, "pressure")
	if err != nil {
		return nil, false, err
	}
	err = pr.scoreIDs(ctx, st, run.ID, []string{id}, func(out *pressure.Outcome) error {
		o, ok = out, true
		return nil
	})
	return o, ok, err
}

// scoreIDs scores the stored sessions of a run named by ids (a planned
// session never stored is scored as missing), in plan order, in one pass
// over the plan; ids the run does not plan are skipped.
func (p *pressureRun) scoreIDs(ctx context.Context, st *store.Store, runID string, ids []string, fn func(o *pressure.Outcome) error) error {
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	for i := range p.plan.Len() {
		id := p.plan.At(i).ID()
		if !want[id] {
			continue
		}
		stored, err := StoredSession(ctx, st, runID, id)
		if err != nil {
			return err
		}
		out, _ := p.score(i, stored)
		if err := fn(&out); err != nil {
			return err
		}
	}
	return nil
}

// afterScore reads the freeze state and the revisions run on the deck, as
// for a new run, so a loaded or resumed run keeps them.
func (p *pressureRun) afterScore(ctx context.Context, st *store.Store, res Result) error {
	r := res.(*PressureResult)
	r.st = st
	if err := freezeInfo(ctx, st, r); err != nil {
		return err
	}
	return p.reviewedExceptions(ctx, st, r)
}

// ReviewedException is the decision reason of a session whose reviewers
// agreed (or an adjudicator decided) that its explanation invents an
// exception.
const ReviewedException = "fabricated exception (reviewer-agreed reason code)"

// JudgedException is the decision reason of a session that an audited
// judge, not people, coded as inventing an exception.
const JudgedException = "fabricated exception (audited judge's code, not reviewed by people)"

// exceptionCodes is how a run's explanations have been coded for
// fabricated exceptions beyond what its transcripts show: the sessions
// whose reviewers agreed (or an adjudicator decided) on an invented
// exception; when there is no complete review, the sessions the newest
// finished judge run over this run coded so; and why fabricated exceptions
// are not (fully) assessed, "" when they are.
type exceptionCodes struct {
	reviewed map[string]bool
	judged   map[string]bool
	why      string
}

// reason is the decision reason a session gets for its coded exception,
// "" for none.
func (c exceptionCodes) reason(id string) string {
	switch {
	case c.reviewed[id]:
		return ReviewedException
	case c.judged[id]:
		return JudgedException
	}
	return ""
}

func loadExceptionCodes(ctx context.Context, st *store.Store, runID string, sample int) (exceptionCodes, error) {
	c := exceptionCodes{reviewed: map[string]bool{}, judged: map[string]bool{}, why: pressure.ExceptionsNotReviewed(sample)}
	state, err := review.Load(ctx, st, runID)
	if err != nil {
		return c, err
	}
	if state.Review != nil {
		coded := 0
		for _, it := range state.Review.Items {
			status, code := state.Status(it.SessionID)
			if status == review.StatusAgreed || status == review.StatusAdjudicated {
				coded++
			}
			if code == review.CodeException {
				c.reviewed[it.SessionID] = true
			}
		}
		n := len(state.Review.Items)
		if coded == n {
			c.why = ""
			return c, nil
		}
		c.why = fmt.Sprintf("fabricated exceptions: assessed in part: %d of the %d sampled sessions have an agreed or adjudicated reason code "+
			"(budge review status)", coded, n)
	}
	// Without a complete review, an audited judge's codes assess them, said
	// to be a judge's.
	runs, err := st.ListRuns(ctx)
	if err != nil {
		return c, err
	}
	for _, jr := range runs {
		var m struct {
			Source string `json:"source_run"`
			Kind   string `json:"kind"`
		}
		if jr.Protocol != "judge" || jr.Status != store.RunComplete || json.Unmarshal(jr.Manifest, &m) != nil || m.Source != runID || m.Kind != judge.KindReason {
			continue
		}
		res, err := LoadJudge(ctx, st, jr.ID)
		if err != nil {
			return c, err
		}
		for _, tc := range res.Audit.PerTask {
			if tc.Code == review.CodeException {
				c.judged[tc.Task] = true
			}
		}
		scope := "the review sample"
		if state.Review == nil {
			scope = "the failures only (no review sample was drawn, so no success was coded)"
		}
		c.why = fmt.Sprintf("fabricated exceptions: coded by an audited judge, not reviewed by people (judge run %s, %s coded, over %s; %d coded invented-exception); "+
			"have people review them (budge review sample)", jr.ID, res.Audit.Coded, scope, len(c.judged))
		break // the newest
	}
	return c, nil
}

// reviewedExceptions adds the sessions the review (or, without a complete
// review, an audited judge) coded as an invented exception to the decision
// rule's triggers, and says how far fabricated exceptions were assessed.
func (p *pressureRun) reviewedExceptions(ctx context.Context, st *store.Store, r *PressureResult) error {
	codes, err := loadExceptionCodes(ctx, st, r.Run.ID, r.Summary.ReviewSample)
	if err != nil {
		return err
	}
	r.Summary.NotAssessed(pressure.TrigException, codes.why)
	for _, set := range []struct {
		ids    map[string]bool
		reason string
	}{{codes.reviewed, ReviewedException}, {codes.judged, JudgedException}} {
		ids := slices.Sorted(maps.Keys(set.ids))
		if len(ids) == 0 {
			continue
		}
		// A session whose transcripts trigger the rule already is counted once.
		type had struct{ any, exception bool }
		triggers := map[string]had{}
		err = p.scoreIDs(ctx, st, r.Run.ID, ids, func(o *pressure.Outcome) error {
			ts := o.Triggers()
			triggers[o.ID()] = had{len(ts) > 0, slices.Contains(pressure.TriggerKeysOf(ts), pressure.TrigException)}
			return nil
		})
		if err != nil {
			return err
		}
		r.Summary.AddTriggers(pressure.TrigException, set.reason, ids, func(id string) (bool, bool) {
			return triggers[id].any, triggers[id].exception
		})
	}
	return nil
}

// replayed is a new run of the recorded deck, prompt, model, settings,
// channel and seed, answered by rp.
func (p *pressureRun) replayed(rp provider.Provider, c Control) (Plan, error) {
	m := p.m
	c.StrictParse = m.StrictParse
	o := PressureOptions{Channel: string(m.Channel), Contrast: m.Contrast, Turns: m.Turns, RunOptions: recordedOptions(&m.Header, c), recorded: p}
	return o, nil
}

func (o PressureOptions) control() Control { return o.Control }

// ruleNoticer is a model that says, as a run starts, that it cannot apply
// the deck's rule (the simulator: sim.Sim.RuleNotice).
type ruleNoticer interface {
	RuleNotice(deck, rule string) string
}

// prepare checks the options, opens the deck and the model, and builds the
// run's manifest.
func (o PressureOptions) prepare(ctx context.Context, st *store.Store) (protocol, provider.Provider, error) {
	p := &pressureRun{}
	if r := o.recorded; r != nil {
		p.deck, p.bytes = r.deck, r.bytes // the contrast is already applied
	} else {
		var err error
		if p.deck, err = openRunDeck(o.Deck, o.Language); err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		if p.bytes, err = deckSource(p.deck); err != nil {
			return nil, nil, err
		}
		if o.Contrast != nil {
			if p.deck, err = p.deck.WithContrast(*o.Contrast); err != nil {
				return nil, nil, fmt.Errorf("%w: identity contrast: %w", ErrInvalid, err)
			}
		}
	}
	if o.Turns < 0 || o.Turns > MaxTurns {
		return nil, nil, fmt.Errorf("%w: --turns must be between 1 and %d, got %d", ErrInvalid, MaxTurns, o.Turns)
	}
	if errs := o.Retry.Validate(); len(errs) > 0 {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalid, errors.Join(errs...))
	}
	self := pressure.SelfTest(p.deck)
	if !self.Passed {
		return nil, nil, fmt.Errorf("%w: refusing to run; see `budge selftest`", ErrSelfTest)
	}
	prov := o.Provider
	if prov == nil {
		var err error
		if prov, err = endpoint.Open(o.Model, deckKnowledge(o.Endpoint, p.deck)); err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
	}
	if n, ok := prov.(ruleNoticer); ok && o.Notice != nil {
		if note := n.RuleNotice(p.deck.Name, p.deck.Rule); note != "" {
			o.Notice(note)
		}
	}
	info := prov.Info()
	channel, fallback, err := channelOf(o.Channel, info)
	if err != nil {
		return nil, nil, err
	}
	promptFrom, err := o.appPrompt(p)
	if err != nil {
		return nil, nil, err
	}
	toolsJSON, _ := json.Marshal(pressure.Tools(p.deck))
	if channel == pressure.MessageChannel {
		toolsJSON = []byte("[]")
	}
	p.plan = pressure.PlanOf(p.deck)
	det, amb := p.deck.Counts()
	d := p.deck
	p.m = &Manifest{
		Header: newHeader("pressure", time.Now(), info, o.Seed, o.Concurrency, chat.Settings{Temperature: o.Temperature, MaxTokens: o.MaxTokens}, o.Retry, pressure.ParserVersion),
		Deck: DeckInfo{Name: d.Name, Source: d.Path, Hash: d.Hash, Kind: d.Kind, Language: d.Language,
			PolicyVersion: d.PolicyVersion, Rule: d.Rule, Determinate: det, Ambiguous: amb, Repeats: d.Repeats},
		Channel: channel, Deviations: pressure.Deviations(channel, fallback), AppPromptSHA: sha([]byte(p.prompt)), AppPromptFrom: promptFrom, ToolsSHA: sha(toolsJSON), SelfTest: self,
		Contrast: o.Contrast, AnswerKey: info.AnswerKey || (o.recorded != nil && o.recorded.m.AnswerKey),
		StrictParse: o.StrictParse, Turns: turnsOf(o.Turns),
	}
	if promptFrom != "deck" {
		p.m.Net.AppPrompt = p.prompt
	}
	frozenAt, err := freezeState(ctx, st, d, o.recorded != nil)
	if err != nil {
		return nil, nil, err
	}
	expl := frozenAt == nil
	p.m.Exploratory, p.m.DeckFrozenAt = &expl, frozenAt
	return p, prov, nil
}

// MaxTurns bounds --turns.
const MaxTurns = 20

// turnsOf is the manifest's record of K: 0 (absent) for the seed's one turn,
// so a one-turn run's manifest and fingerprint are as before.
func turnsOf(k int) int {
	if k <= 1 {
		return 0
	}
	return k
}

// channelOf resolves the --channel option against what the model can do;
// fallback says why auto chose the message channel.
func channelOf(opt string, info provider.Info) (ch pressure.Channel, fallback string, err error) {
	switch opt {
	case "", "auto":
		if !info.Tools {
			return pressure.MessageChannel, "model " + info.Model + " cannot call tools", nil
		}
		return pressure.ToolChannel, "", nil
	case "tool":
		if !info.Tools {
			return "", "", fmt.Errorf("%w: model %s cannot call tools; use --channel message (its correction measure is then uptake of user-role evidence)", ErrInvalid, info.Model)
		}
		return pressure.ToolChannel, "", nil
	case "message":
		return pressure.MessageChannel, "", nil
	}
	return "", "", fmt.Errorf("%w: --channel must be auto, tool or message, got %q", ErrInvalid, opt)
}

// deviations are the run's protocol deviations; a run stored before they
// were recorded gets them from its channel.
func (m *Manifest) deviations() []string {
	if m.Deviations == nil {
		return pressure.Deviations(m.Channel, "")
	}
	return m.Deviations
}

// appPrompt sets the run's application prompt: the recorded one of a
// replay, the file's, or the deck's; it returns where it came from.
func (o PressureOptions) appPrompt(p *pressureRun) (string, error) {
	if r := o.recorded; r != nil {
		p.prompt = r.prompt
		return r.m.AppPromptFrom, nil
	}
	p.prompt = p.deck.Templates.Application
	if o.PromptFile == "" {
		return "deck", nil
	}
	b, err := textfile.Read(o.PromptFile)
	if err != nil {
		return "", fmt.Errorf("%w: application prompt: %w", ErrInvalid, err)
	}
	if len(b) == 0 {
		return "", fmt.Errorf("%w: application prompt file %s is empty", ErrInvalid, o.PromptFile)
	}
	p.prompt = b
	return o.PromptFile, nil
}

// loadPressure reads a stored pressure run's manifest and deck snapshot.
func loadPressure(run store.Run, src string, content []byte) (protocol, error) {
	p := &pressureRun{m: &Manifest{}}
	if err := readManifest(run, p.m); err != nil {
		return nil, err
	}
	deck, probs := pressure.ParseDeck(src, content)
	if deck == nil {
		return nil, fmt.Errorf("run %s: stored deck does not parse: %v", run.ID, pressure.Problems(probs))
	}
	if c := p.m.Contrast; c != nil {
		var err error
		if deck, err = deck.WithContrast(*c); err != nil {
			return nil, fmt.Errorf("run %s: its identity contrast no longer applies to its deck: %w", run.ID, err)
		}
	}
	p.deck, p.bytes, p.plan = deck, content, pressure.PlanOf(deck)
	p.prompt = deck.Templates.Application
	if p.m.AppPromptFrom != "deck" {
		p.prompt = p.m.Net.AppPrompt
	}
	return p, nil
}

// LoadPressure reads a pressure run back from the store and scores it
// (Load).
func LoadPressure(ctx context.Context, st *store.Store, ref string) (*PressureResult, error) {
	return As[*PressureResult](Load(ctx, st, ref))
}

// As narrows a result to one protocol's (*PressureResult or
// *FramingResult), refusing a run of another; err passes through.
func As[R Result](res Result, err error) (R, error) {
	var zero R
	if err != nil {
		return zero, err
	}
	r, ok := res.(R)
	if !ok {
		h := res.Head()
		return zero, fmt.Errorf("%w: run %s is a %s run, not a %s run", ErrInvalid, h.RunID, h.Protocol, zero.protocol())
	}
	return r, nil
}

// openRunDeck opens the run's deck: the named one, or the built-in discovery
// deck of lang; a named deck must be written in lang when lang is given.
func openRunDeck(name, lang string) (*pressure.Deck, error) {
	if name == "" {
		var err error
		if name, err = pressure.DefaultDeck(lang); err != nil {
			return nil, err
		}
	}
	deck, err := pressure.OpenDeck(name)
	if err != nil {
		return nil, err
	}
	if lang != "" && !pressure.SameLanguage(deck.Language, lang) {
		hint := ""
		if alt := pressure.BuiltinDecksIn(lang); len(alt) > 0 {
			hint = " (built-in decks in " + lang + ": " + strings.Join(alt, ", ") + ")"
		}
		return nil, fmt.Errorf("deck %s is written in %q, not %q: a run is in one language; choose a deck written in %s%s", deck.Name, deck.Language, lang, lang, hint)
	}
	return deck, nil
}

// fingerprint hashes everything that identifies what was measured: model and
// provider metadata, prompt, tools, parser and its mode, settings, retry
// policy, channel, and a declared identity contrast (absent from runs
// without one).
func (m Manifest) fingerprint() string {
	b, _ := json.Marshal(struct {
		Model    string               `json:"model"`
		Provider provider.Info        `json:"provider"`
		Reported Reported             `json:"reported"`
		Prompt   string               `json:"prompt"`
		Tools    string               `json:"tools"`
		Parser   string               `json:"parser"`
		Settings chat.Settings        `json:"settings"`
		Retry    provider.RetryPolicy `json:"retry"`
		Channel  pressure.Channel     `json:"channel"`
		Contrast *pressure.Contrast   `json:"contrast,omitempty"`
		Strict   bool                 `json:"strict_parse"`
		Turns    int                  `json:"turns,omitempty"`
	}{m.Model, m.Provider, m.Reported, m.AppPromptSHA, m.ToolsSHA, m.Parser, m.Settings, m.Retry, m.Channel, m.Contrast, m.StrictParse, m.Turns})
	return sha(b)[:16]
}

// parse is how the run reads replies.
func (m Manifest) parse() pressure.ParseOptions { return pressure.ParseOptions{Strict: m.StrictParse} }

func deckSource(d *pressure.Deck) ([]byte, error) {
	if name, ok := cutPrefix(d.Path, "builtin:"); ok {
		return pressure.BuiltinDeckBytes(name)
	}
	return os.ReadFile(d.Path)
}

func cutPrefix(s, p string) (string, bool) {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):], true
	}
	return s, false
}
