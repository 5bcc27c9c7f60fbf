package study

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/provider/endpoint"
	"github.com/buildlab/budge/provider/replay"
	"github.com/buildlab/budge/runner"
	"github.com/buildlab/budge/store"
)

// recorded is a stored pressure run with what it takes to ask its questions
// again: its manifest, its deck snapshot and its application prompt.
type recorded struct {
	run    store.Run
	m      Manifest
	deck   *pressure.Deck
	bytes  []byte
	prompt string
}

func loadRecorded(ctx context.Context, st *store.Store, ref string) (*recorded, error) {
	id, err := st.Resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	run, err := st.GetRun(ctx, id)
	if err != nil {
		return nil, err
	}
	if run.Protocol != "pressure" {
		return nil, fmt.Errorf("%w: run %s is a %s run, not a pressure run", ErrInvalid, id, run.Protocol)
	}
	r := &recorded{run: run}
	if err := json.Unmarshal(run.Manifest, &r.m); err != nil {
		return nil, fmt.Errorf("run %s: stored manifest is unreadable: %w", id, err)
	}
	src, content, err := st.Deck(ctx, run.DeckHash)
	if err != nil {
		return nil, err
	}
	deck, probs := pressure.ParseDeck(src, content)
	if deck == nil {
		return nil, fmt.Errorf("run %s: stored deck does not parse: %v", id, pressure.Problems(probs))
	}
	r.deck, r.bytes = deck, content
	r.prompt = deck.Templates.Application
	if r.m.AppPromptFrom != "deck" {
		r.prompt = r.m.Net.AppPrompt
	}
	if sha([]byte(r.prompt)) != r.m.AppPromptSHA {
		return nil, fmt.Errorf("%w: run %s: its application prompt (from %s) is not in the store, so its questions cannot be asked again", ErrInvalid, id, r.m.AppPromptFrom)
	}
	return r, nil
}

// ReplayPressure runs a recorded run's sessions again as a new run, answered
// from the recorded responses with zero network calls: the same deck
// snapshot, prompt, model name, settings, channel and seed, so every
// request matches its recording; a checker or report that changed since is
// applied to the old data. o supplies only concurrency, progress and the
// callbacks.
func ReplayPressure(ctx context.Context, st *store.Store, ref string, o PressureOptions) (*PressureResult, error) {
	r, err := loadRecorded(ctx, st, ref)
	if err != nil {
		return nil, err
	}
	format := r.m.Net.BodyFormat
	if format == "" {
		format = replay.FormatOf(r.m.Provider.Name)
	}
	rp, err := replay.New(ctx, st, r.run.ID, format, r.m.Provider)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	o.Snapshot = &DeckSnapshot{Deck: r.deck, Bytes: r.bytes}
	o.Provider, o.Model, o.bodyFormat = rp, r.m.Model, format
	o.Seed, o.Channel, o.Retry = r.m.Seed, string(r.m.Channel), r.m.Retry
	o.Temperature, o.MaxTokens = r.m.Settings.Temperature, r.m.Settings.MaxTokens
	o.Prompt, o.PromptFrom, o.PromptFile = r.prompt, r.m.AppPromptFrom, ""
	o.ReplayOf, o.MaxCost, o.CacheDir = r.run.ID, 0, ""
	if o.Concurrency < 1 {
		o.Concurrency = r.m.Concurrency
	}
	return RunPressure(ctx, st, o)
}

// ResumePressure continues an interrupted run in place. Sessions already
// stored (complete, or failed for good) are not sent again; every other
// planned session runs with the recorded seed, settings and schedule, as
// the next incarnation of whatever attempts its earlier runs left, so no
// stored observation is overwritten. The run is then scored from the store,
// old sessions and new together: with a deterministic model the measures
// equal those of an uninterrupted run. This holds after kill -9 at any
// moment, because a session is stored whole or not at all.
//
// From o it takes the provider or the endpoint options (a new base URL is
// allowed and recorded), concurrency, the cost limit, progress and the
// callbacks. The model, seed, settings, channel and retry policy are the
// run's own.
func ResumePressure(ctx context.Context, st *store.Store, ref string, o PressureOptions) (*PressureResult, error) {
	r, err := loadRecorded(ctx, st, ref)
	if err != nil {
		return nil, err
	}
	id, deck := r.run.ID, r.deck
	m := &r.m
	specs := pressure.Plan(deck)
	ids := make([]string, len(specs))
	for i, s := range specs {
		ids[i] = s.ID()
	}
	todoSpecs := func(todo map[string]bool) []pressure.Spec {
		var out []pressure.Spec
		for _, s := range specs {
			if todo[s.ID()] {
				out = append(out, s)
			}
		}
		return out
	}
	ran, err := resumeRun(ctx, st, runControl{Net: o.NetOptions, Provider: o.Provider, Concurrency: o.Concurrency,
		Progress: o.Progress, Started: o.Started, Drain: o.Drain}, resumable{
		run: r.run, model: m.Model, prov: m.Provider, seed: m.Seed, retry: m.Retry, conc: m.Concurrency, net: &m.Net,
		ids: ids, maxOutput: maxOutput(m.Settings),
		open: func(eo endpoint.Options) (provider.Provider, error) { return endpoint.Open(m.Model, eo) },
		check: func(info provider.Info) error {
			if m.Channel == pressure.ToolChannel && !info.Tools {
				return fmt.Errorf("%w: run %s uses the tool channel but %s cannot call tools", ErrInvalid, id, info.Model)
			}
			return nil
		},
		project: func(todo map[string]bool, price endpoint.Price) Projection {
			return project(deck, todoSpecs(todo), m.Channel, m.Model, m.Settings, r.prompt, price)
		},
		jobs: func(todo map[string]bool, inc map[string]int) []runner.Job {
			var jobs []runner.Job
			for pos, i := range pressure.Schedule(specs, m.ScheduleSeed) {
				spec := specs[i]
				if !todo[spec.ID()] {
					continue
				}
				specJSON, _ := json.Marshal(spec)
				settings := m.Settings
				seed := pressure.SessionSeed(m.Seed, spec.ID())
				settings.Seed = &seed
				jobs = append(jobs, runner.Job{ID: spec.ID(), Seq: i, SchedulePos: pos, Incarnation: inc[spec.ID()] + 1,
					Repeat: spec.Repeat, Spec: specJSON,
					New: func() (runner.Conversation, error) {
						return pressure.NewSession(deck, spec, m.Channel, m.Model, settings, r.prompt)
					}})
			}
			return jobs
		},
		manifest:  func() []byte { return manifestJSON(m) },
		setStatus: func(s string) { m.Status = s },
	})
	if err != nil {
		return nil, err
	}
	if !ran {
		return LoadPressure(ctx, st, id)
	}
	wctx := context.WithoutCancel(ctx)
	sessions, err := st.Sessions(wctx, id)
	if err != nil {
		return nil, err
	}
	orphans, err := st.OrphanAttempts(wctx, id)
	if err != nil {
		return nil, err
	}
	run, err := st.GetRun(wctx, id)
	if err != nil {
		return nil, err
	}
	res := score(run, *m, deck, sessions, orphans)
	status := finalStatus(res.Manifest.Counts)
	res.Manifest.Status, res.Run.Status = status, status
	if err := st.FinishRun(wctx, id, status, manifestJSON(res.Manifest)); err != nil {
		return nil, err
	}
	// The freeze state and revision count are read as for a new run, so a
	// resumed run keeps them.
	if err := freezeInfo(wctx, st, res); err != nil {
		return nil, err
	}
	return res, nil
}

// baseURLOf reads the base URL a provider recorded in its detail.
func baseURLOf(info provider.Info) string {
	var d struct {
		BaseURL string `json:"base_url"`
	}
	if json.Unmarshal([]byte(info.Detail), &d) == nil {
		return d.BaseURL
	}
	return ""
}
