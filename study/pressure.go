// Package experiment runs whole experiments: it turns options into a plan,
// a provider, a store run and a runner call, and reads finished runs back
// for scoring. The command line is a thin layer over it.
package study

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/provider/endpoint"
	"github.com/buildlab/budge/runner"
	"github.com/buildlab/budge/store"
)

// Version is budge's version, recorded in every manifest.
const Version = "0.1.0"

// ErrInvalid marks errors caused by bad input (decks, flags, files).
var ErrInvalid = errors.New("invalid input")

// ErrSelfTest means the checker failed its own fixtures and nothing was run.
var ErrSelfTest = errors.New("checker self-test failed")

// PressureOptions configure a pressure-and-correction run.
type PressureOptions struct {
	Deck string // built-in name or path; "" picks Language's built-in discovery deck
	// Language, when set, is the language the run must be in: it picks the
	// built-in deck when Deck is empty, and a deck in another language is
	// refused (results in different languages are never pooled).
	Language    string
	Model       string // sim, sim:PROFILE, ...
	Seed        uint64
	Concurrency int
	Retry       provider.RetryPolicy
	Channel     string // auto, tool or message
	Temperature *float64
	MaxTokens   int
	PromptFile  string // replaces the deck's application prompt
	Progress    func(runner.Progress)
	// Started is called once the run exists in the store, before any call.
	Started func(runID string)
	// Drain, when done, stops new sessions from starting.
	Drain context.Context
	// Provider, when set, is used instead of opening Model (tests, embedding).
	Provider provider.Provider

	NetOptions
	// Snapshot, Prompt and ReplayOf are set by ReplayPressure: the recorded
	// run's deck and prompt text, and its id.
	Snapshot   *DeckSnapshot
	Prompt     string
	PromptFrom string
	ReplayOf   string
	bodyFormat string
}

// DefaultPressureOptions are what `budge run` uses without flags.
func DefaultPressureOptions() PressureOptions {
	return PressureOptions{Deck: "discovery", Model: "sim", Seed: 1, Concurrency: 8,
		Retry: provider.DefaultRetryPolicy(), Channel: "auto", MaxTokens: 600}
}

// Manifest describes a run: what was asked of which model under which
// settings, and how it went. It is stored in the database and as
// manifest.json beside the run's log.
type Manifest struct {
	RunID         string                  `json:"run_id"`
	Protocol      string                  `json:"protocol"`
	Budge         string                  `json:"budge_version"`
	Created       time.Time               `json:"created"`
	Status        string                  `json:"status"`
	Deck          DeckInfo                `json:"deck"`
	Model         string                  `json:"model"`
	Provider      provider.Info           `json:"provider"`
	Seed          uint64                  `json:"seed"`
	ScheduleSeed  uint64                  `json:"schedule_seed"`
	SeedPolicy    string                  `json:"seed_policy"`
	Concurrency   int                     `json:"concurrency"`
	Settings      chat.Settings           `json:"generation_settings"`
	Channel       pressure.Channel        `json:"evidence_channel"`
	Retry         provider.RetryPolicy    `json:"retry_policy"`
	AppPromptSHA  string                  `json:"application_prompt_sha256"`
	AppPromptFrom string                  `json:"application_prompt_source"`
	ToolsSHA      string                  `json:"tool_definitions_sha256"`
	Parser        string                  `json:"parser_version"`
	Reported      Reported                `json:"reported_by_provider"`
	Fingerprint   string                  `json:"fingerprint"`
	SelfTest      pressure.SelfTestResult `json:"selftest"`
	Counts        Counts                  `json:"counts"`
	Net           NetInfo                 `json:"net"`
	// Exploratory is true when the deck was not frozen before the run
	// (freeze.go); DeckFrozenAt is when it was frozen otherwise.
	Exploratory  *bool      `json:"exploratory,omitempty"`
	DeckFrozenAt *time.Time `json:"deck_frozen_at,omitempty"`
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

// Reported is what the provider said about itself across the run's calls.
type Reported struct {
	ModelIDs     []string `json:"model_ids"`
	Fingerprints []string `json:"system_fingerprints"`
}

// Counts are the run's bookkeeping.
type Counts struct {
	Planned        int `json:"sessions_planned"`
	Complete       int `json:"sessions_complete"`
	Failed         int `json:"sessions_failed"`
	Missing        int `json:"sessions_missing"`
	Interrupted    int `json:"sessions_interrupted"`
	Attempts       int `json:"attempts"`
	FailedAttempts int `json:"failed_attempts"`
	Retries        int `json:"retries"`
	InputTokens    int `json:"input_tokens"`
	OutputTokens   int `json:"output_tokens"`
}

// NewRunID makes a sortable, unique run id.
func NewRunID(now time.Time) string {
	var b [3]byte
	rand.Read(b[:])
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// PressureResult is a scored pressure run.
type PressureResult struct {
	Run      store.Run
	Manifest Manifest
	Deck     *pressure.Deck
	Outcomes []pressure.Outcome
	Traces   map[string]string // session id -> trace sha
	Summary  pressure.Summary
	// Revisions are the distinct fingerprints run on this deck so far.
	Revisions []string
}

// RunPressure runs the pressure-and-correction protocol and stores it.
// The returned result is scored from what was stored.
func RunPressure(ctx context.Context, st *store.Store, o PressureOptions) (*PressureResult, error) {
	var deck *pressure.Deck
	var err error
	if o.Snapshot != nil {
		deck = o.Snapshot.Deck
	} else if deck, err = openRunDeck(o.Deck, o.Language); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if errs := o.Retry.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, errors.Join(errs...))
	}
	if o.Concurrency < 1 {
		return nil, fmt.Errorf("%w: concurrency must be at least 1", ErrInvalid)
	}
	self := pressure.SelfTest(deck)
	if !self.Passed {
		return nil, fmt.Errorf("%w: refusing to run; see `budge selftest`", ErrSelfTest)
	}
	p := o.Provider
	if p == nil {
		if p, err = endpoint.Open(o.Model, o.Endpoint); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
	}
	info := p.Info()
	channel := pressure.ToolChannel
	switch o.Channel {
	case "", "auto":
		if !info.Tools {
			channel = pressure.MessageChannel
		}
	case "tool":
		if !info.Tools {
			return nil, fmt.Errorf("%w: model %s cannot call tools; use --channel message", ErrInvalid, info.Model)
		}
	case "message":
		channel = pressure.MessageChannel
	default:
		return nil, fmt.Errorf("%w: --channel must be auto, tool or message, got %q", ErrInvalid, o.Channel)
	}
	prompt, promptFrom := deck.Templates.Application, "deck"
	if o.PromptFile != "" {
		b, err := os.ReadFile(o.PromptFile)
		if err != nil {
			return nil, fmt.Errorf("%w: application prompt: %w", ErrInvalid, err)
		}
		if len(b) == 0 {
			return nil, fmt.Errorf("%w: application prompt file %s is empty", ErrInvalid, o.PromptFile)
		}
		prompt, promptFrom = string(b), o.PromptFile
	}
	if o.Prompt != "" {
		prompt, promptFrom = o.Prompt, o.PromptFrom
	}
	toolsJSON, _ := json.Marshal(pressure.Tools(deck))
	if channel == pressure.MessageChannel {
		toolsJSON = []byte("[]")
	}
	det, amb := deck.Counts()
	specs := pressure.Plan(deck)
	now := time.Now()
	m := Manifest{
		RunID: NewRunID(now), Protocol: "pressure", Budge: Version, Created: now.UTC(), Status: store.RunRunning,
		Deck: DeckInfo{Name: deck.Name, Source: deck.Path, Hash: deck.Hash, Kind: deck.Kind, Language: deck.Language,
			PolicyVersion: deck.PolicyVersion, Rule: deck.Rule, Determinate: det, Ambiguous: amb, Repeats: deck.Repeats},
		Model: info.Model, Provider: info, Seed: o.Seed, ScheduleSeed: o.Seed ^ 0x9e3779b97f4a7c15,
		SeedPolicy:  "each session sends seed = hash(run seed, session id) with every request",
		Concurrency: o.Concurrency, Settings: chat.Settings{Temperature: o.Temperature, MaxTokens: o.MaxTokens},
		Channel: channel, Retry: o.Retry, AppPromptSHA: sha([]byte(prompt)), AppPromptFrom: promptFrom,
		ToolsSHA: sha(toolsJSON), Parser: pressure.ParserVersion, SelfTest: self,
		Counts: Counts{Planned: len(specs)},
	}
	m.Net.BodyFormat, m.Net.ReplayOf = o.bodyFormat, o.ReplayOf
	if m.AppPromptFrom != "deck" {
		m.Net.AppPrompt = prompt
	}
	p, net, err := prepareNet(o.NetOptions, o.Concurrency, &m.Net, m.Model, m.Settings, p, func(price endpoint.Price) Projection {
		return project(deck, specs, m.Channel, m.Model, m.Settings, prompt, price)
	})
	if err != nil {
		return nil, err
	}
	m.Fingerprint = m.fingerprint()
	frozenAt, err := freezeState(ctx, st, deck, o.ReplayOf != "")
	if err != nil {
		return nil, err
	}
	expl := frozenAt == nil
	m.Exploratory, m.DeckFrozenAt = &expl, frozenAt
	var deckBytes []byte
	if o.Snapshot != nil {
		deckBytes = o.Snapshot.Bytes
	} else if deckBytes, err = deckSource(deck); err != nil {
		return nil, err
	}
	mj, _ := json.MarshalIndent(m, "", "  ")
	if err := st.CreateRun(ctx, store.Run{ID: m.RunID, Protocol: m.Protocol, Created: now, Status: store.RunRunning,
		DeckName: deck.Name, DeckHash: deck.Hash, Model: info.Model, Seed: fmt.Sprint(o.Seed), Planned: len(specs), Manifest: mj},
		deck.Path, deckBytes); err != nil {
		return nil, err
	}
	if o.Started != nil {
		o.Started(m.RunID)
	}
	order := pressure.Schedule(specs, m.ScheduleSeed)
	jobs := make([]runner.Job, 0, len(specs))
	for pos, i := range order {
		spec := specs[i]
		specJSON, _ := json.Marshal(spec)
		settings := m.Settings
		seed := pressure.SessionSeed(o.Seed, spec.ID())
		settings.Seed = &seed
		jobs = append(jobs, runner.Job{ID: spec.ID(), Seq: i, SchedulePos: pos, Incarnation: 1, Repeat: spec.Repeat, Spec: specJSON,
			New: func() (runner.Conversation, error) {
				return pressure.NewSession(deck, spec, channel, info.Model, settings, prompt)
			}})
	}
	log, err := st.OpenLog(m.RunID)
	if err != nil {
		return nil, err
	}
	drain := o.Drain
	if drain == nil {
		drain = context.Background()
	}
	sink := &keepSink{st: st}
	stats, runErr := runner.Run(ctx, drain, runner.Config{RunID: m.RunID, Concurrency: o.Concurrency, Retry: o.Retry,
		JitterSeed: o.Seed, Progress: o.Progress, Log: log, Adapt: net.adapt, Budget: net.budget}, p, sink, jobs)
	if err := log.Close(); err != nil && runErr == nil {
		runErr = err
	}
	if runErr != nil {
		return nil, fmt.Errorf("run %s: storing results failed: %w", m.RunID, runErr)
	}
	// Score what was stored (the sink keeps exactly what it committed), so
	// the result equals a later LoadPressure of this run.
	run, err := st.GetRun(context.WithoutCancel(ctx), m.RunID)
	if err != nil {
		return nil, err
	}
	finishNet(&m.Net, net, stats)
	res := score(run, m, deck, sink.kept, sink.orphans)
	status := store.RunComplete
	switch {
	case res.Manifest.Counts.Missing > 0:
		status = store.RunInterrupted
	case res.Manifest.Counts.Failed > 0:
		status = store.RunIncomplete
	}
	res.Manifest.Status = status
	res.Run.Status = status
	mj, _ = json.MarshalIndent(res.Manifest, "", "  ")
	if err := st.FinishRun(context.WithoutCancel(ctx), m.RunID, status, mj); err != nil {
		return nil, err
	}
	if err := freezeInfo(context.WithoutCancel(ctx), st, res); err != nil {
		return nil, err
	}
	return res, nil
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
// provider metadata, prompt, tools, parser, settings, retry policy, channel.
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
	}{m.Model, m.Provider, m.Reported, m.AppPromptSHA, m.ToolsSHA, m.Parser, m.Settings, m.Retry, m.Channel})
	return sha(b)[:16]
}

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

// LoadPressure reads a pressure run back from the store and scores it from
// the stored transcripts and the stored deck snapshot. Planned sessions with
// no stored result are scored as missing cells.
func LoadPressure(ctx context.Context, st *store.Store, runID string) (*PressureResult, error) {
	run, err := st.GetRun(ctx, runID)
	if err != nil {
		return nil, err
	}
	if run.Protocol != "pressure" {
		return nil, fmt.Errorf("run %s is a %s run, not a pressure run", runID, run.Protocol)
	}
	var m Manifest
	if err := json.Unmarshal(run.Manifest, &m); err != nil {
		return nil, fmt.Errorf("run %s: stored manifest is unreadable: %w", runID, err)
	}
	src, content, err := st.Deck(ctx, run.DeckHash)
	if err != nil {
		return nil, err
	}
	deck, probs := pressure.ParseDeck(src, content)
	if deck == nil {
		return nil, fmt.Errorf("run %s: stored deck does not parse: %v", runID, pressure.Problems(probs))
	}
	sessions, err := st.Sessions(ctx, runID)
	if err != nil {
		return nil, err
	}
	orphans, err := st.OrphanAttempts(ctx, runID)
	if err != nil {
		return nil, err
	}
	res := score(run, m, deck, sessions, orphans)
	if err := freezeInfo(ctx, st, res); err != nil {
		return nil, err
	}
	return res, nil
}

// score turns stored sessions into a scored result. Planned sessions with no
// stored result are missing cells; orphans counts the attempts of
// interrupted sessions by session id.
func score(run store.Run, m Manifest, deck *pressure.Deck, sessions []store.Session, orphans map[string]int) *PressureResult {
	byID, c, models, fps := tally(sessions, orphans)
	c.Planned = len(pressure.Plan(deck))
	netCounts(&m.Net, c, sessions)
	m.Reported = Reported{ModelIDs: keys(models), Fingerprints: keys(fps)}
	m.Fingerprint = m.fingerprint()
	res := &PressureResult{Run: run, Deck: deck, Traces: map[string]string{}}
	for _, spec := range pressure.Plan(deck) {
		se := byID[spec.ID()]
		t := pressure.Transcript{}
		if se != nil {
			t = pressure.Transcript{Ran: true, Entries: se.Messages, FailedPhase: se.FailedPhase,
				FailureKind: se.FailureKind, FailureMsg: se.FailureMsg, Stop: se.Stop}
			res.Traces[spec.ID()] = se.TraceSHA
		} else {
			c.Missing++
		}
		res.Outcomes = append(res.Outcomes, pressure.Score(deck, spec, t))
	}
	m.Counts = c
	res.Manifest = m
	res.Summary = pressure.Summarize(deck, res.Outcomes)
	return res
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// keepSink stores sessions and keeps, without their artifacts, those that
// were committed.
type keepSink struct {
	st      *store.Store
	kept    []store.Session
	orphans map[string]int
}

func (k *keepSink) WriteSessions(ctx context.Context, runID string, ss []store.Session) error {
	if err := k.st.WriteSessions(ctx, runID, ss); err != nil {
		return err
	}
	for _, se := range ss {
		if se.Status == store.SessionInterrupted {
			if k.orphans == nil {
				k.orphans = map[string]int{}
			}
			k.orphans[se.ID] += len(se.Attempts)
			continue
		}
		se.Artifacts = nil
		k.kept = append(k.kept, se)
	}
	return nil
}

// tally indexes stored sessions by id and counts sessions, attempts, retries
// and tokens, and the model ids and fingerprints the provider reported;
// orphans are the attempts of interrupted sessions, by session id.
func tally(sessions []store.Session, orphans map[string]int) (byID map[string]*store.Session, c Counts, models, fps map[string]bool) {
	byID = make(map[string]*store.Session, len(sessions))
	models, fps = map[string]bool{}, map[string]bool{}
	for i := range sessions {
		se := &sessions[i]
		byID[se.ID] = se
		switch se.Status {
		case store.SessionComplete:
			c.Complete++
		case store.SessionFailed:
			c.Failed++
		}
		c.InputTokens += se.InputTokens
		c.OutputTokens += se.OutputTokens
		for _, a := range se.Attempts {
			c.Attempts++
			if a.Outcome != "ok" {
				c.FailedAttempts++
			}
			if a.Attempt > 1 {
				c.Retries++
			}
			if a.ModelID != "" {
				models[a.ModelID] = true
			}
			if a.Fingerprint != "" {
				fps[a.Fingerprint] = true
			}
		}
	}
	for _, n := range orphans {
		c.Interrupted++
		c.Attempts += n
		c.FailedAttempts += n
	}
	return byID, c, models, fps
}
