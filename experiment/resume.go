package experiment

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/provider"
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
	id, m, deck := r.run.ID, r.m, r.deck
	if m.Net.ReplayOf != "" {
		return nil, fmt.Errorf("%w: run %s is a replay; replay %s again instead of resuming it", ErrInvalid, id, m.Net.ReplayOf)
	}
	p := o.Provider
	if p == nil {
		eo := o.Endpoint
		if eo.BaseURL == "" {
			eo.BaseURL = baseURLOf(m.Provider)
		}
		if p, err = OpenModelWith(m.Model, eo); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
	}
	info := p.Info()
	if info.Name != m.Provider.Name || info.Model != m.Model {
		return nil, fmt.Errorf("%w: run %s was made with %s (%s); resuming it with %s (%s) would mix models", ErrInvalid, id, m.Model, m.Provider.Name, info.Model, info.Name)
	}
	if m.Channel == pressure.ToolChannel && !info.Tools {
		return nil, fmt.Errorf("%w: run %s uses the tool channel but %s cannot call tools", ErrInvalid, id, info.Model)
	}
	stored, err := st.StoredIDs(ctx, id)
	if err != nil {
		return nil, err
	}
	incarnations, err := st.Incarnations(ctx, id)
	if err != nil {
		return nil, err
	}
	specs := pressure.Plan(deck)
	var todo []pressure.Spec
	for _, s := range specs {
		if _, done := stored[s.ID()]; !done {
			todo = append(todo, s)
		}
	}
	if len(todo) == 0 && r.run.Status != store.RunRunning {
		// Nothing is missing: nothing to send, nothing to change.
		if o.Started != nil {
			o.Started(id)
		}
		return LoadPressure(ctx, st, id)
	}
	// A kill can cut the log's last line, or lose the records of sessions
	// the database had already committed: repair it before appending.
	logged, err := st.RepairLog(id)
	if err != nil {
		return nil, err
	}
	prior, err := st.Sessions(ctx, id)
	if err != nil {
		return nil, err
	}
	var lost []byte
	for _, se := range prior {
		if !logged[se.ID] {
			lost = append(lost, runner.LogLines(id, se)...)
		}
	}
	if err := st.AppendLog(id, lost); err != nil {
		return nil, err
	}

	if o.Concurrency < 1 {
		o.Concurrency = m.Concurrency
	}
	nr := &netRun{}
	if !inProcess(info) {
		nr.adapt = runner.NewAdaptive(o.Concurrency)
	}
	if o.CacheDir != "" {
		c, err := replay.NewCache(o.CacheDir, p)
		if err != nil {
			return nil, err
		}
		nr.cache, p = c, c
		m.Net.Cache = &CacheInfo{Dir: o.CacheDir}
	}
	if o.MaxCost > 0 && len(todo) > 0 {
		price, ok := o.Endpoint.Config.PriceOf(m.Model)
		if !ok {
			return nil, fmt.Errorf("%w: --max-cost needs a price for %s in the config file", ErrInvalid, m.Model)
		}
		spent := 0.0
		for _, se := range prior {
			spent += price.Cost(se.InputTokens, se.OutputTokens)
		}
		proj := project(deck, todo, m.Channel, m.Model, m.Settings, r.prompt, price)
		if spent+proj.Cost > o.MaxCost {
			return nil, fmt.Errorf("%w: %w: run %s has cost $%.4f; its %d remaining sessions are projected at $%.4f (%s), more than --max-cost $%g allows",
				ErrInvalid, ErrCostLimit, id, spent, len(todo), proj.Cost, proj.Assumptions, o.MaxCost)
		}
		m.Net.Price, m.Net.MaxCost, m.Net.Projected = &price, o.MaxCost, &proj
		nr.budget = &runner.Budget{Limit: o.MaxCost - spent, PerSession: proj.Cost / float64(max(len(todo), 1)), MaxOutput: maxOutput(m.Settings), Price: price.Cost}
	}
	resume := Resume{At: time.Now().UTC(), Budge: Version, Sessions: len(todo)}
	if info.Detail != m.Provider.Detail {
		resume.Provider = info.Detail
	}
	m.Net.Resumes = append(m.Net.Resumes, resume)
	m.Status = store.RunRunning
	mj, _ := json.MarshalIndent(m, "", "  ")
	if err := st.ReopenRun(ctx, id, mj); err != nil {
		return nil, err
	}
	if o.Started != nil {
		o.Started(id)
	}
	order := pressure.Schedule(specs, m.ScheduleSeed)
	want := map[string]bool{}
	for _, s := range todo {
		want[s.ID()] = true
	}
	var jobs []runner.Job
	for pos, i := range order {
		spec := specs[i]
		if !want[spec.ID()] {
			continue
		}
		specJSON, _ := json.Marshal(spec)
		settings := m.Settings
		seed := pressure.SessionSeed(m.Seed, spec.ID())
		settings.Seed = &seed
		jobs = append(jobs, runner.Job{ID: spec.ID(), Seq: i, SchedulePos: pos, Incarnation: incarnations[spec.ID()] + 1,
			Repeat: spec.Repeat, Spec: specJSON,
			New: func() (runner.Conversation, error) {
				return pressure.NewSession(deck, spec, m.Channel, m.Model, settings, r.prompt)
			}})
	}
	log, err := st.OpenLog(id)
	if err != nil {
		return nil, err
	}
	drain := o.Drain
	if drain == nil {
		drain = context.Background()
	}
	stats, runErr := runner.Run(ctx, drain, runner.Config{RunID: id, Concurrency: o.Concurrency, Retry: m.Retry,
		JitterSeed: m.Seed, Progress: o.Progress, Log: log, Adapt: nr.adapt, Budget: nr.budget}, p, st, jobs)
	if err := log.Close(); err != nil && runErr == nil {
		runErr = err
	}
	if runErr != nil {
		return nil, fmt.Errorf("run %s: storing results failed: %w", id, runErr)
	}
	wctx := context.WithoutCancel(ctx)
	finishNet(&m, nr, stats)
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
	res := score(run, m, deck, sessions, orphans)
	status := store.RunComplete
	switch {
	case res.Manifest.Counts.Missing > 0:
		status = store.RunInterrupted
	case res.Manifest.Counts.Failed > 0:
		status = store.RunIncomplete
	}
	res.Manifest.Status, res.Run.Status = status, status
	mj, _ = json.MarshalIndent(res.Manifest, "", "  ")
	if err := st.FinishRun(wctx, id, status, mj); err != nil {
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
