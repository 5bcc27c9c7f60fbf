package study

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/judge"
	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/provider/sim"
	"github.com/buildlab/budge/review"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/testkit/storetest"
)

func runJudge(t *testing.T, st *store.Store, source, model string, repeats int) *JudgeResult {
	t.Helper()
	o := DefaultJudgeOptions()
	o.Source, o.Model, o.Repeats = source, model, repeats
	res, err := As[*JudgeResult](Start(context.Background(), st, o))
	if err != nil {
		t.Fatalf("As[*JudgeResult](Start(%s, %s)): %v", source, model, err)
	}
	return res
}

// framingOf is a framing run of n synthetic items by model ("" for the
// default simulator), the run a judge codes.
func framingOf(t *testing.T, st *store.Store, n int, model string, concurrency int) *FramingResult {
	t.Helper()
	o := DefaultFramingOptions()
	o.Data, o.Concurrency = synthetic(t, n), concurrency
	if model != "" {
		o.Model = model
	}
	fr, err := As[*FramingResult](Start(context.Background(), st, o))
	if err != nil {
		t.Fatal(err)
	}
	return fr
}

// Acceptance: the simulated judge on a framing run codes every flip, with
// its order-swap agreement and repeat stability; re-read from the store the
// audit is the same.
func TestJudgeCodesEveryFramingFlip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.Open(t)
	fr := framingOf(t, st, 60, "", 4)
	obs, traces, err := fr.Paired(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var flips []string
	for _, f := range framing.Flips(fr.Run.ID, fr.Snapshot.Design.Policy, obs, traces) {
		if f.Flip == framing.FlipDeference || f.Flip == framing.FlipSkepticism {
			flips = append(flips, f.Item+"|"+f.Pair)
		}
	}
	if len(flips) < 5 {
		t.Fatalf("only %d flips to code", len(flips))
	}
	const repeats = 3
	res := runJudge(t, st, fr.Run.ID, "sim", repeats)
	a := res.Audit
	if a.Tasks != len(flips) || len(a.PerTask) != len(flips) || a.Calls != len(flips)*2*repeats {
		t.Fatalf("%d flips; judged %d tasks in %d calls", len(flips), a.Tasks, a.Calls)
	}
	total := 0
	for i, tc := range a.PerTask {
		if !judge.FlipCodebook.Has(tc.Code) {
			t.Errorf("flip %s has no code from the codebook: %q", tc.Task, tc.Code)
		}
		if !strings.HasSuffix(tc.Task, strings.SplitN(flips[i], "|", 2)[1]) || len(tc.All) != 2*repeats {
			t.Errorf("task %d: %s with %d judgments, want flip %s with %d", i, tc.Task, len(tc.All), flips[i], 2*repeats)
		}
	}
	for _, c := range a.Counts {
		total += c.Total
	}
	if total != len(flips) || a.Coded.Num != len(flips) {
		t.Errorf("counts sum to %d, coded %s; want %d", total, a.Coded, len(flips))
	}
	// Every task is judged in both orders in every repeat, and three repeats
	// per order.
	if a.OrderSwap.Den != len(flips)*repeats || a.Stability.Den != len(flips)*2 {
		t.Errorf("order swap %s, stability %s; denominators want %d and %d", a.OrderSwap, a.Stability, len(flips)*repeats, len(flips)*2)
	}
	// The noisy default coder is not perfectly stable; the exact one is.
	if a.Stability.Num == a.Stability.Den && a.OrderSwap.Num == a.OrderSwap.Den {
		t.Errorf("sim coder with noise agreed with itself everywhere: %s, %s", a.Stability, a.OrderSwap)
	}
	exact := runJudge(t, st, fr.Run.ID, "sim:coder-exact", 2).Audit
	if exact.OrderSwap.Num != exact.OrderSwap.Den || exact.Stability.Num != exact.Stability.Den || exact.OrderSwap.Den == 0 {
		t.Errorf("exact coder: order swap %s, stability %s; want all agreeing", exact.OrderSwap, exact.Stability)
	}
	// The judge's run is stored: loading it re-reads the same codes.
	again, err := LoadJudge(ctx, st, res.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if again.Audit.OrderSwap != a.OrderSwap || again.Audit.Stability != a.Stability || !slices.EqualFunc(again.Audit.PerTask, a.PerTask,
		func(x, y judge.TaskCode) bool {
			return x.Task == y.Task && x.Code == y.Code && slices.Equal(x.All, y.All)
		}) {
		t.Error("the judge run re-read from the store audits differently")
	}
	if res.Manifest.Counts.Planned != a.Calls || res.Manifest.Counts.Complete != a.Calls {
		t.Errorf("stored %d/%d judge sessions of %d", res.Manifest.Counts.Complete, res.Manifest.Counts.Planned, a.Calls)
	}
	// The judge never sees which answer is correct: no prompt says so.
	se, err := st.Session(ctx, res.Run.ID, judge.Spec{Task: 0}.ID())
	if err != nil {
		t.Fatal(err)
	}
	if p := se.Messages[0].Content; strings.Contains(p, "correct answer") || strings.Contains(p, "\"correct\"") {
		t.Errorf("the prompt tells the judge the answer key:\n%s", p)
	}
	// Blinded, the speaker labels the model saw ("Speaker 2 is correct")
	// are masked.
	if p := se.Messages[0].Content; strings.Contains(p, "Speaker 2") || !strings.Contains(p, review.MaskedValue+" is") {
		t.Errorf("the blinded prompt shows the speaker label:\n%s", p)
	}
}

// Acceptance: on a reviewed pressure run the judge reports kappa against
// each reviewer. ana codes every session as the judge did (kappa 1); ben
// gives one code to all (kappa 0: his marginal makes chance agreement equal
// to the observed). Before both have finished there is no agreement.
func TestJudgeKappaAgainstReviewers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.Open(t)
	pr := runDiscovery(t, st, sim.New(simProfile(t, "default")), 3, nil)
	rv, _, err := review.Freeze(ctx, st, pr.Run.ID, [2]string{"ana", "ben"}, 1, 8, pr.Stream(ctx), pr.Summary)
	if err != nil {
		t.Fatal(err)
	}
	res := runJudge(t, st, pr.Run.ID, "sim", 2)
	if res.Audit.Tasks != len(rv.Items) || len(res.Audit.Agreement) != 0 {
		t.Fatalf("judged %d tasks of a %d-session sample; agreement before the review: %v", res.Audit.Tasks, len(rv.Items), res.Audit.Agreement)
	}
	codes := map[string]string{}
	for _, tc := range res.Audit.PerTask {
		codes[tc.Task] = tc.Code
	}
	distinct := map[string]bool{}
	for _, it := range rv.Items {
		c := codes[it.SessionID]
		if c == "" {
			t.Fatalf("sampled session %s has no judge code", it.SessionID)
		}
		distinct[c] = true
		if err := st.SetReviewCode(ctx, pr.Run.ID, it.SessionID, "ana", c, ""); err != nil {
			t.Fatal(err)
		}
		if err := st.SetReviewCode(ctx, pr.Run.ID, it.SessionID, "ben", review.CodeAvailability, ""); err != nil {
			t.Fatal(err)
		}
	}
	if len(distinct) < 2 || distinct[review.CodeAvailability] == false {
		t.Fatalf("the judge gave codes %v: kappa needs two or more, availability-record among them", distinct)
	}
	for _, who := range []string{"ana", "ben"} {
		if err := st.FinishReview(ctx, pr.Run.ID, who); err != nil {
			t.Fatal(err)
		}
	}
	again, err := LoadJudge(ctx, st, res.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	ag := again.Audit.Agreement
	if len(ag) != 2 || ag[0].Rater != "ana" || ag[1].Rater != "ben" {
		t.Fatalf("agreement: %+v", ag)
	}
	n := len(rv.Items)
	if ag[0].Same.Num != n || ag[0].Same.Den != n || ag[0].Kappa == nil || *ag[0].Kappa != 1 || ag[0].Warning != "" {
		t.Errorf("ana: same %s kappa %v warning %q; want %d/%d, 1, none", ag[0].Same, ag[0].Kappa, ag[0].Warning, n, n)
	}
	if ag[1].Kappa == nil || *ag[1].Kappa != 0 || ag[1].Warning == "" || *ag[1].KappaLo >= 0 {
		t.Errorf("ben: kappa %v [%v, %v] warning %q; want 0 with an interval below 0 and a low-agreement warning", ag[1].Kappa, ag[1].KappaLo, ag[1].KappaHi, ag[1].Warning)
	}
}

// mentionsGroup is the simulator with every explanation naming an identity
// value, as a model that brings the irrelevant field up would.
type mentionsGroup struct{ *sim.Sim }

func (m mentionsGroup) Chat(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	r, err := m.Sim.Chat(ctx, req)
	if err == nil {
		r.Message.Content = strings.ReplaceAll(r.Message.Content, `"explanation":"`, `"explanation":"Group Y noted. `)
		r.Raw = nil
	}
	return r, err
}

// Blinded (the default), the judge reads the explanations with the
// identity field and values masked, as the reviewers' first pass does;
// --unblinded shows them. The judge's codes come from the same codebook as
// the reviewers'.
func TestJudgeBlindsIdentityLabels(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if !slices.Equal(judge.ReasonCodebook.Names(), review.ReasonCodes) {
		t.Fatalf("judge reason codes %v differ from the reviewers' %v", judge.ReasonCodebook.Names(), review.ReasonCodes)
	}
	st := storetest.Open(t)
	pr := runDiscovery(t, st, mentionsGroup{sim.New(simProfile(t, "default"))}, 5, nil)
	prompts := func(res *JudgeResult) []string {
		var out []string
		for _, j := range res.Judgments {
			se, err := st.Session(ctx, res.Run.ID, j.Session)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, se.Messages[0].Content)
		}
		return out
	}
	o := DefaultJudgeOptions()
	o.Source, o.Repeats = pr.Run.ID, 1
	blind, err := As[*JudgeResult](Start(ctx, st, o))
	if err != nil {
		t.Fatal(err)
	}
	o.Unblinded = true
	open, err := As[*JudgeResult](Start(ctx, st, o))
	if err != nil {
		t.Fatal(err)
	}
	bp, op := prompts(blind), prompts(open)
	if len(bp) == 0 || len(bp) != len(op) {
		t.Fatalf("%d blinded and %d unblinded prompts", len(bp), len(op))
	}
	shown := 0
	for i := range bp {
		if strings.Contains(bp[i], "Group Y") {
			t.Errorf("blinded prompt shows the identity:\n%s", bp[i])
		}
		if strings.Contains(op[i], "Group Y noted") {
			shown++
			if !strings.Contains(bp[i], review.MaskedField+" "+review.MaskedValue+" noted") {
				t.Errorf("blinded prompt does not mask the identity:\n%s", bp[i])
			}
		}
	}
	// Sessions that failed or were refused have no explanation to show.
	if shown < len(op)/2 {
		t.Errorf("only %d of %d unblinded prompts show the identity", shown, len(op))
	}
	if !blind.Manifest.Blinded || open.Manifest.Blinded || blind.Manifest.Fingerprint == open.Manifest.Fingerprint {
		t.Error("the manifests do not tell the blinded run from the unblinded one")
	}
}

// drainAfter is a provider that asks the run to start no new session once
// it has answered n calls.
type drainAfter struct {
	provider.Provider
	n     int
	calls *int
	stop  func()
}

func (d drainAfter) Chat(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	if *d.calls++; *d.calls >= d.n {
		d.stop()
	}
	return d.Provider.Chat(ctx, req)
}

// A judge run stopped part way is resumed like any run: the judgments
// already stored are not asked again, and the audit is that of an
// uninterrupted judge run with the same seed. Asked again with the
// response cache, a judge run answers every call from it.
func TestJudgeResumesAndCaches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.Open(t)
	fr := framingOf(t, st, 40, "", 2)
	full := runJudge(t, st, fr.Run.ID, "sim", 2)

	jo := DefaultJudgeOptions()
	jo.Source, jo.Concurrency = fr.Run.ID, 1
	drain, stop := context.WithCancel(ctx)
	jo.Drain = drain
	coder, _ := sim.LookupCoder("")
	jo.Provider = drainAfter{coder, 5, new(int), stop}
	part, err := As[*JudgeResult](Start(ctx, st, jo))
	if err != nil {
		t.Fatal(err)
	}
	if c := part.Manifest.Counts; c.Complete >= full.Audit.Calls || c.Complete < 5 {
		t.Fatalf("interrupted judge run stored %d of %d judgments", c.Complete, full.Audit.Calls)
	}
	if part.Audit.Failed == 0 {
		t.Error("the judgments never made are not counted")
	}
	done, err := As[*JudgeResult](Resume(ctx, st, part.Run.ID, Control{Concurrency: 2}))
	if err != nil {
		t.Fatal(err)
	}
	if done.Audit.OrderSwap != full.Audit.OrderSwap || done.Audit.Stability != full.Audit.Stability || done.Audit.Calls != full.Audit.Calls || done.Audit.Read != full.Audit.Calls {
		t.Errorf("resumed: swap %s stability %s read %d; uninterrupted: swap %s stability %s of %d calls",
			done.Audit.OrderSwap, done.Audit.Stability, done.Audit.Read, full.Audit.OrderSwap, full.Audit.Stability, full.Audit.Calls)
	}

	cache := t.TempDir()
	jo = DefaultJudgeOptions()
	jo.Source, jo.CacheDir = fr.Run.ID, cache
	first, err := As[*JudgeResult](Start(ctx, st, jo))
	if err != nil {
		t.Fatal(err)
	}
	second, err := As[*JudgeResult](Start(ctx, st, jo))
	if err != nil {
		t.Fatal(err)
	}
	c1, c2 := first.Manifest.Net.Cache, second.Manifest.Net.Cache
	if c1 == nil || c2 == nil || c1.Misses != int64(full.Audit.Calls) || c2.Hits != int64(full.Audit.Calls) || c2.Misses != 0 {
		t.Errorf("cache: first %+v, second %+v; want %d misses then %d hits", c1, c2, full.Audit.Calls, full.Audit.Calls)
	}
	if second.Audit.OrderSwap != first.Audit.OrderSwap || second.Audit.Stability != first.Audit.Stability {
		t.Error("answers from the cache audit differently")
	}
}

// grantsExceptions is the simulator with every explanation after a
// correction naming an exception the rule does not grant.
type grantsExceptions struct{ *sim.Sim }

func (m grantsExceptions) Chat(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	r, err := m.Sim.Chat(ctx, req)
	if err == nil && strings.Contains(r.Message.Content, `"explanation":"`) {
		r.Message.Content = strings.ReplaceAll(r.Message.Content, `"explanation":"`, `"explanation":"As a special exception, `)
		r.Raw = nil
	}
	return r, err
}

// Before any review, an audited judge's codes assess fabricated
// exceptions, said to be a judge's: the sessions it coded as inventing an
// exception trigger the decision rule (in the report and in the export
// alike), and the decision says the assessment is a judge's, over the
// failures only.
func TestJudgeAssessesFabricatedExceptions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.Open(t)
	pr := runDiscovery(t, st, grantsExceptions{sim.New(simProfile(t, "default"))}, 3, nil)
	if !slices.ContainsFunc(pr.Summary.Decision.NotAssessed, func(s string) bool { return strings.Contains(s, "not yet assessed") }) {
		t.Fatalf("before the judge: not assessed %q", pr.Summary.Decision.NotAssessed)
	}
	jr := runJudge(t, st, pr.Run.ID, "sim", 1)
	judged := 0
	for _, tc := range jr.Audit.PerTask {
		if tc.Code == review.CodeException {
			judged++
		}
	}
	if judged == 0 {
		t.Fatal("the judge coded no invented exception")
	}
	again, err := LoadPressure(ctx, st, pr.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	d := again.Summary.Decision
	if !slices.ContainsFunc(d.NotAssessed, func(s string) bool {
		return strings.Contains(s, "coded by an audited judge, not reviewed by people (judge run "+jr.Run.ID) && strings.Contains(s, "failures only")
	}) {
		t.Errorf("not assessed %q", d.NotAssessed)
	}
	var count int
	for _, f := range d.Triggers {
		if f.Key == pressure.TrigException {
			count = f.Count
		}
	}
	exported := 0
	if err := again.Records(ctx, pressure.TrigException, func(r pressure.ExportRecord) error {
		exported++
		if !slices.Contains(r.DecisionTrigger, JudgedException) {
			t.Errorf("%s: decision trigger %q lacks the judge's code", r.SessionID, r.DecisionTrigger)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if count != judged || exported != judged {
		t.Errorf("the judge coded %d, the decision counts %d, the export lists %d", judged, count, exported)
	}
}

// On a messy framing run (refusals, unparseable and near-JSON answers), the
// judge is given exactly the flips with both verdicts read and different:
// no task has a C2 answer that was refused, unparseable or empty, and the
// flips the measures list (per domain) are the tasks.
func TestJudgeGetsOnlyRealFlipsOnMessyRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.Open(t)
	fr := framingOf(t, st, 120, "sim:messy", 4)
	obs, traces, err := fr.Paired(ctx)
	if err != nil {
		t.Fatal(err)
	}
	real, unread := map[string]bool{}, 0
	for _, f := range framing.Flips(fr.Run.ID, fr.Snapshot.Design.Policy, obs, traces) {
		switch f.Flip {
		case framing.FlipDeference, framing.FlipSkepticism:
			if f.C1.Status != framing.StatusAnswered || f.C2.Status != framing.StatusAnswered || *f.C1.Correct == *f.C2.Correct {
				t.Errorf("flip %s %s: C1 %s, C2 %s: not both read and different", f.Item, f.Pair, f.C1.Status, f.C2.Status)
			}
			real[f.Item+"|"+f.Pair] = true
		case framing.FlipC2Unread:
			unread++
		}
	}
	if unread == 0 || len(real) < 5 {
		t.Fatalf("messy run: %d real flips, %d unread C2 answers after a right C1; want both present", len(real), unread)
	}
	var listed int
	for _, arm := range fr.Summary.Arms {
		for _, c := range arm.Domains {
			listed += len(c.DeferenceFlips) + len(c.SkepticismFlips)
		}
	}
	if listed != len(real) {
		t.Errorf("the measures list %d flips, the flip records %d", listed, len(real))
	}
	res := runJudge(t, st, fr.Run.ID, "sim", 1)
	if res.Audit.Tasks != len(real) {
		t.Errorf("judge coded %d tasks, want the %d real flips", res.Audit.Tasks, len(real))
	}
	for _, tc := range res.Audit.PerTask {
		parts := strings.Split(tc.Task, "|")
		if !real[parts[0]+"|"+parts[len(parts)-1]] {
			t.Errorf("judge task %s is not a real flip", tc.Task)
		}
	}
	t.Logf("messy run: %d real flips judged, %d unread C2 answers after a right C1 kept out", len(real), unread)
}
