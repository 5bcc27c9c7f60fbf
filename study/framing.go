package study

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/dataset"
	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/provider/endpoint"
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
	// SamplePer samples the named data sets (domains) each by its own
	// size and stratification field (the paper's Table 8); SampleN and
	// Stratify draw the pool of the others.
	SamplePer []dataset.SampleSpec
	Design    framing.Design
	// Knowledge is a JSONL answer table for the simulator; without it the
	// simulator is told the answers of the run's own items (a fully
	// informed judge whose errors are the profile's).
	Knowledge string
	Bootstrap stats.Bootstrap
	// BaselineC1 names a stored framing run (id, prefix or "latest") whose
	// unmitigated C1 answers on the same items this run is scored against:
	// the run asks only C2 (the paper's Table 5 for fine-tuned models).
	BaselineC1 string
	// ItemsFromBaseline takes the items, with their data source and
	// sampling record, from the BaselineC1 run instead of reading Data:
	// the same items by construction.
	ItemsFromBaseline bool
	RunOptions
	// recorded is set for a replay: the recorded run's items and design,
	// and how they were sampled.
	recorded *framingRun
	sampling []dataset.Drawn
}

// DefaultFramingOptions are what `budge framing run` uses without flags.
func DefaultFramingOptions() FramingOptions {
	// The paper's sampling temperature, sent explicitly; a fresh variable
	// per call, so no caller can change another's default.
	zero := 0.0
	return FramingOptions{Data: dataset.SampleName, Design: framing.DefaultDesign(), SampleSeed: 42, Bootstrap: stats.DefaultBootstrap(42),
		RunOptions: RunOptions{Model: "sim", Seed: 1, Control: Control{Concurrency: 8}, Retry: provider.DefaultRetryPolicy(), MaxTokens: 300, Temperature: &zero}}
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
	Header
	Data        FramingData          `json:"data"`
	Templates   []TemplateInfo       `json:"templates"`
	Labels      []framing.LabelSet   `json:"labels"`
	Mitigations []string             `json:"mitigations"`
	Mode        string               `json:"mitigation_mode"`
	Challenges  []string             `json:"challenges,omitempty"`
	Policy      string               `json:"unparseable_policy"`
	Tolerant    bool                 `json:"tolerant_parsing"`
	Bootstrap   stats.Bootstrap      `json:"bootstrap"`
	Import      *framing.ImportCheck `json:"import,omitempty"`
	// Knowledge is the simulated judge's answer table file, when one was
	// given, so a resume asks the same judge.
	Knowledge string `json:"sim_knowledge,omitempty"`
	// BaselineC1 is the run this run's C1 answers come from
	// (--baseline-c1), with its fingerprint when this run was made.
	BaselineC1 *framing.FixedC1 `json:"baseline_c1,omitempty"`
}

// FramingData identifies the items of a run.
type FramingData struct {
	Source     string               `json:"source"`
	SHA        string               `json:"snapshot_sha256"`
	Items      int                  `json:"items"`
	Domains    map[string]int       `json:"domains"`
	SampleN    int                  `json:"sample,omitempty"`
	Stratify   string               `json:"stratify,omitempty"`
	SampleSeed uint64               `json:"sample_seed,omitempty"`
	SamplePer  []dataset.SampleSpec `json:"sample_per,omitempty"`
	// Sampling says, per data set, how many items it had, how many were
	// drawn, and by which size, field and seed.
	Sampling []dataset.Drawn `json:"sampling,omitempty"`
}

// TemplateInfo names a template set and hashes its text.
type TemplateInfo struct {
	Name   string `json:"name"`
	Source string `json:"source"`
	SHA    string `json:"sha256"`
}

// FramingResult is a scored framing run: its measures, not its sessions,
// which Each, EachItem and Item score again from the store, one at a time.
type FramingResult struct {
	Run      store.Run
	Manifest FramingManifest
	Snapshot *FramingSnapshot
	Summary  *framing.Summary

	st    *store.Store   // the store the run was scored from
	p     *framingRun    // its plan, and the fixed C1 pairing
	tally *framing.Tally // a fixed-C1 run's own sessions, until the other run's C1 is added
}

// Head is the manifest's common part.
func (r *FramingResult) Head() *Header { return &r.Manifest.Header }

// Stored is the run's row.
func (r *FramingResult) Stored() store.Run { return r.Run }

func (*FramingResult) protocol() string { return "framing" }

// framingRun is a framing run as the lifecycle sees it.
type framingRun struct {
	m     *FramingManifest
	snap  *FramingSnapshot
	bytes []byte // the snapshot, as stored
	plan  framing.Planned
	// base is the C1 side of a run that asks only C2, read from the store
	// when the run is made and again whenever it is loaded.
	base *baselineC1
}

// baselineC1 is another run's C1 answers as paired with this run's items:
// where in that run each answer is, not the answers.
type baselineC1 struct {
	info framing.FixedC1
	run  *framingRun
	pair *framing.C1Pairing
}

func (p *framingRun) head() *Header       { return &p.m.Header }
func (p *framingRun) manifest() any       { return p.m }
func (p *framingRun) fingerprint() string { return p.m.fingerprint() }

func (p *framingRun) snapshot() (name, source, hash string, content []byte) {
	return dataName(p.m.Data.Source), p.m.Data.Source, p.m.Data.SHA, p.bytes
}

func (p *framingRun) ids() []string {
	ids := make([]string, p.plan.Len())
	for i := range ids {
		ids[i] = p.plan.At(i).ID()
	}
	return ids
}

func (p *framingRun) planLen() int      { return p.plan.Len() }
func (p *framingRun) idAt(i int) string { return p.plan.At(i).ID() }

func (p *framingRun) order() []int { return framing.Schedule(p.plan.Len(), p.m.ScheduleSeed) }

func (p *framingRun) job(i, pos, inc int) runner.Job {
	d, items := &p.snap.Design, p.snap.Items
	return newJob(p.plan.At(i), i, pos, inc, &p.m.Header, framing.SessionSeed, func(s framing.Spec, settings chat.Settings) (runner.Conversation, error) {
		return framing.NewSession(d, s, &items[s.Index], p.m.Model, settings)
	})
}

// project estimates the cost of the sessions todo accepts
// (projectSessions): one call per session, plus one per challenge turn.
func (p *framingRun) project(todo func(i int) bool, price endpoint.Price) Projection {
	at := positions(p.plan.Len(), todo)
	d, items, m := &p.snap.Design, p.snap.Items, p.m
	return projectSessions(len(at), m.Settings, price, func(i int) (any, int, bool) {
		spec := p.plan.At(at[i])
		s, err := framing.NewSession(d, spec, &items[spec.Index], m.Model, m.Settings)
		if err != nil {
			return nil, 0, false
		}
		return s.Next(), 1 + len(d.Challenges), true
	})
}

func (p *framingRun) open(eo endpoint.Options) (provider.Provider, error) {
	return openFramingJudge(p.m.Model, p.m.Knowledge, &p.snap.Design, p.snap.Items, eo)
}

func (p *framingRun) canAsk() error {
	if p.m.Import != nil {
		return fmt.Errorf("%w: run %s was imported from released results; it has no model to ask again", ErrInvalid, p.m.RunID)
	}
	return nil
}

// framingScorer scores a framing run's sessions one at a time into its
// tally, or hands each observation to each.
type framingScorer struct {
	p *framingRun
	scoring[framing.Observation, framing.Tally, *framing.Tally]
}

// newScorer is a scorer of run p into tally (nil for none) handing each
// observation to each (nil for none).
func (p *framingRun) newScorer(tally *framing.Tally, each func(i int, o *framing.Observation, trace string) error) *framingScorer {
	sc := &framingScorer{p: p}
	sc.score, sc.tally, sc.each = p.score, tally, each
	return sc
}

func (p *framingRun) scorer() sessionScorer {
	return p.newScorer(framing.NewTally(&p.snap.Design, p.snap.Items), nil)
}

// score scores the session at plan position i (se is nil for one never
// stored) and names its trace artifact. A stored session's own spec is
// used when it carries imported answers.
func (p *framingRun) score(i int, se *store.Session) (o framing.Observation, trace string) {
	spec := p.plan.At(i)
	t := framing.Transcript{}
	if se != nil {
		trace = se.TraceSHA
		// Only imported sessions carry more than the plan knows.
		var stored framing.Spec
		if bytes.Contains(se.Spec, []byte(`"recorded"`)) && json.Unmarshal(se.Spec, &stored) == nil && stored.ID() == spec.ID() {
			stored.Index = spec.Index
			spec = stored
		}
		t = framing.Transcript{Ran: true, Entries: se.Messages, FailureKind: se.FailureKind, FailureMsg: se.FailureMsg, Stop: se.Stop}
	}
	return framing.Score(&p.snap.Design, spec, t), trace
}

func (sc *framingScorer) done(run store.Run) Result {
	p := sc.p
	res := &FramingResult{Run: run, Manifest: *p.m, Snapshot: p.snap, p: p}
	if p.snap.Design.FixedC1 == "" {
		res.Summary = sc.tally.Summary(p.m.Bootstrap)
	} else {
		// A fixed-C1 run is summarised in afterScore, once the other run's
		// C1 answers are read from the store.
		res.tally = sc.tally
	}
	return res
}

// eachStored scores the stored sessions of run p again, in plan order, and
// hands fn each with its plan position and trace.
func eachStored(ctx context.Context, st *store.Store, p *framingRun, fn func(i int, o *framing.Observation, trace string) error) error {
	_, err := scoreThrough(ctx, st, p, p.newScorer(nil, fn))
	return err
}

// afterScore keeps the store for Each, and, for a run that asked only C2,
// reads the other run's C1 answers from the store and scores the run
// against them.
func (p *framingRun) afterScore(ctx context.Context, st *store.Store, res Result) error {
	fr := res.(*FramingResult)
	fr.st = st
	d := &p.snap.Design
	if d.FixedC1 == "" {
		return nil
	}
	if err := p.attachBase(ctx, st, fr); err != nil {
		return err
	}
	// The other run's C1 answers join the tally of this run's C2 ones.
	pair := p.base.pair
	err := eachStored(ctx, st, p.base.run, func(i int, o *framing.Observation, _ string) error {
		for _, item := range pair.Items(i) {
			c := *o
			pair.Reindex(&c, item)
			fr.tally.Add(&c)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("run %s takes its C1 answers from run %s: %w", p.m.RunID, d.FixedC1, err)
	}
	fr.Summary, fr.tally = fr.tally.Summary(p.m.Bootstrap), nil
	return nil
}

// attachBase reads, for a run that asked only C2, where the other run's C1
// answers are (once per run), and names that run in fr's manifest.
func (p *framingRun) attachBase(ctx context.Context, st *store.Store, fr *FramingResult) error {
	d := &p.snap.Design
	if p.base == nil {
		b, err := readBaselineC1(ctx, st, d.FixedC1, d, p.snap.Items)
		if err != nil {
			return fmt.Errorf("run %s takes its C1 answers from run %s: %w", p.m.RunID, d.FixedC1, err)
		}
		if rec := p.m.BaselineC1; rec != nil && rec.Fingerprint != b.info.Fingerprint {
			b.info.Note = fmt.Sprintf("its fingerprint was %s when this run was made", rec.Fingerprint)
		}
		p.base = b
	}
	info := p.base.info
	fr.Manifest.BaselineC1 = &info
	if rec := p.m.BaselineC1; rec != nil {
		// The manifest keeps what the run was made against.
		fr.Manifest.BaselineC1.Fingerprint = rec.Fingerprint
	}
	return nil
}

// baselineErr is an invalid --baseline-c1 RUN: one that cannot be read.
func baselineErr(ref string, err error) error {
	if errors.Is(err, ErrInvalid) {
		return fmt.Errorf("--baseline-c1 %s: %w", ref, err)
	}
	return fmt.Errorf("%w: --baseline-c1 %s: %w", ErrInvalid, ref, err)
}

// readBaselineC1 reads the framing run ref from the store and pairs its
// unmitigated C1 answers with items under design d (framing.C1Pairing):
// its sessions are scored one at a time, and only where each answer is
// is kept.
func readBaselineC1(ctx context.Context, st *store.Store, ref string, d *framing.Design, items []framing.Item) (*baselineC1, error) {
	run, bp, err := open(ctx, st, ref)
	if err != nil {
		return nil, baselineErr(ref, err)
	}
	fb, ok := bp.(*framingRun)
	if !ok {
		return nil, fmt.Errorf("%w: --baseline-c1 %s: run %s is a %s run, not a framing run", ErrInvalid, ref, run.ID, run.Protocol)
	}
	refused := func(err error) error {
		dm := fb.m.Data
		per := ""
		for _, s := range dm.SamplePer {
			per += " --sample-per " + s.String()
		}
		return fmt.Errorf("%w: --baseline-c1: %w (run %s used --data %s --sample %d --stratify %q --sample-seed %d%s)",
			ErrInvalid, err, run.ID, dm.Source, dm.SampleN, dm.Stratify, dm.SampleSeed, per)
	}
	pair, err := framing.NewC1Pairing(d, items, framing.Baseline{Run: run.ID, Design: &fb.snap.Design, Items: fb.snap.Items})
	if err != nil {
		return nil, refused(err)
	}
	err = eachStored(ctx, st, fb, func(i int, o *framing.Observation, _ string) error {
		pair.Add(i, o)
		return nil
	})
	if err != nil {
		return nil, baselineErr(ref, err)
	}
	if err := pair.Finish(); err != nil {
		return nil, refused(err)
	}
	return &baselineC1{run: fb, pair: pair,
		info: framing.FixedC1{Run: run.ID, Model: fb.m.Model, Fingerprint: fb.m.Fingerprint, Items: len(items), Sessions: pair.Len()}}, nil
}

// replayed is a new run of the recorded items, design, model, settings and
// seed, answered by rp.
func (p *framingRun) replayed(rp provider.Provider, c Control) (Plan, error) {
	m := p.m
	return FramingOptions{Data: m.Data.Source, Design: p.snap.Design, BaselineC1: p.snap.Design.FixedC1, Bootstrap: m.Bootstrap,
		SampleN: m.Data.SampleN, Stratify: m.Data.Stratify, SampleSeed: m.Data.SampleSeed, SamplePer: m.Data.SamplePer,
		RunOptions: recordedOptions(&m.Header, c), recorded: p, sampling: m.Data.Sampling}, nil
}

func (o FramingOptions) control() Control { return o.Control }

// prepare checks the design and the items, opens the judge and builds the
// run's manifest.
func (o FramingOptions) prepare(ctx context.Context, st *store.Store) (protocol, provider.Provider, error) {
	d := o.Design
	if errs := d.Validate(); len(errs) > 0 {
		return nil, nil, fmt.Errorf("%w: %s", ErrInvalid, strings.Join(errs, "; "))
	}
	if errs := o.Retry.Validate(); len(errs) > 0 {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalid, errors.Join(errs...))
	}
	var items []framing.Item
	sampling := o.sampling
	switch {
	case o.recorded != nil:
		items = o.recorded.snap.Items
	case o.ItemsFromBaseline && o.BaselineC1 != "":
		fr, err := As[*FramingResult](Load(ctx, st, o.BaselineC1))
		if err != nil {
			return nil, nil, baselineErr(o.BaselineC1, err)
		}
		dm := fr.Manifest.Data
		items, sampling = fr.Snapshot.Items, dm.Sampling
		o.Data, o.SampleN, o.Stratify, o.SampleSeed, o.SamplePer = dm.Source, dm.SampleN, dm.Stratify, dm.SampleSeed, dm.SamplePer
	default:
		var err error
		if items, sampling, err = loadFramingItems(o); err != nil {
			return nil, nil, err
		}
	}
	if err := d.CheckItems(items); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	var base *baselineC1
	if o.BaselineC1 != "" {
		var err error
		if base, err = readBaselineC1(ctx, st, o.BaselineC1, &d, items); err != nil {
			return nil, nil, err
		}
		d.FixedC1 = base.info.Run
		if errs := d.Validate(); len(errs) > 0 {
			return nil, nil, fmt.Errorf("%w: %s", ErrInvalid, strings.Join(errs, "; "))
		}
	}
	prov := o.Provider
	if prov == nil {
		var err error
		if prov, err = openFramingJudge(o.Model, o.Knowledge, &d, items, o.Endpoint); err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
	}
	info := prov.Info()
	p, err := newFramingRun(o.Data, d, items, o.Bootstrap)
	if err != nil {
		return nil, nil, err
	}
	m := p.m
	m.Header = newHeader("framing", m.Created, info, o.Seed, o.Concurrency, chat.Settings{Temperature: o.Temperature, MaxTokens: o.MaxTokens}, o.Retry, framing.ParserVersion)
	m.Data.SampleN, m.Data.Stratify, m.Data.SampleSeed = o.SampleN, o.Stratify, o.SampleSeed
	m.Data.SamplePer, m.Data.Sampling = o.SamplePer, sampling
	m.Knowledge = o.Knowledge
	if base != nil {
		p.base = base
		info := base.info
		m.BaselineC1 = &info
	}
	return p, prov, nil
}

// newFramingRun is a new run of items under design d, with the manifest's
// protocol part filled in.
func newFramingRun(data string, d framing.Design, items []framing.Item, b stats.Bootstrap) (*framingRun, error) {
	snap := &FramingSnapshot{Version: 1, Data: data, Design: d, Items: items}
	content, err := json.Marshal(snap)
	if err != nil {
		return nil, err
	}
	p := &framingRun{snap: snap, bytes: content}
	p.plan = framing.PlanOf(&snap.Design, snap.Items)
	p.m = newFramingManifest(time.Now(), data, content, items, &snap.Design, b)
	return p, nil
}

// loadFraming reads a stored framing run's manifest and snapshot.
func loadFraming(run store.Run, _ string, content []byte) (protocol, error) {
	p := &framingRun{m: &FramingManifest{}, snap: &FramingSnapshot{}}
	if err := readStored(run, p.m, content, p.snap, "items"); err != nil {
		return nil, err
	}
	p.bytes, p.plan = content, framing.PlanOf(&p.snap.Design, p.snap.Items)
	return p, nil
}

// openFramingJudge opens the run's model; "sim" and "sim:PROFILE" are the
// simulated judge, told the answers of the items (or the table in
// knowledge).
func openFramingJudge(model, knowledge string, d *framing.Design, items []framing.Item, eo endpoint.Options) (provider.Provider, error) {
	eo.Judge = &endpoint.Judge{Answers: judgeAnswers(d, items), File: knowledge}
	return endpoint.Open(model, eo)
}

// judgeAnswers are the answers of items, for the simulated judge.
func judgeAnswers(d *framing.Design, items []framing.Item) []endpoint.Answer {
	ks := framing.KnowledgeOf(d, items)
	answers := make([]endpoint.Answer, len(ks))
	for i, k := range ks {
		answers[i] = endpoint.Answer{Question: k.Question, Correct: k.Correct, Incorrect: k.Incorrect}
	}
	return answers
}

// LoadFramingItems reads, samples and checks the items of a run: every
// problem is reported before anything is written.
func LoadFramingItems(o FramingOptions) ([]framing.Item, error) {
	items, _, err := loadFramingItems(o)
	return items, err
}

// loadFramingItems is LoadFramingItems with the record of how every data
// set was sampled (none when nothing was).
func loadFramingItems(o FramingOptions) ([]framing.Item, []dataset.Drawn, error) {
	items, err := dataset.Open(o.Data, o.DataOptions)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	items, drawn, err := dataset.SamplePer(items, o.SamplePer, o.SampleN, o.Stratify, o.SampleSeed)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if o.SampleN <= 0 && len(o.SamplePer) == 0 {
		drawn = nil
	}
	var redacted []string
	for i := range items {
		if items[i].Dialogue != nil && items[i].Dialogue.Redacted {
			redacted = append(redacted, items[i].ID)
		}
	}
	if len(redacted) > 0 {
		return nil, nil, fmt.Errorf("%w: %d naturalistic item(s) have no dialogue transcript (the source redacted it), so their dialogue condition cannot be rebuilt: %s; leave their file out of --data (r/AIO's released experiment file is such a file)",
			ErrInvalid, len(redacted), strings.Join(head(redacted, 5), ", "))
	}
	return items, drawn, nil
}

func head(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("... (%d more)", len(s)-n))
	}
	return s
}

// LoadFraming reads a framing run back from the store and scores it (Load).
func LoadFraming(ctx context.Context, st *store.Store, ref string) (*FramingResult, error) {
	return As[*FramingResult](Load(ctx, st, ref))
}

func newFramingManifest(now time.Time, data string, snap []byte, items []framing.Item, d *framing.Design, b stats.Bootstrap) *FramingManifest {
	m := &FramingManifest{Header: Header{RunID: NewRunID(now), Protocol: "framing", Budge: Version, Created: now.UTC(), Status: store.RunRunning, Parser: framing.ParserVersion},
		Data:   FramingData{Source: data, SHA: sha(snap), Items: len(items), Domains: map[string]int{}},
		Labels: d.Labels, Mode: d.Mode, Policy: d.Policy, Tolerant: d.Tolerant, Bootstrap: b,
		Mitigations: []string{framing.None}}
	for i := range items {
		m.Data.Domains[items[i].Domain]++
	}
	for _, t := range d.Templates {
		m.Templates = append(m.Templates, TemplateInfo{Name: t.Name, Source: t.Source, SHA: t.Hash()})
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
		Tolerant  bool                 `json:"tolerant_parsing"`
		Settings  chat.Settings        `json:"settings"`
		Retry     provider.RetryPolicy `json:"retry"`
		// Omitted for a run with its own C1, so older fingerprints hold.
		BaselineC1 *fixedC1Print `json:"baseline_c1,omitempty"`
	}{m.Model, m.Provider, m.Reported, m.Templates, m.Labels, m.Mitigations, m.Mode, m.Parser, m.Tolerant, m.Settings, m.Retry, fixedPrint(m.BaselineC1)})
	return sha(b)[:16]
}

// fixedC1Print is what of a baseline C1 run identifies this run's
// measurements: which run, and its fingerprint when this run was made.
type fixedC1Print struct {
	Run         string `json:"run"`
	Fingerprint string `json:"fingerprint"`
}

func fixedPrint(f *framing.FixedC1) *fixedC1Print {
	if f == nil {
		return nil
	}
	return &fixedC1Print{f.Run, f.Fingerprint}
}

// FramingJudge is what the simulated judge knows of the items of data under
// the default design: what `budge sim serve` tells its judge, so a framing
// run over HTTP gets the answers of an in-process one.
func FramingJudge(data string) (*endpoint.Judge, error) {
	o := DefaultFramingOptions()
	o.Data = data
	items, err := LoadFramingItems(o)
	if err != nil {
		return nil, err
	}
	return &endpoint.Judge{Answers: judgeAnswers(&o.Design, items)}, nil
}

// ImportOptions configure `budge framing import`.
type ImportOptions struct {
	Dir string // a folder of released per-item result files (one model)
	// Templates is the template directory the prompts were rendered with;
	// empty means DIR/../../prompts, where the release keeps them.
	Templates string
	// Model names the model that produced the results (default: the
	// folder's name).
	Model string
	// AllowPromptMismatch imports even when a recorded prompt differs from
	// budge's rendering (the mismatches are listed in the report).
	AllowPromptMismatch bool
	Policy              string
	Tolerant            bool
	Bootstrap           stats.Bootstrap
	Started             func(runID string)
}

// DefaultImportOptions: the release's own prompts, DialDefer's policy
// (unparseable counts as wrong), tolerant parsing, 10,000 resamples.
func DefaultImportOptions(dir string) ImportOptions {
	return ImportOptions{Dir: dir, Policy: framing.PolicyWrong, Tolerant: true, Bootstrap: stats.DefaultBootstrap(42)}
}

// importedMarker is the fingerprint of imported attempts: they were not
// made by budge.
const importedMarker = "imported"

// ImportFraming turns a released result folder into a normal framing run:
// it checks that every recorded prompt is byte-identical to budge's
// rendering with the given templates, stores each recorded conversation as
// a session, reads every recorded reply with budge's own parser and scores
// the run with budge's measures. Nothing is written unless every check
// passes.
func ImportFraming(ctx context.Context, st *store.Store, o ImportOptions) (*FramingResult, error) {
	files, err := dataset.ReadResults(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	tdir := o.Templates
	if tdir == "" {
		tdir = filepath.Join(o.Dir, "..", "..", "prompts")
		if _, err := os.Stat(filepath.Join(tdir, framing.StatementFile)); err != nil {
			return nil, fmt.Errorf("%w: no templates given and none at %s; pass --templates DIR (the folder with %s and %s the results were made with)",
				ErrInvalid, tdir, framing.StatementFile, framing.DialogueFile)
		}
	}
	tmpl, err := framing.OpenTemplates(tdir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	model := o.Model
	if model == "" {
		abs, _ := filepath.Abs(o.Dir)
		model = filepath.Base(abs)
	}
	d := framing.DefaultDesign()
	d.Templates = []*framing.Templates{tmpl}
	d.Policy, d.Tolerant = o.Policy, o.Tolerant
	if errs := d.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrInvalid, strings.Join(errs, "; "))
	}
	check := &framing.ImportCheck{Source: o.Dir, Files: len(files)}
	var items []framing.Item
	var recs []*dataset.ResultRecord
	where := map[string]string{}
	var labels *framing.LabelSet
	var roles string
	for fi := range files {
		f := &files[fi]
		for ri := range f.Records {
			r := &f.Records[ri]
			if prev, dup := where[r.Item.ID]; dup {
				return nil, fmt.Errorf("%w: %s:%d: id %q is also in %s", ErrInvalid, f.Path, r.Line, r.Item.ID, prev)
			}
			where[r.Item.ID] = f.Path
			if r.Item.Dialogue == nil {
				if labels == nil {
					l := r.Labels
					labels = &l
				} else if r.Labels.Speaker1 != labels.Speaker1 || r.Labels.Speaker2 != labels.Speaker2 {
					return nil, fmt.Errorf("%w: %s:%d: speaker labels %s/%s differ from %s/%s in the same import; import label ablations one folder at a time",
						ErrInvalid, f.Path, r.Line, r.Labels.Speaker1, r.Labels.Speaker2, labels.Speaker1, labels.Speaker2)
				}
			} else if r.Judger != "" {
				if roles != "" && roles != r.Judger {
					return nil, fmt.Errorf("%w: %s:%d: judger %s differs from %s in the same import", ErrInvalid, f.Path, r.Line, r.Judger, roles)
				}
				roles = r.Judger
				d.Reverse = r.Judger == r.Item.Dialogue.Speakers[0]
			}
			items = append(items, r.Item)
			recs = append(recs, r)
			check.Records++
		}
	}
	if labels != nil {
		d.Labels = []framing.LabelSet{*labels}
		if l, err := framing.ParseLabels(labels.Speaker1 + "/" + labels.Speaker2); err == nil {
			d.Labels[0].Name = l.Name
			if labels.Speaker1 == "Speaker 1" && labels.Speaker2 == "Speaker 2" {
				d.Labels[0].Name = framing.DefaultLabels().Name
			}
		}
	}
	specs := framing.Plan(&d, items)
	now := time.Now()
	var sessions []store.Session
	for seq, spec := range specs {
		it := &items[spec.Index]
		a := recs[spec.Index].Answers[spec.Condition]
		check.Answers++
		se := store.Session{ID: spec.ID(), Seq: seq, SchedulePos: seq, Status: store.SessionComplete, Started: now, Finished: now,
			Artifacts: map[string]store.Blob{}}
		put := func(b []byte) string {
			id, blob := store.Pack(b)
			se.Artifacts[id] = blob
			return id
		}
		if a.HasTranscript {
			_, want, err := d.Messages(spec, it)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
			}
			check.PromptsChecked++
			if want == a.Prompt {
				check.PromptsIdentical++
			} else {
				check.PromptMismatches = append(check.PromptMismatches, fmt.Sprintf("%s (%s)", spec.ID(), firstDifference(want, a.Prompt)))
			}
			var msgs []chat.Message
			if a.System != "" {
				msgs = append(msgs, chat.Message{Role: chat.System, Content: a.System})
			}
			msgs = append(msgs, chat.Message{Role: chat.User, Content: a.Prompt})
			reply := chat.Message{Role: chat.Assistant, Content: a.Reply}
			for _, m := range msgs {
				se.Messages = append(se.Messages, chat.Entry{Phase: framing.PhaseJudgment, Message: m})
			}
			se.Messages = append(se.Messages, chat.Entry{Phase: framing.PhaseJudgment, Message: reply})
			check.RepliesParsed++
			if got := framing.ParseAnswer(a.Reply, d.Tolerant); got.Choice == a.Choice {
				check.ParserAgrees++
			} else {
				check.ParserDisagrees = append(check.ParserDisagrees, fmt.Sprintf("%s: budge reads %q, the release recorded %q", spec.ID(), got.Choice, a.Choice))
			}
			reqBody, _ := json.Marshal(chat.Request{Model: model, Messages: msgs})
			respBody, _ := json.Marshal(chat.Response{Message: reply, Meta: chat.Meta{Provider: importedMarker, ModelID: model}})
			se.Attempts = []store.Attempt{{Incarnation: 1, Call: 1, Attempt: 1, Phase: framing.PhaseJudgment, Started: now, Outcome: "ok",
				RequestSHA: put(reqBody), ResponseSHA: put(respBody), ModelID: model, Fingerprint: importedMarker}}
		} else {
			spec.Recorded = &framing.Recorded{Choice: a.Choice, Reasoning: a.Reasoning, Source: "recorded-answer"}
			check.RecordedOnly++
			se.Attempts = []store.Attempt{}
		}
		specJSON, _ := json.Marshal(spec)
		se.Spec = specJSON
		trace, _ := json.Marshal(struct {
			ID       string          `json:"session_id"`
			Spec     json.RawMessage `json:"spec"`
			Imported string          `json:"imported_from"`
			Attempts []store.Attempt `json:"attempts"`
		}{se.ID, se.Spec, o.Dir, se.Attempts})
		se.TraceSHA = put(trace)
		sessions = append(sessions, se)
	}
	if check.RecordedOnly > 0 {
		check.RecordedOnlyNote = "the release withheld these conversations: their prompts cannot be checked and their answers are the release's own parse, scored as recorded"
	}
	if len(check.PromptMismatches) > 0 && !o.AllowPromptMismatch {
		return nil, fmt.Errorf("%w: %d of %d recorded prompts differ from budge's rendering with the templates in %s, e.g. %s; check --templates, or pass --allow-prompt-mismatch to import anyway",
			ErrInvalid, len(check.PromptMismatches), check.PromptsChecked, tdir, strings.Join(head(check.PromptMismatches, 3), "; "))
	}
	p, err := newFramingRun(o.Dir, d, items, o.Bootstrap)
	if err != nil {
		return nil, err
	}
	m := p.m
	m.Model = model
	m.Provider = provider.Info{Name: importedMarker, Model: model, Detail: "results imported from " + o.Dir}
	m.SeedPolicy = "imported: the release's own generation settings"
	m.Import = check
	m.Counts.Planned = len(specs)
	m.Fingerprint = m.fingerprint()
	lease, err := create(ctx, st, p, o.Started)
	if err != nil {
		return nil, err
	}
	defer lease.Release()
	for i := 0; i < len(sessions); i += 512 {
		if err := st.WriteSessions(ctx, m.RunID, sessions[i:min(i+512, len(sessions))]); err != nil {
			return nil, err
		}
	}
	run, err := st.GetRun(ctx, m.RunID)
	if err != nil {
		return nil, err
	}
	return As[*FramingResult](finish(ctx, st, p, run, nil))
}

// firstDifference describes where two texts first differ.
func firstDifference(want, got string) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	ctx := func(s string) string {
		end := min(i+30, len(s))
		return fmt.Sprintf("%q", s[max(0, i-10):end])
	}
	return fmt.Sprintf("first difference at byte %d: budge renders %s, the record holds %s", i, ctx(want), ctx(got))
}
