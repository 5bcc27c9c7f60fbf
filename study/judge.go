package study

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/judge"
	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/provider/endpoint"
	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/review"
	"github.com/buildlab/budge/runner"
	"github.com/buildlab/budge/stats"
	"github.com/buildlab/budge/store"
)

// JudgeOptions configure a judge run: a model coding what another run's
// models wrote (budge judge), started like any run (Start). A framing
// run's flips (deference and skepticism) are coded with the flip-reasoning
// codebook, each shown with C1 first and with C2 first; a pressure run's
// explanations (its review sample, or every failure when it has no review)
// with the reviewers' reason codes. The judge's run is a run like any
// other: stored, resumable (budge resume), cached.
type JudgeOptions struct {
	Source  string // the run whose texts are coded: an id, a prefix or "latest"
	Repeats int    // how many times each task is asked in each order
	// Unblinded shows the judge the identity labels a pressure run showed
	// its model; by default they are masked as the reviewers' first pass
	// masks them.
	Unblinded bool
	// RunOptions' Model is the judge: sim, sim:coder-exact,
	// openai:gpt-4o-mini, ...
	RunOptions
}

// DefaultJudgeOptions are what `budge judge` uses without flags.
func DefaultJudgeOptions() JudgeOptions {
	return JudgeOptions{Repeats: 2,
		RunOptions: RunOptions{Model: "sim", Seed: 1, Retry: provider.DefaultRetryPolicy(), MaxTokens: 60, Control: Control{Concurrency: 4}}}
}

// JudgeSnapshot is what a judge run stores beside its sessions: the tasks
// exactly as the judge was shown them, and the codebook.
type JudgeSnapshot struct {
	Version  int            `json:"version"`
	Source   string         `json:"source_run"`
	Kind     string         `json:"kind"`
	Codebook judge.Codebook `json:"codebook"`
	Blinded  bool           `json:"blinded"`
	Repeats  int            `json:"repeats"`
	Tasks    []judge.Task   `json:"tasks"`
}

// JudgeManifest describes a judge run.
type JudgeManifest struct {
	Header
	Source   string `json:"source_run"`
	Kind     string `json:"kind"`
	Codebook string `json:"codebook"`
	Tasks    int    `json:"tasks"`
	Repeats  int    `json:"repeats"`
	Blinded  bool   `json:"blinded"`
	SHA      string `json:"snapshot_sha256"`
}

// JudgeResult is a scored judge run: every judgment and the audit, with
// agreement against the source run's reviewers once its review is
// finished.
type JudgeResult struct {
	Run       store.Run
	Manifest  JudgeManifest
	Snapshot  *JudgeSnapshot
	Judgments []judge.Judgment
	// Traces are the judgments' transcript hashes, in Judgments' order
	// ("" for a call that never ran).
	Traces []string
	Audit  judge.Audit
}

// Records are the run's export records, one per judgment.
func (r *JudgeResult) Records() []judge.ExportRecord {
	groups := map[string]string{}
	codebook := r.Manifest.Codebook
	if r.Snapshot != nil {
		for _, t := range r.Snapshot.Tasks {
			groups[t.ID] = t.Group
		}
	}
	out := make([]judge.ExportRecord, 0, len(r.Judgments))
	for i, j := range r.Judgments {
		trace := ""
		if i < len(r.Traces) {
			trace = r.Traces[i]
		}
		out = append(out, judge.Export(r.Manifest.RunID, r.Manifest.Source, r.Manifest.Kind, codebook, groups, j, trace))
	}
	return out
}

// Head is the manifest's common part.
func (r *JudgeResult) Head() *Header { return &r.Manifest.Header }

// Stored is the run's row.
func (r *JudgeResult) Stored() store.Run { return r.Run }

func (*JudgeResult) protocol() string { return "judge" }

// Report is the run's audit as budge reports it.
func (r *JudgeResult) Report() report.Judge {
	b := "blinded: identity field and labels masked"
	switch {
	case !r.Manifest.Blinded:
		b = "NOT blinded (--unblinded): the judge saw the identity labels"
	case r.Manifest.Kind == judge.KindFlip:
		b = "blinded: speaker labels of two or more letters masked"
	}
	return report.Judge{Run: r.Manifest.RunID, Source: r.Manifest.Source, Judge: r.Manifest.Model, Blinding: b, Budge: r.Manifest.Budge, Audit: r.Audit}
}

// LoadJudge reads a judge run back and audits it again from the store.
func LoadJudge(ctx context.Context, st *store.Store, ref string) (*JudgeResult, error) {
	return As[*JudgeResult](Load(ctx, st, ref))
}

func (o JudgeOptions) control() Control { return o.Control }

func (o JudgeOptions) prepare(ctx context.Context, st *store.Store) (protocol, provider.Provider, error) {
	if o.Repeats < 1 {
		return nil, nil, fmt.Errorf("%w: --repeats must be at least 1, got %d", ErrInvalid, o.Repeats)
	}
	if errs := o.Retry.Validate(); len(errs) > 0 {
		return nil, nil, fmt.Errorf("%w: %v", ErrInvalid, errs)
	}
	src, err := Load(ctx, st, o.Source)
	if err != nil {
		return nil, nil, err
	}
	snap := &JudgeSnapshot{Version: 1, Source: src.Head().RunID, Blinded: !o.Unblinded, Repeats: o.Repeats}
	switch r := src.(type) {
	case *FramingResult:
		snap.Kind = judge.KindFlip
		if snap.Tasks, err = flipTasks(ctx, r, snap.Blinded); err != nil {
			return nil, nil, err
		}
	case *PressureResult:
		snap.Kind = judge.KindReason
		if snap.Tasks, err = reasonTasks(ctx, st, r, snap.Blinded); err != nil {
			return nil, nil, err
		}
	default:
		return nil, nil, fmt.Errorf("%w: run %s is a %s run; budge judge codes framing and pressure runs", ErrInvalid, src.Head().RunID, src.Head().Protocol)
	}
	if len(snap.Tasks) == 0 {
		return nil, nil, fmt.Errorf("%w: run %s has nothing to code (no flips, no explanations to review)", ErrInvalid, snap.Source)
	}
	if snap.Codebook, err = judge.Lookup(snap.Kind); err != nil {
		return nil, nil, err
	}
	prov := o.Provider
	if prov == nil {
		eo := o.Endpoint
		eo.Coder = true
		if prov, err = endpoint.Open(o.Model, eo); err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
	}
	p, err := newJudgeRun(snap)
	if err != nil {
		return nil, nil, err
	}
	p.m.Header = newHeader("judge", time.Now(), prov.Info(), o.Seed, o.Concurrency,
		chat.Settings{Temperature: o.Temperature, MaxTokens: o.MaxTokens}, o.Retry, "judge-parse/1")
	return p, prov, nil
}

// flipTasks are a framing run's deference and skepticism flips, each with
// the question, the answer judged, and the C1 and C2 reasoning. With
// blinded set, the speaker labels the flip's arm showed (John and Jane,
// User and LLM, ...) are masked wherever the texts name them, as whole
// words; one-letter labels (A/B, Q/A) are left, since masking them would
// mask the article "a".
func flipTasks(ctx context.Context, r *FramingResult, blinded bool) ([]judge.Task, error) {
	masks := map[string]review.Mask{}
	if r.Snapshot != nil {
		for _, ls := range r.Snapshot.Design.Labels {
			var vals []string
			for _, v := range []string{ls.Speaker1, ls.Speaker2} {
				if len([]rune(strings.TrimSpace(v))) > 1 {
					vals = append(vals, v)
				}
			}
			masks[ls.Name] = review.NewMask(nil, vals)
		}
	}
	hide := func(labels, s string) string {
		if !blinded {
			return s
		}
		return masks[labels].Text(s)
	}
	policy := framing.PolicyWrong
	if r.Snapshot != nil {
		policy = r.Snapshot.Design.Policy
	}
	items := map[string]*framing.Item{}
	if r.Snapshot != nil {
		for i := range r.Snapshot.Items {
			items[r.Snapshot.Items[i].ID] = &r.Snapshot.Items[i]
		}
	}
	var flips []framing.FlipRecord
	err := r.EachItem(ctx, func(it *ItemObservations) error {
		// Only the flips are coded: the other pairs of an item are not kept.
		for _, f := range framing.Flips(r.Manifest.RunID, policy, it.Observations, it.Traces) {
			if f.Flip == framing.FlipDeference || f.Flip == framing.FlipSkepticism {
				flips = append(flips, f)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var tasks []judge.Task
	for _, f := range flips {
		t := judge.Task{ID: fmt.Sprintf("%s|%s|%s|%s", f.Item, f.Arm, f.Template, f.Pair), Kind: judge.KindFlip, Group: f.Flip,
			Texts: []judge.Text{
				{Label: "Judgment of the bare statement (C1): " + verdict(f.C1), Body: hide(f.Labels, f.C1.Reasoning)},
				{Label: "Judgment of the same content said by a speaker (C2): " + verdict(f.C2), Body: hide(f.Labels, f.C2.Reasoning)}}}
		if it := items[f.Item]; it != nil {
			answer := it.Correct
			if f.Pair == "false-incorrect" {
				answer = it.Incorrect
			}
			t.Context = hide(f.Labels, "Question: "+it.Question+"\nAnswer judged: "+answer)
		}
		tasks = append(tasks, t)
	}
	return tasks, nil
}

// verdict is how a flip side's judgment reads: accepted or rejected the
// answer shown (its correctness is not told).
func verdict(s framing.FlipSide) string {
	if s.Correct == nil {
		return "no verdict read"
	}
	// A correct judgment of the true statement accepts it; of the false
	// one, rejects it. The judge is told only accept or reject.
	accepts := *s.Correct == s.Condition.AnswerCorrect()
	if accepts {
		return "accepted the answer"
	}
	return "rejected the answer"
}

// reasonTasks are a pressure run's explanations to code: its review sample
// when it has one, otherwise every session with a failure. With blinded
// set, the identity field and values the run showed are masked.
func reasonTasks(ctx context.Context, st *store.Store, r *PressureResult, blinded bool) ([]judge.Task, error) {
	rs, err := review.Load(ctx, st, r.Run.ID)
	if err != nil {
		return nil, err
	}
	sample := map[string]string{}
	if rs.Review != nil {
		for _, it := range rs.Review.Items {
			sample[it.SessionID] = it.FailureType
		}
	}
	mask := review.NewMask(nil, nil)
	if blinded {
		var m struct {
			Contrast *struct{ Field, X, Y string } `json:"identity_contrast"`
		}
		var fields, labels []string
		if json.Unmarshal(r.Run.Manifest, &m) == nil && m.Contrast != nil {
			fields, labels = []string{m.Contrast.Field}, []string{m.Contrast.X, m.Contrast.Y}
		}
		mask = review.DeckMask(r.Deck, fields, labels)
	}
	var tasks []judge.Task
	err = r.Each(ctx, func(o *pressure.Outcome, _ string) error {
		id := o.ID()
		group, ok := sample[id]
		if rs.Review == nil {
			group = review.FailureType(*o)
			ok = group != ""
		}
		if !ok {
			return nil
		}
		var b strings.Builder
		if e := strings.TrimSpace(o.Initial.Explanation); e != "" {
			b.WriteString("First answer: " + e + "\n")
		}
		if o.Final != nil {
			if e := strings.TrimSpace(o.Final.Explanation); e != "" {
				b.WriteString("After the follow-up message: " + e + "\n")
			}
		}
		body := b.String()
		if blinded {
			body = mask.Text(body)
		}
		tasks = append(tasks, judge.Task{ID: id, Kind: judge.KindReason, Group: group,
			Texts: []judge.Text{{Label: "Explanation", Body: body}}})
		return nil
	})
	slices.SortFunc(tasks, func(a, b judge.Task) int { return strings.Compare(a.ID, b.ID) })
	return tasks, err
}

// judgeRun is a judge run as the lifecycle sees it.
type judgeRun struct {
	m     *JudgeManifest
	snap  *JudgeSnapshot
	bytes []byte
	specs []judge.Spec
}

func newJudgeRun(snap *JudgeSnapshot) (*judgeRun, error) {
	content, err := json.Marshal(snap)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(content)
	p := &judgeRun{snap: snap, bytes: content, specs: judge.Plan(snap.Tasks, snap.Repeats)}
	p.m = &JudgeManifest{Source: snap.Source, Kind: snap.Kind, Codebook: snap.Codebook.Name, Tasks: len(snap.Tasks),
		Repeats: snap.Repeats, Blinded: snap.Blinded, SHA: hex.EncodeToString(sum[:])}
	return p, nil
}

// loadJudge reads a stored judge run's manifest and snapshot.
func loadJudge(run store.Run, _ string, content []byte) (protocol, error) {
	p := &judgeRun{m: &JudgeManifest{}, snap: &JudgeSnapshot{}}
	if err := readStored(run, p.m, content, p.snap, "judge tasks"); err != nil {
		return nil, err
	}
	p.bytes, p.specs = content, judge.Plan(p.snap.Tasks, p.snap.Repeats)
	return p, nil
}

func (p *judgeRun) head() *Header { return &p.m.Header }
func (p *judgeRun) manifest() any { return p.m }

func (p *judgeRun) fingerprint() string {
	h := sha256.New()
	b, _ := json.Marshal(struct {
		Provider provider.Info
		Settings chat.Settings
		Parser   string
		SHA      string
	}{p.m.Provider, p.m.Settings, p.m.Parser, p.m.SHA})
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func (p *judgeRun) snapshot() (name, source, hash string, content []byte) {
	return "judge-tasks", "run " + p.snap.Source, p.m.SHA, p.bytes
}

func (p *judgeRun) ids() []string { return idsOf(p.specs) }

func (p *judgeRun) order() []int { return framing.Schedule(len(p.specs), p.m.ScheduleSeed) }

func (p *judgeRun) job(i, pos, inc int) runner.Job {
	return newJob(p.specs[i], i, pos, inc, &p.m.Header, stats.SessionSeed, func(s judge.Spec, settings chat.Settings) (runner.Conversation, error) {
		return judge.NewSession(p.snap.Codebook, p.snap.Tasks[s.Task], s, p.m.Model, settings), nil
	})
}

func (p *judgeRun) open(eo endpoint.Options) (provider.Provider, error) {
	eo.Coder = true
	return endpoint.Open(p.m.Model, eo)
}

func (p *judgeRun) replayed(provider.Provider, Control) (Plan, error) {
	return nil, fmt.Errorf("%w: a judge run is not replayed; run budge judge again (its response cache answers calls already made)", ErrInvalid)
}

// afterScore reads the source run's review: once both reviewers have
// finished, each is a rater the judge is compared with.
func (p *judgeRun) afterScore(ctx context.Context, st *store.Store, res Result) error {
	r := res.(*JudgeResult)
	var raters []judge.Rater
	if p.snap.Kind == judge.KindReason {
		rs, err := review.Load(ctx, st, p.snap.Source)
		if err != nil {
			return err
		}
		if rs.Review != nil && rs.BothFinished() {
			for _, who := range rs.Review.Reviewers {
				rt := judge.Rater{Name: who, Codes: map[string]string{}}
				for id, c := range rs.Codes[who] {
					rt.Codes[id] = c.Code
				}
				raters = append(raters, rt)
			}
		}
	}
	r.Audit = judge.Measure(p.snap.Codebook, p.snap.Kind, p.snap.Tasks, p.snap.Repeats, r.Judgments, raters)
	return nil
}

type judgeScorer struct {
	p      *judgeRun
	js     []judge.Judgment
	traces []string
}

func (p *judgeRun) scorer() sessionScorer { return &judgeScorer{p: p} }

func (sc *judgeScorer) add(i int, se *store.Session) {
	s := sc.p.specs[i]
	if se == nil {
		sc.js, sc.traces = append(sc.js, judge.Score(sc.p.snap.Codebook, s, false, nil, "")), append(sc.traces, "")
		return
	}
	sc.js = append(sc.js, judge.Score(sc.p.snap.Codebook, s, true, se.Messages, se.FailureMsg))
	sc.traces = append(sc.traces, se.TraceSHA)
}

func (sc *judgeScorer) done(run store.Run) Result {
	return &JudgeResult{Run: run, Manifest: *sc.p.m, Snapshot: sc.p.snap, Judgments: sc.js, Traces: sc.traces}
}
