package study

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/dataset"
	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/provider/endpoint"
	"github.com/buildlab/budge/provider/replay"
	"github.com/buildlab/budge/provider/sim"
	"github.com/buildlab/budge/runner"
	"github.com/buildlab/budge/stats"
	"github.com/buildlab/budge/store"
)

// FramingOptions configure a DialDefer framing run.
type FramingOptions struct {
	Data        string // "sample", a file or a directory
	DataOptions dataset.Options
	// SampleN > 0 draws that many items (stratified by Stratify when set)
	// with SampleSeed.
	SampleN    int
	Stratify   string
	SampleSeed uint64
	Design     framing.Design
	Model      string // sim, sim:PROFILE, sim:profile.yaml
	// Knowledge is a JSONL answer table for the simulator; without it the
	// simulator is told the answers of the run's own items (a fully
	// informed judge whose errors are the profile's).
	Knowledge   string
	Seed        uint64
	Concurrency int
	Retry       provider.RetryPolicy
	Temperature *float64
	MaxTokens   int
	Bootstrap   stats.Bootstrap
	Progress    func(runner.Progress)
	Started     func(runID string)
	Drain       context.Context
	Provider    provider.Provider
	NetOptions
	// snapshot and replayOf are set by ReplayFraming: the recorded run's
	// items and design, and its id.
	snapshot   *FramingSnapshot
	replayOf   string
	bodyFormat string
}

// DefaultFramingOptions are what `budge framing run` uses without flags.
func DefaultFramingOptions() FramingOptions {
	// The paper's sampling temperature, sent explicitly; a fresh variable
	// per call, so no caller can change another's default.
	zero := 0.0
	return FramingOptions{Data: dataset.SampleName, Design: framing.DefaultDesign(), Model: "sim", Seed: 1, SampleSeed: 42,
		Concurrency: 8, Retry: provider.DefaultRetryPolicy(), MaxTokens: 300, Bootstrap: stats.DefaultBootstrap(42),
		Temperature: &zero}
}

// FramingSnapshot is what a framing run stores instead of a deck: the items
// as they were used and the design, so the run can be scored, reported and
// exported from the store alone.
type FramingSnapshot struct {
	Version int            `json:"snapshot_version"`
	Data    string         `json:"data"`
	Design  framing.Design `json:"design"`
	Items   []framing.Item `json:"items"`
}

// FramingManifest describes a framing run.
type FramingManifest struct {
	RunID        string               `json:"run_id"`
	Protocol     string               `json:"protocol"`
	Budge        string               `json:"budge_version"`
	Created      time.Time            `json:"created"`
	Status       string               `json:"status"`
	Data         FramingData          `json:"data"`
	Model        string               `json:"model"`
	Provider     provider.Info        `json:"provider"`
	Seed         uint64               `json:"seed"`
	ScheduleSeed uint64               `json:"schedule_seed"`
	SeedPolicy   string               `json:"seed_policy"`
	Concurrency  int                  `json:"concurrency"`
	Settings     chat.Settings        `json:"generation_settings"`
	Retry        provider.RetryPolicy `json:"retry_policy"`
	Templates    []TemplateInfo       `json:"templates"`
	Labels       []framing.LabelSet   `json:"labels"`
	Mitigations  []string             `json:"mitigations"`
	Mode         string               `json:"mitigation_mode"`
	Challenges   []string             `json:"challenges,omitempty"`
	Policy       string               `json:"unparseable_policy"`
	Tolerant     bool                 `json:"tolerant_parsing"`
	Parser       string               `json:"parser_version"`
	Bootstrap    stats.Bootstrap      `json:"bootstrap"`
	Reported     Reported             `json:"reported_by_provider"`
	Fingerprint  string               `json:"fingerprint"`
	Counts       Counts               `json:"counts"`
	Import       *framing.ImportCheck `json:"import,omitempty"`
	// Knowledge is the simulated judge's answer table file, when one was
	// given, so a resume asks the same judge.
	Knowledge string  `json:"sim_knowledge,omitempty"`
	Net       NetInfo `json:"net"`
}

// FramingData identifies the items of a run.
type FramingData struct {
	Source     string         `json:"source"`
	SHA        string         `json:"snapshot_sha256"`
	Items      int            `json:"items"`
	Domains    map[string]int `json:"domains"`
	SampleN    int            `json:"sample,omitempty"`
	Stratify   string         `json:"stratify,omitempty"`
	SampleSeed uint64         `json:"sample_seed,omitempty"`
}

// TemplateInfo names a template set and hashes its text.
type TemplateInfo struct {
	Name   string `json:"name"`
	Source string `json:"source"`
	SHA    string `json:"sha256"`
}

// FramingResult is a scored framing run.
type FramingResult struct {
	Run          store.Run
	Manifest     FramingManifest
	Snapshot     *FramingSnapshot
	Observations []framing.Observation
	Summary      *framing.Summary
	Traces       map[string]string // session id -> trace sha
}

// OpenFramingModel turns a model name into a provider for framing prompts:
// "sim", "sim:PROFILE" or "sim:profile.yaml" is the simulated judge with
// the given answer table; every other name is opened like any run's model,
// with the endpoint options (base URL, config file, keys, timeout).
func OpenFramingModel(name string, k *sim.Knowledge, eo endpoint.Options) (provider.Provider, error) {
	kind, arg, _ := strings.Cut(name, ":")
	switch kind {
	case "", "sim":
		p, err := sim.LookupFramingProfile(arg)
		if err != nil {
			return nil, err
		}
		return sim.NewJudge(p, k), nil
	}
	return endpoint.Open(name, eo)
}

// openFramingJudge opens the run's model, telling the simulated judge the
// answers of the items (or the table in knowledge).
func openFramingJudge(model, knowledge string, d *framing.Design, items []framing.Item, eo endpoint.Options) (provider.Provider, error) {
	k := simKnowledge(d, items)
	if knowledge != "" {
		var err error
		if k, err = sim.LoadKnowledge(knowledge); err != nil {
			return nil, err
		}
	}
	return OpenFramingModel(model, k, eo)
}

func simKnowledge(d *framing.Design, items []framing.Item) *sim.Knowledge {
	ks := framing.KnowledgeOf(d, items)
	entries := make([]sim.KnowledgeEntry, len(ks))
	for i, k := range ks {
		entries[i] = sim.KnowledgeEntry{Question: k.Question, Correct: k.Correct, Incorrect: k.Incorrect}
	}
	return sim.NewKnowledge(entries)
}

// LoadFramingItems reads, samples and checks the items of a run: every
// problem is reported before anything is written.
func LoadFramingItems(o FramingOptions) ([]framing.Item, error) {
	items, err := dataset.Open(o.Data, o.DataOptions)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	items = dataset.Sample(items, o.SampleN, o.Stratify, o.SampleSeed)
	var redacted []string
	for i := range items {
		if items[i].Dialogue != nil && items[i].Dialogue.Redacted {
			redacted = append(redacted, items[i].ID)
		}
	}
	if len(redacted) > 0 {
		return nil, fmt.Errorf("%w: %d naturalistic item(s) have no dialogue transcript (the source redacted it), so their dialogue condition cannot be rebuilt: %s; leave their file out of --data (r/AIO's released experiment file is such a file)",
			ErrInvalid, len(redacted), strings.Join(head(redacted, 5), ", "))
	}
	return items, nil
}

func head(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("... (%d more)", len(s)-n))
	}
	return s
}

// RunFraming runs the DialDefer protocol and stores it. The result is
// scored from what was stored.
func RunFraming(ctx context.Context, st *store.Store, o FramingOptions) (*FramingResult, error) {
	d := o.Design
	if errs := d.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrInvalid, strings.Join(errs, "; "))
	}
	if errs := o.Retry.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, errors.Join(errs...))
	}
	if o.Concurrency < 1 {
		return nil, fmt.Errorf("%w: concurrency must be at least 1", ErrInvalid)
	}
	var (
		items []framing.Item
		err   error
	)
	if o.snapshot != nil {
		items = o.snapshot.Items
	} else if items, err = LoadFramingItems(o); err != nil {
		return nil, err
	}
	p := o.Provider
	if p == nil {
		if p, err = openFramingJudge(o.Model, o.Knowledge, &d, items, o.Endpoint); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
	}
	info := p.Info()
	snap := &FramingSnapshot{Version: 1, Data: o.Data, Design: d, Items: items}
	snapJSON, err := json.Marshal(snap)
	if err != nil {
		return nil, err
	}
	specs := framing.Plan(&d, items)
	now := time.Now()
	m := newFramingManifest(NewRunID(now), now, o.Data, snapJSON, items, &d, o.Bootstrap)
	m.Model, m.Provider, m.Seed, m.ScheduleSeed = info.Model, info, o.Seed, o.Seed^0x9e3779b97f4a7c15
	m.SeedPolicy = "each session sends seed = hash(run seed, session id) with every request"
	m.Concurrency, m.Retry = o.Concurrency, o.Retry
	m.Settings = chat.Settings{Temperature: o.Temperature, MaxTokens: o.MaxTokens}
	m.Data.SampleN, m.Data.Stratify, m.Data.SampleSeed = o.SampleN, o.Stratify, o.SampleSeed
	m.Counts.Planned = len(specs)
	m.Knowledge = o.Knowledge
	m.Net.BodyFormat, m.Net.ReplayOf = o.bodyFormat, o.replayOf
	p, net, err := prepareNet(o.NetOptions, o.Concurrency, &m.Net, m.Model, m.Settings, p, func(price endpoint.Price) Projection {
		return projectFraming(&d, specs, items, info.Model, m.Settings, price)
	})
	if err != nil {
		return nil, err
	}
	m.Fingerprint = m.fingerprint()
	mj, _ := json.MarshalIndent(m, "", "  ")
	if err := st.CreateRun(ctx, store.Run{ID: m.RunID, Protocol: m.Protocol, Created: now, Status: store.RunRunning,
		DeckName: dataName(o.Data), DeckHash: m.Data.SHA, Model: info.Model, Seed: fmt.Sprint(o.Seed), Planned: len(specs), Manifest: mj},
		o.Data, snapJSON); err != nil {
		return nil, err
	}
	if o.Started != nil {
		o.Started(m.RunID)
	}
	jobs := framingJobs(&d, specs, items, &m, func(string) (int, bool) { return 1, true })
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
	run, err := st.GetRun(context.WithoutCancel(ctx), m.RunID)
	if err != nil {
		return nil, err
	}
	finishNet(&m.Net, net, stats)
	res := scoreFraming(run, m, snap, sink.kept, sink.orphans)
	return res, finishFraming(context.WithoutCancel(ctx), st, res)
}

func finishFraming(ctx context.Context, st *store.Store, res *FramingResult) error {
	status := finalStatus(res.Manifest.Counts)
	res.Manifest.Status, res.Run.Status = status, status
	return st.FinishRun(ctx, res.Manifest.RunID, status, manifestJSON(res.Manifest))
}

func newFramingManifest(id string, now time.Time, data string, snap []byte, items []framing.Item, d *framing.Design, b stats.Bootstrap) FramingManifest {
	m := FramingManifest{RunID: id, Protocol: "framing", Budge: Version, Created: now.UTC(), Status: store.RunRunning,
		Data:   FramingData{Source: data, SHA: sha(snap), Items: len(items), Domains: map[string]int{}},
		Labels: d.Labels, Mode: d.Mode, Policy: d.Policy, Tolerant: d.Tolerant, Parser: framing.ParserVersion, Bootstrap: b,
		Mitigations: []string{framing.None}}
	for i := range items {
		m.Data.Domains[items[i].Domain]++
	}
	for _, t := range d.Templates {
		m.Templates = append(m.Templates, TemplateInfo{Name: t.Name, Source: t.Source,
			SHA: sha([]byte(t.Statement + "\x00" + t.Dialogue + "\x00" + t.NaturalStatement + "\x00" + t.NaturalDialogue))})
	}
	for _, mi := range d.Mitigations {
		m.Mitigations = append(m.Mitigations, mi.Name)
	}
	for _, c := range d.Challenges {
		m.Challenges = append(m.Challenges, c.Family)
	}
	return m
}

func dataName(src string) string {
	if src == dataset.SampleName {
		return src
	}
	return filepath.Base(src)
}

func (m FramingManifest) fingerprint() string {
	b, _ := json.Marshal(struct {
		Model     string               `json:"model"`
		Provider  provider.Info        `json:"provider"`
		Reported  Reported             `json:"reported"`
		Templates []TemplateInfo       `json:"templates"`
		Labels    []framing.LabelSet   `json:"labels"`
		Mits      []string             `json:"mitigations"`
		Mode      string               `json:"mode"`
		Parser    string               `json:"parser"`
		Settings  chat.Settings        `json:"settings"`
		Retry     provider.RetryPolicy `json:"retry"`
	}{m.Model, m.Provider, m.Reported, m.Templates, m.Labels, m.Mitigations, m.Mode, m.Parser, m.Settings, m.Retry})
	return sha(b)[:16]
}

// LoadFraming reads a framing run back and scores it from the stored
// transcripts, the stored items and the stored design.
func LoadFraming(ctx context.Context, st *store.Store, runID string) (*FramingResult, error) {
	run, err := st.GetRun(ctx, runID)
	if err != nil {
		return nil, err
	}
	if run.Protocol != "framing" {
		return nil, fmt.Errorf("%w: run %s is a %s run, not a framing run", ErrInvalid, runID, run.Protocol)
	}
	var m FramingManifest
	if err := json.Unmarshal(run.Manifest, &m); err != nil {
		return nil, fmt.Errorf("run %s: stored manifest is unreadable: %w", runID, err)
	}
	snap, err := loadSnapshot(ctx, st, run)
	if err != nil {
		return nil, err
	}
	sessions, err := st.Sessions(ctx, runID)
	if err != nil {
		return nil, err
	}
	orphans, err := st.OrphanAttempts(ctx, runID)
	if err != nil {
		return nil, err
	}
	return scoreFraming(run, m, snap, sessions, orphans), nil
}

func loadSnapshot(ctx context.Context, st *store.Store, run store.Run) (*FramingSnapshot, error) {
	_, content, err := st.Deck(ctx, run.DeckHash)
	if err != nil {
		return nil, err
	}
	var snap FramingSnapshot
	if err := json.Unmarshal(content, &snap); err != nil {
		return nil, fmt.Errorf("run %s: stored items are unreadable: %w", run.ID, err)
	}
	return &snap, nil
}

// scoreFraming scores stored sessions against the plan. Planned sessions
// with no stored result are missing; a stored session's own spec is used
// (it carries imported answers).
func scoreFraming(run store.Run, m FramingManifest, snap *FramingSnapshot, sessions []store.Session, orphans map[string]int) *FramingResult {
	d := &snap.Design
	byID, c, models, fps := tally(sessions, orphans)
	specs := framing.Plan(d, snap.Items)
	c.Planned = len(specs)
	obs := make([]framing.Observation, 0, len(specs))
	traces := map[string]string{}
	for _, spec := range specs {
		t := framing.Transcript{}
		if se := byID[spec.ID()]; se != nil {
			if se.TraceSHA != "" {
				traces[spec.ID()] = se.TraceSHA
			}
			// Only imported sessions carry more than the plan knows.
			var stored framing.Spec
			if bytes.Contains(se.Spec, []byte(`"recorded"`)) && json.Unmarshal(se.Spec, &stored) == nil && stored.ID() == spec.ID() {
				stored.Index = spec.Index
				spec = stored
			}
			t = framing.Transcript{Ran: true, Entries: se.Messages, FailureKind: se.FailureKind, FailureMsg: se.FailureMsg, Stop: se.Stop}
		} else {
			c.Missing++
		}
		obs = append(obs, framing.Score(d, spec, t))
	}
	m.Counts = c
	netCounts(&m.Net, c, sessions)
	m.Reported = Reported{ModelIDs: keys(models), Fingerprints: keys(fps)}
	m.Fingerprint = m.fingerprint()
	return &FramingResult{Run: run, Manifest: m, Snapshot: snap, Observations: obs, Traces: traces,
		Summary: framing.Summarize(d, snap.Items, obs, m.Bootstrap)}
}

// loadFramingRun reads a stored framing run's manifest and snapshot.
func loadFramingRun(ctx context.Context, st *store.Store, ref string) (store.Run, *FramingManifest, *FramingSnapshot, error) {
	id, err := st.Resolve(ctx, ref)
	if err != nil {
		return store.Run{}, nil, nil, err
	}
	run, err := st.GetRun(ctx, id)
	if err != nil {
		return run, nil, nil, err
	}
	if run.Protocol != "framing" {
		return run, nil, nil, fmt.Errorf("%w: run %s is a %s run, not a framing run", ErrInvalid, id, run.Protocol)
	}
	var m FramingManifest
	if err := json.Unmarshal(run.Manifest, &m); err != nil {
		return run, nil, nil, fmt.Errorf("run %s: stored manifest is unreadable: %w", id, err)
	}
	if m.Import != nil {
		return run, nil, nil, fmt.Errorf("%w: run %s was imported from released results; it has no model to ask again", ErrInvalid, id)
	}
	snap, err := loadSnapshot(ctx, st, run)
	if err != nil {
		return run, nil, nil, err
	}
	return run, &m, snap, nil
}

// ResumeFraming continues an interrupted framing run in place, exactly as
// ResumePressure does for a pressure run: stored sessions are not sent
// again, the rest run with the recorded items, design, seed, settings and
// schedule. From o it takes the provider or the endpoint options,
// concurrency, the cost limit, the cache, progress and the callbacks.
func ResumeFraming(ctx context.Context, st *store.Store, ref string, o FramingOptions) (*FramingResult, error) {
	run, m, snap, err := loadFramingRun(ctx, st, ref)
	if err != nil {
		return nil, err
	}
	d, items := &snap.Design, snap.Items
	specs := framing.Plan(d, items)
	ids := make([]string, len(specs))
	for i, s := range specs {
		ids[i] = s.ID()
	}
	knowledge := m.Knowledge
	if o.Knowledge != "" {
		knowledge = o.Knowledge
	}
	ran, err := resumeRun(ctx, st, runControl{Net: o.NetOptions, Provider: o.Provider, Concurrency: o.Concurrency,
		Progress: o.Progress, Started: o.Started, Drain: o.Drain}, resumable{
		run: run, model: m.Model, prov: m.Provider, seed: m.Seed, retry: m.Retry, conc: m.Concurrency, net: &m.Net,
		ids: ids, maxOutput: maxOutput(m.Settings),
		open: func(eo endpoint.Options) (provider.Provider, error) {
			return openFramingJudge(m.Model, knowledge, d, items, eo)
		},
		project: func(todo map[string]bool, price endpoint.Price) Projection {
			var left []framing.Spec
			for _, s := range specs {
				if todo[s.ID()] {
					left = append(left, s)
				}
			}
			return projectFraming(d, left, items, m.Model, m.Settings, price)
		},
		jobs: func(todo map[string]bool, inc map[string]int) []runner.Job {
			return framingJobs(d, specs, items, m, func(id string) (int, bool) { return inc[id] + 1, todo[id] })
		},
		manifest:  func() []byte { return manifestJSON(m) },
		setStatus: func(s string) { m.Status = s },
	})
	if err != nil {
		return nil, err
	}
	if !ran {
		return LoadFraming(ctx, st, run.ID)
	}
	res, err := LoadFraming(context.WithoutCancel(ctx), st, run.ID)
	if err != nil {
		return nil, err
	}
	// LoadFraming scored the stored manifest; carry this resume's record.
	fb := res.Manifest.Net.FailedByKind
	res.Manifest.Net = m.Net
	res.Manifest.Net.FailedByKind = fb
	if p := m.Net.Price; p != nil {
		cost := p.Cost(res.Manifest.Counts.InputTokens, res.Manifest.Counts.OutputTokens)
		res.Manifest.Net.CostUSD = &cost
	}
	return res, finishFraming(context.WithoutCancel(ctx), st, res)
}

// framingJobs builds the runner jobs of a framing run in schedule order:
// want says whether a session runs and as which incarnation.
func framingJobs(d *framing.Design, specs []framing.Spec, items []framing.Item, m *FramingManifest, want func(id string) (int, bool)) []runner.Job {
	order := framing.Schedule(len(specs), m.ScheduleSeed)
	jobs := make([]runner.Job, 0, len(specs))
	for pos, i := range order {
		spec := specs[i]
		inc, ok := want(spec.ID())
		if !ok {
			continue
		}
		specJSON, _ := json.Marshal(spec)
		settings := m.Settings
		seed := framing.SessionSeed(m.Seed, spec.ID())
		settings.Seed = &seed
		it := &items[spec.Index]
		jobs = append(jobs, runner.Job{ID: spec.ID(), Seq: i, SchedulePos: pos, Incarnation: inc, Spec: specJSON,
			New: func() (runner.Conversation, error) { return framing.NewSession(d, spec, it, m.Model, settings) }})
	}
	return jobs
}

// ReplayFraming runs a recorded framing run's sessions again as a new run,
// answered from the recorded responses with zero network calls: the same
// items, design, model name, settings and seed, so every request matches
// its recording. o supplies only concurrency, progress and the callbacks.
func ReplayFraming(ctx context.Context, st *store.Store, ref string, o FramingOptions) (*FramingResult, error) {
	run, m, snap, err := loadFramingRun(ctx, st, ref)
	if err != nil {
		return nil, err
	}
	format := m.Net.BodyFormat
	if format == "" {
		format = replay.FormatOf(m.Provider.Name)
	}
	rp, err := replay.New(ctx, st, run.ID, format, m.Provider)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	o.snapshot, o.replayOf, o.bodyFormat = snap, run.ID, format
	o.Data, o.Design, o.Provider, o.Model = m.Data.Source, snap.Design, rp, m.Model
	o.Seed, o.Retry, o.Temperature, o.MaxTokens = m.Seed, m.Retry, m.Settings.Temperature, m.Settings.MaxTokens
	o.SampleN, o.Stratify, o.SampleSeed = m.Data.SampleN, m.Data.Stratify, m.Data.SampleSeed
	o.NetOptions = NetOptions{}
	if o.Concurrency < 1 {
		o.Concurrency = m.Concurrency
	}
	return RunFraming(ctx, st, o)
}

// FramingKnowledge is the simulated judge's answer table for the items of
// data under the default design: what `budge sim serve` tells its judge, so
// a framing run over HTTP gets the answers of an in-process one.
func FramingKnowledge(data string) (*sim.Knowledge, error) {
	o := DefaultFramingOptions()
	o.Data = data
	items, err := LoadFramingItems(o)
	if err != nil {
		return nil, err
	}
	return simKnowledge(&o.Design, items), nil
}
