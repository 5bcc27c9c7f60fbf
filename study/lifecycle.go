package study

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/provider/endpoint"
	"github.com/buildlab/budge/provider/replay"
	"github.com/buildlab/budge/runner"
	"github.com/buildlab/budge/store"
)

// NetOptions say how a run of either protocol reaches a model that is not
// in process, and what it may spend.
type NetOptions struct {
	// Endpoint says how the model is opened: base URL, config file of named
	// endpoints and prices, API keys.
	Endpoint endpoint.Options
	// MaxCost, when positive, is the most the run may cost in US dollars:
	// a run projected to cost more is refused, and a run stops starting
	// sessions before its running cost would pass it.
	MaxCost float64
	// CacheDir, when set, is a response cache directory.
	CacheDir string
}

// runControl is what every run, new or resumed, takes from its caller
// beyond the protocol: the provider (or how to open one), concurrency, and
// the callbacks.
type runControl struct {
	Net         NetOptions
	Provider    provider.Provider
	Concurrency int
	Progress    func(runner.Progress)
	Started     func(runID string)
	Drain       context.Context
}

// resumable is what the one resume path needs from a stored run of any
// protocol. The protocol adapters (ResumePressure, ResumeFraming) fill it
// from the run's manifest and snapshot.
type resumable struct {
	run   store.Run
	model string
	prov  provider.Info
	seed  uint64
	retry provider.RetryPolicy
	conc  int
	net   *NetInfo
	// ids lists every planned session id.
	ids []string
	// open opens the recorded model with the caller's endpoint options.
	open func(eo endpoint.Options) (provider.Provider, error)
	// check refuses a provider the run cannot continue with (nil: none).
	check func(provider.Info) error
	// project estimates the cost of the sessions still to run.
	project func(todo map[string]bool, price endpoint.Price) Projection
	// jobs builds the runner jobs of the sessions still to run, in schedule
	// order, each as the next incarnation of what earlier runs left.
	jobs func(todo map[string]bool, incarnations map[string]int) []runner.Job
	// manifest encodes the run's manifest as it stands.
	manifest  func() []byte
	setStatus func(string)
	// maxOutput is the most output tokens one call can produce.
	maxOutput int
}

// resumeRun continues an interrupted run in place, whatever its protocol.
// Sessions already stored (complete, or failed for good) are not sent
// again; every other planned session runs with the recorded seed, settings
// and schedule as the next incarnation of whatever attempts earlier runs
// left, so no stored observation is overwritten. It returns false when
// nothing was left to run and the run was already finished.
func resumeRun(ctx context.Context, st *store.Store, c runControl, r resumable) (bool, error) {
	id := r.run.ID
	if r.net.ReplayOf != "" {
		return false, fmt.Errorf("%w: run %s is a replay; replay %s again instead of resuming it", ErrInvalid, id, r.net.ReplayOf)
	}
	p := c.Provider
	if p == nil {
		eo := c.Net.Endpoint
		if eo.BaseURL == "" {
			eo.BaseURL = baseURLOf(r.prov)
		}
		var err error
		if p, err = r.open(eo); err != nil {
			return false, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
	}
	info := p.Info()
	if info.Name != r.prov.Name || info.Model != r.model {
		return false, fmt.Errorf("%w: run %s was made with %s (%s); resuming it with %s (%s) would mix models", ErrInvalid, id, r.model, r.prov.Name, info.Model, info.Name)
	}
	if r.check != nil {
		if err := r.check(info); err != nil {
			return false, err
		}
	}
	stored, err := st.StoredIDs(ctx, id)
	if err != nil {
		return false, err
	}
	incarnations, err := st.Incarnations(ctx, id)
	if err != nil {
		return false, err
	}
	todo := map[string]bool{}
	for _, sid := range r.ids {
		if _, done := stored[sid]; !done {
			todo[sid] = true
		}
	}
	if len(todo) == 0 && r.run.Status != store.RunRunning {
		// Nothing is missing: nothing to send, nothing to change.
		if c.Started != nil {
			c.Started(id)
		}
		return false, nil
	}
	// A kill can cut the log's last line, or lose the records of sessions
	// the database had already committed: repair it before appending.
	logged, err := st.RepairLog(id)
	if err != nil {
		return false, err
	}
	prior, err := st.Sessions(ctx, id)
	if err != nil {
		return false, err
	}
	var lost []byte
	for _, se := range prior {
		if !logged[se.ID] {
			lost = append(lost, runner.LogLines(id, se)...)
		}
	}
	if err := st.AppendLog(id, lost); err != nil {
		return false, err
	}
	conc := c.Concurrency
	if conc < 1 {
		conc = r.conc
	}
	nr := &netRun{}
	if !inProcess(info) {
		nr.adapt = runner.NewAdaptive(conc)
	}
	if c.Net.CacheDir != "" {
		cache, err := replay.NewCache(c.Net.CacheDir, p)
		if err != nil {
			return false, err
		}
		nr.cache, p = cache, cache
		r.net.Cache = &CacheInfo{Dir: c.Net.CacheDir}
	}
	if c.Net.MaxCost > 0 && len(todo) > 0 {
		price, ok := c.Net.Endpoint.Config.PriceOf(r.model)
		if !ok {
			return false, fmt.Errorf("%w: --max-cost needs a price for %s in the config file", ErrInvalid, r.model)
		}
		spent := 0.0
		for _, se := range prior {
			spent += price.Cost(se.InputTokens, se.OutputTokens)
		}
		proj := r.project(todo, price)
		if spent+proj.Cost > c.Net.MaxCost {
			return false, fmt.Errorf("%w: %w: run %s has cost $%.4f; its %d remaining sessions are projected at $%.4f (%s), more than --max-cost $%g allows",
				ErrInvalid, ErrCostLimit, id, spent, len(todo), proj.Cost, proj.Assumptions, c.Net.MaxCost)
		}
		r.net.Price, r.net.MaxCost, r.net.Projected = &price, c.Net.MaxCost, &proj
		nr.budget = &runner.Budget{Limit: c.Net.MaxCost - spent, PerSession: proj.Cost / float64(max(len(todo), 1)), MaxOutput: r.maxOutput, Price: price.Cost}
	}
	resume := Resume{At: time.Now().UTC(), Budge: Version, Sessions: len(todo)}
	if info.Detail != r.prov.Detail {
		resume.Provider = info.Detail
	}
	r.net.Resumes = append(r.net.Resumes, resume)
	r.setStatus(store.RunRunning)
	if err := st.ReopenRun(ctx, id, r.manifest()); err != nil {
		return false, err
	}
	if c.Started != nil {
		c.Started(id)
	}
	jobs := r.jobs(todo, incarnations)
	log, err := st.OpenLog(id)
	if err != nil {
		return false, err
	}
	drain := c.Drain
	if drain == nil {
		drain = context.Background()
	}
	stats, runErr := runner.Run(ctx, drain, runner.Config{RunID: id, Concurrency: conc, Retry: r.retry,
		JitterSeed: r.seed, Progress: c.Progress, Log: log, Adapt: nr.adapt, Budget: nr.budget}, p, st, jobs)
	if err := log.Close(); err != nil && runErr == nil {
		runErr = err
	}
	if runErr != nil {
		return false, fmt.Errorf("run %s: storing results failed: %w", id, runErr)
	}
	finishNet(r.net, nr, stats)
	return true, nil
}

// finalStatus is a scored run's status: interrupted while planned sessions
// are missing, incomplete while some failed for good.
func finalStatus(c Counts) string {
	switch {
	case c.Missing > 0:
		return store.RunInterrupted
	case c.Failed > 0:
		return store.RunIncomplete
	}
	return store.RunComplete
}

// manifestJSON encodes a manifest the way every run stores it.
func manifestJSON(m any) []byte {
	b, _ := json.MarshalIndent(m, "", "  ")
	return b
}
