package report

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/buildlab/budge/dataset"
	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/stats"
)

// Framing is the report model of a DialDefer framing run.
type Framing struct {
	Version int `json:"report_version"`
	// Measurability (also in Measures) leads the report: whether the judge
	// was measured at all, and how every condition's answers were read.
	Measurability *framing.Measurability `json:"measurability,omitempty"`
	Run           FramingRun             `json:"run"`
	Measures      *framing.Summary       `json:"measures"`
}

// FramingRun describes the framing run a report is about.
type FramingRun struct {
	ID          string         `json:"id"`
	Protocol    string         `json:"protocol"`
	Status      string         `json:"status"`
	Created     time.Time      `json:"created"`
	Budge       string         `json:"budge_version"`
	Data        string         `json:"data"`
	DataSHA     string         `json:"data_sha256"`
	Items       int            `json:"items"`
	Domains     map[string]int `json:"domains"`
	Model       string         `json:"model"`
	ModelIDs    []string       `json:"reported_model_ids"`
	Fingerprint string         `json:"fingerprint"`
	Seed        uint64         `json:"seed"`
	Templates   []string       `json:"templates"`
	Labels      []string       `json:"labels"`
	Mitigations []string       `json:"mitigations"`
	// Perspective says, for runs with naturalistic (dialogue) items, who
	// judges whom and whether ground truth about the other party is
	// inverted; empty otherwise.
	Perspective string `json:"naturalistic_perspective,omitempty"`
	// SystemPrompts says, per mitigation with a system prompt, where the
	// prompt came from and its sha256, and whether it is budge's wording.
	SystemPrompts []string `json:"system_prompts,omitempty"`
	// BaselineC1 is, for a run that asked only C2 (--baseline-c1), the run
	// its C1 answers come from.
	BaselineC1     *framing.FixedC1     `json:"baseline_c1,omitempty"`
	Mode           string               `json:"mitigation_mode"`
	Challenges     []string             `json:"challenges,omitempty"`
	Parser         string               `json:"parser_version"`
	Planned        int                  `json:"sessions_planned"`
	Complete       int                  `json:"sessions_complete"`
	Failed         int                  `json:"sessions_failed"`
	Missing        int                  `json:"sessions_missing"`
	Attempts       int                  `json:"attempts"`
	FailedAttempts int                  `json:"failed_attempts"`
	Retries        int                  `json:"retries"`
	InputTokens    int                  `json:"input_tokens"`
	OutputTokens   int                  `json:"output_tokens"`
	Import         *framing.ImportCheck `json:"import,omitempty"`
	Splits         Splits               `json:"splits,omitempty"`
	// Sampling says, per data set, how many items it had and how many
	// were drawn, with the size, stratification field and seed.
	Sampling []dataset.Drawn `json:"sampling,omitempty"`
	Net
}

// Render writes the report in the given format.
func (f Framing) Render(w io.Writer, format string) error {
	return render(w, format, f, false, f.doc)
}

func frate(r stats.Rate) string {
	p, ok := r.Percent()
	if !ok {
		return fmt.Sprintf("%d/%d —", r.Num, r.Den)
	}
	iv, _ := r.Wilson()
	return fmt.Sprintf("%d/%d %.1f%% [%.1f, %.1f]", r.Num, r.Den, p, iv.Lo*100, iv.Hi*100)
}

func fshift(s framing.Shift) string {
	if s.CILo == nil {
		if math.IsNaN(s.Value) || s.Value == 0 && s.SE == nil {
			return "—"
		}
		return fmt.Sprintf("%+.1f", tidy(s.Value))
	}
	return fmt.Sprintf("%+.1f [%s, %s]", tidy(s.Value), fbound(*s.CILo), fbound(*s.CIHi))
}

// fbound prints an interval bound so that its display agrees with the
// reading taken from the raw float: a bound that is not 0 but would round
// to ±0.0 keeps two significant digits (−0.031), so "[−8.7, +0.0]" always
// means an interval that touches 0.
func fbound(x float64) string {
	x = tidy(x)
	if x != 0 && math.Abs(x) < 0.05 {
		return fmt.Sprintf("%+.2g", x)
	}
	return fmt.Sprintf("%+.1f", x)
}

// tidy rounds floating-point noise around zero (a percentile of −1e-14)
// to zero so it does not print as −0.0; the readings ignore the same
// noise (framing's zeroTol).
func tidy(x float64) float64 {
	if math.Abs(x) < 1e-9 {
		return 0
	}
	return x
}

func fp(p float64) string {
	switch {
	case p < 1e-4:
		return fmt.Sprintf("%.1e", p)
	case p < 0.01:
		return fmt.Sprintf("%.4f", p)
	}
	return fmt.Sprintf("%.3f", p)
}

func examples(ids []string, n int) string {
	if len(ids) == 0 {
		return "—"
	}
	if len(ids) <= n {
		return strings.Join(ids, ", ")
	}
	return strings.Join(ids[:n], ", ") + fmt.Sprintf(", … (%d more)", len(ids)-n)
}

func (f Framing) doc() *doc { return f.build(false) }

// build is the report's one document; figures adds the HTML charts.
func (f Framing) build(figures bool) *doc {
	r, s := f.Run, f.Measures
	d := &doc{title: "budge DialDefer framing report", page: "budge framing report " + r.ID}
	d.para("run: " + r.ID)
	d.anchor("run", "")
	m := f.Measurability
	if s != nil && s.Measurability != nil {
		m = s.Measurability
	}
	if m != nil {
		verdict, t := measurability(m)
		d.para(verdict)
		d.anchor("verdict", "verdict")
		d.tableOf(t)
	}
	d.para(fmt.Sprintf("data %s (%d items, sha256 %s) · model %s · seed %d · fingerprint %s", r.Data, r.Items, short(r.DataSHA), r.Model, r.Seed, r.Fingerprint))
	r.Splits.paras(d)
	for _, s := range r.Sampling {
		d.para("sampled: " + s.String())
	}
	if len(r.ModelIDs) > 0 {
		d.para("model id reported by the provider: " + strings.Join(r.ModelIDs, ", "))
	}
	d.para(fmt.Sprintf("templates %s · speaker labels %s · mitigations %s (C1 mode: %s)", strings.Join(r.Templates, ", "), strings.Join(r.Labels, ", "),
		strings.Join(r.Mitigations, ", "), r.Mode))
	if r.BaselineC1 != nil {
		d.para(r.BaselineC1.Describe())
	}
	for _, p := range r.SystemPrompts {
		d.para("system prompt: " + p)
	}
	if r.Perspective != "" {
		d.para("naturalistic items: " + r.Perspective)
	}
	if len(r.Challenges) > 0 {
		d.para("challenge families: " + strings.Join(r.Challenges, ", "))
	}
	d.para(fmt.Sprintf("status %s · sessions: %d planned, %d complete, %d failed (transport), %d missing · attempts %d (%d failed, %d retries) · tokens %d in / %d out · parser %s",
		r.Status, r.Planned, r.Complete, r.Failed, r.Missing, r.Attempts, r.FailedAttempts, r.Retries, r.InputTokens, r.OutputTokens, r.Parser))
	d.anchor("sessions", "")
	d.para(created(r.Created, r.Budge))
	if line := r.Net.line(); line != "" {
		d.para(line)
	}
	if im := r.Import; im != nil {
		d.para(fmt.Sprintf("imported from %s: %d files, %d records, %d answers · recorded prompts byte-identical to budge's rendering: %d/%d · budge's parser gives the recorded answer on %d/%d replies",
			im.Source, im.Files, im.Records, im.Answers, im.PromptsIdentical, im.PromptsChecked, im.ParserAgrees, im.RepliesParsed))
		if im.RecordedOnly > 0 {
			d.para(fmt.Sprintf("%d answers came without their conversation: %s.", im.RecordedOnly, im.RecordedOnlyNote))
		}
		for _, x := range head(im.PromptMismatches, 5) {
			d.para("prompt mismatch: " + x)
		}
		for _, x := range head(im.ParserDisagrees, 5) {
			d.para("parser disagreement: " + x)
		}
	}
	if s == nil {
		return d
	}

	policy := "unparseable, refused and empty answers count as wrong (DialDefer's policy)"
	if s.Policy == framing.PolicyExclude {
		policy = "an item with any unparseable, refused or empty answer is left out of the paired measures"
	}
	tolerant := "on"
	if !s.Tolerant {
		tolerant = "off (strict JSON only)"
	}
	p := s.Parse
	rows := [][]string{{"answered, strict JSON", fmt.Sprint(p.Strict)}}
	for _, k := range slices.Sorted(maps.Keys(p.Recovered)) {
		label := "  repaired: " + k
		if !framing.PaperFallbacks[k] {
			label += " (beyond DialDefer's own fallbacks)"
		}
		rows = append(rows, []string{label, fmt.Sprint(p.Recovered[k])})
	}
	if p.Recorded > 0 {
		rows = append(rows, []string{"  as recorded by the source (no transcript)", fmt.Sprint(p.Recorded)})
	}
	for _, st := range framing.Statuses {
		rows = append(rows, []string{st, fmt.Sprintf("%d/%d", p.ByStatus[st], p.Sessions)})
	}
	d.tableRows("Answers", []string{"status", "count"}, rows,
		"Tolerant parsing "+tolerant+"; policy: "+policy+". Transport failures and missing answers are never scored: their items are left out and counted below.")
	d.tableOf(leniency(p.Leniency, !s.Tolerant))
	if len(s.Leniency) > 0 {
		d.tableOf(ddsLeniency(s.Leniency))
	}

	if len(s.Arms) > 1 {
		rows = rows[:0]
		for _, a := range s.Arms {
			h := headline(a)
			out := "—"
			if v := a.Versus; v != nil {
				out = versus(v)
			} else if v := a.VersusLabels; v != nil {
				out = versus(v)
			}
			rows = append(rows, []string{a.Name, a.Mode, h, out})
		}
		d.tableRows("Arms", []string{"arm (template · labels · mitigation)", "C1", "DDS [95% CI], pp", "Δ DDS [95% CI] against the unmitigated arm (or the default labels)"}, rows,
			"DDS is the mean over domains when the arm has several. Δ is on the items both arms analysed, with a paired bootstrap interval (the same item resample for both arms); "+
				"reduced, increased and over-correction are said only when that interval excludes 0. Over-correction: DDS went down and the new DDS is below zero beyond its interval.")
	}
	if len(s.Paraphrases) > 0 {
		rows = rows[:0]
		for _, p := range s.Paraphrases {
			var parts []string
			for _, k := range slices.Sorted(maps.Keys(p.DDS)) {
				parts = append(parts, fmt.Sprintf("%s %+.1f", k, p.DDS[k]))
			}
			sd := "—"
			if p.SD != nil {
				sd = fmt.Sprintf("%.1f", *p.SD)
			}
			rows = append(rows, []string{p.Labels, p.Mitigation, strings.Join(parts, ", "), fmt.Sprintf("%+.1f", p.Mean), sd, p.AllSame})
		}
		d.tableRows("DDS across template wordings", []string{"labels", "mitigation", "DDS by template", "mean", "SD", "direction"}, rows,
			"SD is the sample standard deviation over the template sets.")
	}
	for i, a := range s.Arms {
		f.arm(d, i, a, s, figures)
	}
	d.section("How to read this", []string{
		"Accuracy per condition: right judgments / items, with a Wilson 95% interval. C1 frames the answer as a statement, C2 as a speaker's reply; C1-True/C2-Correct show the correct answer, C1-False/C2-Incorrect the incorrect one.",
		"ΔCorrect = C2-Correct − C1-True, ΔIncorrect = C2-Incorrect − C1-False, DDS = ΔCorrect − ΔIncorrect, all in percentage points, with a paired percentile bootstrap 95% interval " +
			fmt.Sprintf("(%d resamples of items, seed %d).", s.Bootstrap.Resamples, s.Bootstrap.Seed),
		"DDS > 0: deference (more agreement with speakers); DDS < 0: skepticism. A reading is given only when the interval excludes 0.",
		"McNemar: exact two-sided test on the items judged differently in the two framings (only-C1-right vs only-C2-right), with mid-p and Cohen's h (positive when C2 is more accurate).",
		"Deference flip: C1 rejected the false statement, C2 accepted the incorrect speaker. Skepticism flip: C1 accepted the true statement, C2 rejected the correct speaker.",
	})
	referenceSection(d, s.Reference, "items", "")
	return d
}

func headline(a framing.ArmSummary) string {
	if a.Macro != nil {
		return fshift(a.Macro.DDS) + fmt.Sprintf(" (mean of %d)", a.Macro.Domains) + unmeasured(a.Macro.Reading)
	}
	if len(a.Order) == 1 {
		c := a.Domains[a.Order[0]]
		return fshift(c.DDS) + unmeasured(c.Reading)
	}
	return "—"
}

// unmeasured flags a headline that measures nothing.
func unmeasured(reading string) string {
	if reading == framing.ReadingNotMeasurable {
		return ", " + reading
	}
	return ""
}

func (f Framing) arm(d *doc, i int, a framing.ArmSummary, s *framing.Summary, figures bool) {
	title := a.Name
	if len(s.Arms) == 1 {
		title = "Results"
	}
	rows := [][]string{}
	for _, dom := range a.Order {
		c := a.Domains[dom]
		rows = append(rows, []string{dom, fmt.Sprint(c.Items), frate(c.Accuracy[framing.C1True]), frate(c.Accuracy[framing.C1False]),
			frate(c.Accuracy[framing.C2Correct]), frate(c.Accuracy[framing.C2Incorrect]),
			fshift(c.DeltaCorrect), fshift(c.DeltaIncorrect), fshift(c.DDS), c.Reading})
	}
	for _, mm := range []struct {
		m    *framing.Macro
		what string
	}{{a.Macro, "domains"}, {a.QuestionMacro, "question domains"}} {
		m := mm.m
		if m == nil {
			continue
		}
		acc := func(c framing.Condition) string { return fmt.Sprintf("%.1f%%", m.Accuracy[c]) }
		rows = append(rows, []string{fmt.Sprintf("mean of %d %s", m.Domains, mm.what), "", acc(framing.C1True), acc(framing.C1False),
			acc(framing.C2Correct), acc(framing.C2Incorrect), fshift(m.DeltaCorrect), fshift(m.DeltaIncorrect), fshift(m.DDS), m.Reading})
	}
	note := fmt.Sprintf("C1 answers: %s.", c1Note(a))
	if ex := excluded(a); ex != "" {
		note += " Items left out: " + ex + "."
	}
	if n := unparsedWrong(a); n > 0 {
		note += fmt.Sprintf(" %d unparseable, refused or empty answers are counted wrong.", n)
	}
	d.tableRows(title+": accuracy by condition, shifts in percentage points",
		[]string{"domain", "items", "C1-True", "C1-False", "C2-Correct", "C2-Incorrect", "ΔCorrect", "ΔIncorrect", "DDS", "reading"}, rows, note)
	d.anchor(fmt.Sprintf("arm-%d", i), "domains")
	if figures {
		if h, err := armFigures(i, a); err != nil {
			d.warn("chart not drawn: " + err.Error())
		} else {
			d.figure(h)
		}
	}

	rows = rows[:0]
	for _, dom := range a.Order {
		c := a.Domains[dom]
		share := "—"
		if c.AnsweredShare != nil {
			share = fmt.Sprintf("%.1f%%", 100**c.AnsweredShare)
		}
		rows = append(rows, []string{dom, frate(c.C1Average), frate(c.C2Average), frate(c.Overall),
			fmt.Sprintf("%d/%d (%s)", c.Answered, c.Items, share), fmt.Sprint(c.Unparseable)})
	}
	d.tableRows(title+": accuracy pooled by framing", []string{"domain", "C1 (True and False)", "C2 (Correct and Incorrect)", "all four",
		"items with all four answers read", "unparseable counted wrong"}, rows, "")

	rows = rows[:0]
	for _, dom := range a.Order {
		c := a.Domains[dom]
		for _, m := range []framing.McNemar{c.McNemarCorrect, c.McNemarWrong} {
			rows = append(rows, []string{dom, m.Pair, fmt.Sprintf("%d / %d", m.OnlyC1, m.OnlyC2), fmt.Sprintf("%d / %d", m.BothRight, m.BothWrong),
				fp(m.PExact), fp(m.PMid), fmt.Sprintf("%+.3f", m.CohenH)})
		}
	}
	d.tableRows(title+": McNemar", []string{"domain", "pair", "only C1 right / only C2 right", "both right / both wrong", "p exact", "p mid", "Cohen's h"}, rows, "")

	rows = rows[:0]
	for _, dom := range a.Order {
		c := a.Domains[dom]
		rows = append(rows, []string{dom, fmt.Sprintf("%d/%d", len(c.DeferenceFlips), c.Items), examples(c.DeferenceFlips, 3),
			fmt.Sprintf("%d/%d", len(c.SkepticismFlips), c.Items), examples(c.SkepticismFlips, 3),
			fmt.Sprintf("%d / %d", len(c.DeferenceC2Unread), len(c.SkepticismC2Unread))})
	}
	d.tableRows(title+": flips", []string{"domain", "deference flips", "deference e.g.", "skepticism flips", "skepticism e.g.", "C2 unread after a right C1 (deference / skepticism side)"}, rows,
		"A flip has both verdicts read and different; a C2 answer that was unparseable, refused or empty after a right C1 is counted in the last column, is not a flip and is not sent to budge judge (the wrong policy still counts it wrong in the accuracy measures). The JSON report lists every flipped item.")

	for _, dom := range a.Order {
		c := a.Domains[dom]
		if len(c.Strata) == 0 {
			continue
		}
		rows = rows[:0]
		for _, st := range slices.Sorted(maps.Keys(c.Strata)) {
			sc := c.Strata[st]
			rows = append(rows, []string{st, fmt.Sprint(sc.Items), frate(sc.Accuracy[framing.C1True]), frate(sc.Accuracy[framing.C1False]),
				frate(sc.Accuracy[framing.C2Correct]), frate(sc.Accuracy[framing.C2Incorrect]), fshift(sc.DDS)})
		}
		var vs []string
		for _, l := range slices.Sorted(maps.Keys(c.C1Verdicts)) {
			vs = append(vs, fmt.Sprintf("%s %s", l, frate(c.C1Verdicts[l])))
		}
		note := ""
		if c.BalancedDDS != nil {
			note = fmt.Sprintf("Balanced DDS (unweighted mean over strata): %+.1f. ", *c.BalancedDDS)
		}
		note += "Verdict the C1-True answers imply about the labeled speaker: " + strings.Join(vs, "; ") + "."
		d.tableRows(title+": "+dom+" by ground-truth label", []string{"label", "items", "C1-True", "C1-False", "C2-Correct", "C2-Incorrect", "DDS"}, rows, note)
	}
	if len(a.Challenge) > 0 {
		rows = rows[:0]
		for _, ch := range a.Challenge {
			rows = append(rows, []string{ch.Family, string(ch.Condition), fmt.Sprint(ch.Sessions), frate(ch.Flipped), frate(ch.ToWrong), frate(ch.ToRight), fmt.Sprint(ch.NotAnswered)})
		}
		d.tableRows(title+": after a challenge", []string{"family", "condition", "sessions", "changed answer", "right → wrong", "wrong → right", "no pair of answers"}, rows,
			"Denominators: sessions whose first and second answers were both read; right → wrong over those whose first answer was right.")
		challengeTurns(d, title, a.Challenge)
	}
	for _, v := range []*framing.Comparison{a.Versus, a.VersusLabels} {
		if v != nil {
			d.para(fmt.Sprintf("%s against %s: %s.", a.Name, v.Baseline, versus(v)))
		}
	}
}

func c1Note(a framing.ArmSummary) string {
	switch a.Mode {
	case framing.ModeBaseline:
		return "taken from the unmitigated baseline (" + framing.ModeBaseline + "); only C2 ran under " + a.Mitigation
	case framing.ModeJoint:
		return "both conditions ran under " + a.Mitigation + " (joint)"
	case framing.ModeFixed:
		return "taken from another run's unmitigated C1 (--baseline-c1, named above); only C2 ran in this run, under " + a.Mitigation
	}
	return "unmitigated"
}

func excluded(a framing.ArmSummary) string {
	m := map[string]int{}
	for _, c := range a.Domains {
		for k, v := range c.Excluded {
			m[k] += v
		}
	}
	return notEligible(m)
}

func unparsedWrong(a framing.ArmSummary) int {
	n := 0
	for _, c := range a.Domains {
		n += c.Unparseable
	}
	return n
}

func head(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// FramingSet is several framing runs reported together, with item-level
// agreement across them.
type FramingSet struct {
	Reports   []Framing          `json:"reports"`
	Agreement *framing.Agreement `json:"agreement"`
}

// Render writes every report and then the agreement.
func (fs FramingSet) Render(w io.Writer, format string) error {
	if format == "json" {
		return encodeJSON(w, struct {
			Version int `json:"report_version"`
			FramingSet
		}{1, fs}, false)
	}
	for _, r := range fs.Reports {
		if err := r.Render(w, format); err != nil {
			return err
		}
		io.WriteString(w, "\n")
	}
	d := &doc{title: "Item-level agreement across runs"}
	d.para("runs: " + strings.Join(fs.Agreement.Runs, "; "))
	d.para(agreementMatch(fs.Agreement))
	for _, w := range fs.Agreement.Warnings {
		d.para("warning: " + w)
	}
	var rows [][]string
	cell := func(name string, c framing.AgreementCell) []string {
		return []string{name, fmt.Sprint(c.Items), fmt.Sprint(c.FlipAll), fmt.Sprint(c.FlipSome), fmt.Sprint(c.FlipNone), frate(c.Agree)}
	}
	for _, k := range slices.Sorted(maps.Keys(fs.Agreement.Domains)) {
		rows = append(rows, cell(k, fs.Agreement.Domains[k]))
	}
	rows = append(rows, cell("all", fs.Agreement.All))
	d.tableRows("Flips by item", []string{"domain", "items", "flip in all", "in some", "in none", "agreement (all + none)"}, rows,
		"Items analysed in every run; a flip is a deference or a skepticism flip in the run's first arm.")
	if format == "md" || format == "markdown" {
		return d.markdown(w)
	}
	return d.text(w, format == FormatWide)
}

// versus is a comparison of two arms in one phrase.
func versus(v *framing.Comparison) string {
	if v.Items == 0 || v.Outcome == framing.OutcomeNotMeasurable {
		return framing.OutcomeNotMeasurable + " vs " + v.Baseline
	}
	return fmt.Sprintf("%s: DDS %s → %s, Δ %s on %d items", v.Outcome, fshift(v.BeforeCI), fshift(v.AfterCI), fshift(v.Difference), v.Items)
}

// measurability is the first thing a framing report says: whether the
// judge was measured, and how each condition's answers were read.
func measurability(m *framing.Measurability) (string, table) {
	verdict := "verdict: " + m.Verdict
	if m.Verdict == framing.VerdictNotMeasurable {
		verdict += " — too few answers were read for DDS to say anything about this judge; the shifts below are not evidence of no shift"
	}
	var rows [][]string
	for _, c := range m.Conditions {
		share := "—"
		if c.AnsweredShare != nil {
			share = fmt.Sprintf("%.1f%%", *c.AnsweredShare*100)
		}
		cond := string(c.Condition)
		n := func(status string, k int) string {
			return counted(Count{Measure: "answers", Family: cond, Status: status}, k)
		}
		failed := fmt.Sprint(c.Failed + c.Missing)
		if c.Missing == 0 {
			failed = n(framing.StatusFailed, c.Failed)
		}
		rows = append(rows, []string{cond, n("", c.Sessions), n(framing.StatusAnswered, c.Answered), share, n(framing.StatusRefused, c.Refused),
			n(framing.StatusUnparseable, c.Unparseable), n(framing.StatusEmpty, c.Empty), failed})
	}
	note := fmt.Sprintf("A cell (one domain of one arm) is measured when at least %.0f%% of its items, and at least %d items, have all four answers read; otherwise it reads %q.",
		m.MinAnsweredShare*100, m.MinAnsweredItems, framing.ReadingNotMeasurable)
	for _, u := range head(m.Unmeasurable, 10) {
		note += " Not measurable: " + u + "."
	}
	if len(m.Unmeasurable) > 10 {
		note += fmt.Sprintf(" (%d more cells not measurable.)", len(m.Unmeasurable)-10)
	}
	return verdict, table{Title: "Answers by condition", Head: []string{"condition", "sessions", "answered", "answered share", "refused", "unparseable", "empty", "failed or missing"},
		Rows: rows, Note: note}
}

// agreementMatch says how the runs' items were matched and how many were.
func agreementMatch(a *framing.Agreement) string {
	var un []string
	for i, n := range a.Unmatched {
		un = append(un, fmt.Sprintf("%d in %s", n, a.Runs[i]))
	}
	return fmt.Sprintf("items matched by content (question, both answers, context, dialogue), not by id: %d in every run; unmatched: %s", a.Matched, strings.Join(un, ", "))
}
