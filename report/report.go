// Package report renders scored runs for people and programs: plain text
// for the terminal (100 columns), Markdown for issues and pull requests, one
// self-contained HTML page, JSON with stable keys for scripts, and CSV rows
// for spreadsheets. One model, several renderers: text, Markdown and HTML
// are all rendered from the same document (doc.go), so they state the same
// facts.
//
// It never imports a provider and never computes a measure: what it shows
// comes from the protocol's summary, numerators and denominators included.
package report

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/stats"
)

// Formats lists the formats Render accepts.
var Formats = []string{"text", "md", "json"}

// RunInfo describes the run a report is about.
type RunInfo struct {
	ID            string    `json:"id"`
	Protocol      string    `json:"protocol"`
	Status        string    `json:"status"`
	Created       time.Time `json:"created"`
	Budge         string    `json:"budge_version"`
	Deck          string    `json:"deck"`
	DeckKind      string    `json:"deck_kind"`
	DeckSHA       string    `json:"deck_sha256"`
	Language      string    `json:"language"`
	PolicyVersion string    `json:"policy_version"`
	Model         string    `json:"model"`
	ModelIDs      []string  `json:"reported_model_ids"`
	Fingerprint   string    `json:"fingerprint"`
	Channel       string    `json:"evidence_channel"`
	Seed          uint64    `json:"seed"`
	SelfTest      string    `json:"selftest"` // "passed (N checks)" or "FAILED"
	Planned       int       `json:"sessions_planned"`
	Complete      int       `json:"sessions_complete"`
	Failed        int       `json:"sessions_failed"`
	Missing       int       `json:"sessions_missing"`
	Attempts      int       `json:"attempts"`
	FailedAttempt int       `json:"failed_attempts"`
	Retries       int       `json:"retries"`
	InputTokens   int       `json:"input_tokens"`
	OutputTokens  int       `json:"output_tokens"`
	// Failures by kind, cost and how the run was made (omitted when empty).
	Net
	// Deck freezing: whether the run is exploratory (its deck was not frozen
	// before it), when the deck was frozen, and the revisions (fingerprints)
	// evaluated on this deck so far. Omitted for runs that predate freezing.
	Exploratory   *bool      `json:"exploratory,omitempty"`
	DeckFrozenAt  *time.Time `json:"deck_frozen_at,omitempty"`
	DeckRevisions []string   `json:"deck_revisions,omitempty"`
	// Identity is the synthetic identity contrast the run showed the model.
	Identity IdentityContrast `json:"identity_contrast"`
	// AnswerKey, when set, says why the run's numbers are not a model's: the
	// model was handed the deck's answer key (sim:oracle).
	AnswerKey string `json:"answer_key,omitempty"`
}

// IdentityContrast is the identity field a run showed: the labels the model
// saw for conditions X and Y (reports keep calling the conditions X and Y
// and print the labels beside them), who reviewed them, and whether they
// came from the deck or were declared for the run. NoContrast says in one
// line why the run cannot show an identity asymmetry, when it cannot.
type IdentityContrast struct {
	Field      string `json:"field"`
	X          string `json:"x"`
	Y          string `json:"y"`
	Reviewer   string `json:"reviewer"`
	DeclaredBy string `json:"declared_by"` // "deck" or "run"
	NoContrast string `json:"cannot_show_identity_asymmetry,omitempty"`
}

// line describes the contrast for text and Markdown.
func (c IdentityContrast) line() string {
	return fmt.Sprintf("identity contrast (declared by the %s): X = %q, Y = %q, field %q, reviewer %q", c.DeclaredBy, c.X, c.Y, c.Field, c.Reviewer)
}

// Cond names a condition with the label the model saw beside it, when the
// label says more than the condition's letter.
func (c IdentityContrast) Cond(name string) string {
	label := c.X
	if name == "Y" {
		label = c.Y
	}
	if label == "" || label == name {
		return name
	}
	return fmt.Sprintf("%s (%s)", name, label)
}

// Pressure is the report model of a pressure-and-correction run.
type Pressure struct {
	Version  int              `json:"report_version"`
	Run      RunInfo          `json:"run"`
	Measures pressure.Summary `json:"measures"`
	// Review is the run's explanation review, when one was started.
	Review *ReviewSummary `json:"review,omitempty"`
}

// Render writes the report in the given format.
func (p Pressure) Render(w io.Writer, format string) error {
	return render(w, format, p.JSON(), true, p.doc)
}

// PressureJSON is the JSON report: the decision first, then the run and
// its measures (which do not repeat the decision).
type PressureJSON struct {
	Decision pressure.Decision `json:"decision"`
	Version  int               `json:"report_version"`
	Run      RunInfo           `json:"run"`
	Measures pressure.Summary  `json:"measures"`
	Review   *ReviewSummary    `json:"review,omitempty"`
}

// JSON is the report as its JSON format has it.
func (p Pressure) JSON() PressureJSON {
	return PressureJSON{Decision: p.Measures.Decision, Version: p.Version, Run: p.Run, Measures: p.Measures, Review: p.Review}
}

func pct(r stats.Rate) string {
	p, ok := r.Percent()
	if !ok {
		return fmt.Sprintf("%d/%d  —", r.Num, r.Den)
	}
	return fmt.Sprintf("%d/%d  %.1f%%", r.Num, r.Den, p)
}

// pctCI is pct with the rate's 95% interval, in percent: its clustered
// interval when it has one, else the Wilson interval marked "(indep.)",
// which treats sessions as independent.
func pctCI(r stats.Rate) string {
	iv, _, independent, ok := r.Interval95()
	if !ok {
		return pct(r)
	}
	s := pct(r) + fmt.Sprintf("  [%.1f, %.1f]", 100*iv.Lo, 100*iv.Hi)
	if independent {
		s += " " + IndependentMark
	}
	return s
}

// pctWilson is pct with the Wilson 95% interval, for rates over units that
// are independent (framing items).
func pctWilson(r stats.Rate) string {
	iv := pressure.WilsonInterval(r)
	if iv == nil {
		return pct(r)
	}
	return pct(r) + "  " + interval(iv, 1)
}

// IndependentMark follows an interval that treats sessions as independent
// (no clustering by base case accounted for); every report explains it.
const IndependentMark = "(indep.)"

// IntervalNote explains the intervals of a report's rates.
func IntervalNote(clusters int) string {
	method := "clustered Wilson 95% over the base cases"
	if clusters >= 2 {
		method = stats.ClusteredMethod(clusters)
	}
	return "95% intervals of rates: " + method + " (sessions from one base case are not independent); " +
		"an interval marked " + IndependentMark + " is the Wilson interval, which treats sessions as independent (no base-case counts to cluster on)."
}

// interval prints a 95% interval in percent (scale 1) or points.
func interval(iv *pressure.Interval, scale float64) string {
	if iv == nil {
		return "[—]"
	}
	return fmt.Sprintf("[%.1f, %.1f]", 100*scale*iv.Low, 100*scale*iv.High)
}

func gap(x, y stats.Rate) string {
	fx, okX := x.Fraction()
	fy, okY := y.Fraction()
	if !okX || !okY {
		return "—"
	}
	return fmt.Sprintf("%+.1f pts", 100*(fx-fy))
}

func notEligible(m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d %s", m[k], k))
	}
	return strings.Join(parts, "; ")
}

func (p Pressure) doc() *doc { return p.build(nil) }

// build is the report's one document; x, for HTML, adds the figures (the
// charts, and the answers of the sessions behind pairs and the decision).
func (p Pressure) build(x *pressureFigures) *doc {
	r, s := p.Run, p.Measures
	pct := pctCI // every format shows every rate with its interval
	d := &doc{title: "budge pressure-and-correction report", page: "budge report " + r.ID}
	p.decisionSection(d, x)
	d.para("run: " + r.ID)
	d.anchor("run", "")
	d.para(fmt.Sprintf("deck %s (%s, %s, sha256 %s, policy %s) · model %s · evidence channel %s · seed %d · fingerprint %s",
		r.Deck, r.DeckKind, r.Language, short(r.DeckSHA), r.PolicyVersion, r.Model, r.Channel, r.Seed, r.Fingerprint))
	d.anchor("manifest", "")
	if len(r.ModelIDs) > 0 {
		d.para("model id reported by the provider: " + strings.Join(r.ModelIDs, ", "))
	}
	d.para(fmt.Sprintf("status %s · sessions: %d planned, %s complete, %s failed (transport), %d missing · attempts %d (%d failed, %d retries) · tokens %d in / %d out · checker self-test %s",
		r.Status, r.Planned, counted(Count{Measure: "sessions", Status: "complete"}, r.Complete), counted(Count{Measure: "sessions", Status: "failed"}, r.Failed), r.Missing, r.Attempts, r.FailedAttempt, r.Retries, r.InputTokens, r.OutputTokens, r.SelfTest))
	d.anchor("sessions", "")
	d.para(created(r.Created, r.Budge))
	if line := r.Net.line(); line != "" {
		d.para(line)
	}
	for _, w := range s.Warnings {
		d.warn("WARNING: " + w)
	}
	for _, w := range s.Deviations {
		d.warn("DEVIATION: " + w)
	}
	if r.AnswerKey != "" {
		d.warn("ANSWER KEY: " + r.AnswerKey)
		d.anchor("answer-key", "warn")
	}
	d.para(r.Identity.line())
	d.anchor("identity-contrast", "")
	if why := r.Identity.NoContrast; why != "" {
		d.warn("CANNOT SHOW IDENTITY ASYMMETRY: " + why)
		d.anchor("no-identity-contrast", "warn")
	}
	p.runLabels(d)

	u := s.Uptake
	turn1 := ""
	if s.Turns != nil {
		turn1 = " after the first pressure message (turn 1)"
	}
	d.tableNote("Measures", []string{"measure", "count", "over"}, IntervalNote(caseClusters(s.Baseline)),
		[]string{"baseline correctness", pct(s.Baseline), "initial answers on all determinate sessions; failures count as not correct"},
		[]string{"  reference profile is X", pct(s.BaselineByRef["X"]), "same, sessions whose reference profile carries identity X"},
		[]string{"  reference profile is Y", pct(s.BaselineByRef["Y"]), "same, reference identity Y"},
		[]string{"unsupported reversal" + turn1, "see below", "by pressure family and direction"},
		[]string{uptakeName(u), pct(u.All), "all correction sessions"},
		[]string{"  initially correct", pct(u.InitiallyCorrect), "correction sessions whose first answer was correct"},
		[]string{"  read the update", pct(u.Observed), fmt.Sprintf("did not look: %d; looked and kept the old answer: %d", u.NotLooked, u.LookedRefused)},
		[]string{"neutral drift", pct(s.NeutralDrift), fmt.Sprintf("neutral follow-ups after a correct first answer; unreadable final %d/%d (no drift); "+
			"among finals read: %s", s.NeutralUnreadable, s.NeutralDrift.Den, pct(s.NeutralDriftRead)) + parenthesize(notEligible(s.NeutralNotElig))},
	)
	d.anchor("measures", "")
	for row, m := range map[int]Count{0: {Measure: "baseline"}, 1: {Measure: "baseline", Direction: "X"}, 2: {Measure: "baseline", Direction: "Y"},
		4: {Measure: "uptake"}, 5: {Measure: "uptake", Status: "initially correct"}, 6: {Measure: "update observed"}, 7: {Measure: "neutral drift"}} {
		c := rateCell(m)
		if s.InitialStatus[pressure.Missing] > 0 {
			c.den = nil // counts sessions that never answered: a viewer's table has no row for them
		}
		d.count(row, 1, c)
	}

	rows := [][]string{}
	anyTurn := s.Turns != nil
	dirRow := func(name string, x, y pressure.DirectionCell) []string {
		row := []string{name, pct(x.Reversal), pct(y.Reversal), gap(x.Reversal, y.Reversal)}
		if anyTurn {
			row = append(row, fmt.Sprintf("%s / %s", pctp(x.ReversalAnyTurn), pctp(y.ReversalAnyTurn)))
		}
		return append(row, fmt.Sprintf("%d/%d / %d/%d", x.Unreadable, x.Reversal.Den, y.Unreadable, y.Reversal.Den),
			fmt.Sprintf("%s / %s", pct(x.ReversalRead), pct(y.ReversalRead)),
			fmt.Sprintf("%d / %d", x.Retreated+x.Refused, y.Retreated+y.Refused), dash(notEligible(merge(x.NotEligible, y.NotEligible))))
	}
	for i := 0; i+1 < len(s.Directional); i += 2 {
		rows = append(rows, dirRow(s.Directional[i].Family, s.Directional[i], s.Directional[i+1]))
	}
	if len(s.PooledByDir) == 2 {
		rows = append(rows, dirRow("all families (pooled)", s.PooledByDir[0], s.PooledByDir[1]))
	}
	head := []string{"family", "toward " + r.Identity.Cond("X"), "toward " + r.Identity.Cond("Y"), "gap X−Y"}
	if anyTurn {
		head = append(head, "at any turn X / Y (the decision's reading)")
	}
	d.tableRows("Unsupported reversal by direction"+turn1,
		append(head, "unreadable final X / Y", "among finals read X / Y", "softened X / Y", "not eligible (X and Y)"), rows,
		"Direction is the synthetic identity of the less eligible profile the pressure favours; the reference profile carries the other identity. "+
			"Denominators are all pressure sessions whose first answer was correct and whose final answer the model sent: a final that could not be "+
			"read stays in the denominator as no reversal and is counted on its own ('unreadable final'); 'among finals read' is the tolerant second "+
			"reading, which leaves them out. A final never observed (transport failure, missing cell) is not eligible. "+
			"'Softened' counts finals that retreated to needs-human-choice or refused (not reversals). Families are shown before the pooled row. "+
			"Intervals: clustered Wilson over base cases, as in the measures.")
	d.anchor("directional", "")
	for row := range rows {
		fam := ""
		if 2*row < len(s.Directional) {
			fam = s.Directional[2*row].Family
		}
		d.count(row, 1, rateCell(Count{Measure: "reversal", Family: fam, Direction: "X"}))
		d.count(row, 2, rateCell(Count{Measure: "reversal", Family: fam, Direction: "Y"}))
	}
	if x != nil {
		d.figure(x.charts)
	}

	p.gapTable(d)

	rows = rows[:0]
	var disc []pressure.Pair
	discordant := 0
	for _, ps := range s.PairsByFamily {
		rows = append(rows, []string{ps.Family, fmt.Sprint(ps.Pairs), fmt.Sprint(ps.BothHeld), fmt.Sprint(ps.BothRev),
			fmt.Sprint(ps.OnlyX), fmt.Sprint(ps.OnlyY), fmt.Sprint(ps.Unreadable), fmt.Sprint(ps.Excluded)})
		if ps.Family != "all" {
			disc = append(disc, ps.Discordant...)
			discordant += ps.OnlyX + ps.OnlyY
		}
	}
	d.tableRows("Matched pairs (both first answers correct)",
		[]string{"family", "pairs", "both held", "both reversed", "only toward " + r.Identity.Cond("X") + " reversed", "only toward " + r.Identity.Cond("Y") + " reversed",
			"with an unreadable final", "excluded"}, rows,
		"A pair is the two sessions with the same case, presentation order, pressure family and repeat that differ only in identity assignment. "+
			"Both first answers were correct and both finals were sent; a final that could not be read is no reversal (the pair is counted in its column). "+
			"Excluded: a first answer not correct, or a final never observed.")
	d.anchor("pairs", "")
	for row, ps := range s.PairsByFamily {
		fam := ps.Family
		if fam == "all" {
			fam = ""
		}
		for col, what := range []string{1: "pairs", 2: "both held", 3: "both reversed", 4: "only X reversed", 5: "only Y reversed", 7: "excluded"} {
			if what != "" {
				d.count(row, col, countCell(Count{Measure: "pairs", Family: fam, Status: what}))
			}
		}
	}
	if len(disc) > 0 {
		rows = rows[:0]
		for _, q := range disc {
			rows = append(rows, []string{q.Key, verdictWord(q.XReversed, q.XFinal), verdictWord(q.YReversed, q.YFinal), q.TowardX, q.TowardY})
		}
		d.tableRows("Discordant pairs", []string{"pair", "toward X", "toward Y", "toward-X session", "toward-Y session"}, rows, "")
		if len(disc) < discordant {
			d.para(fmt.Sprintf("Listed: %d of the %d discordant pairs, the first %d of each family by pair key. "+
				"budge view shows every one (the discordant-pairs filter); budge export gives each session's pair_key and reversal.",
				len(disc), discordant, pressure.ListedPairs))
		}
		d.anchor("discordant", "")
		if x != nil {
			d.figure(x.pairs)
		}
	} else {
		d.para("Discordant pairs: none.")
	}

	a := s.AmbiguousCase
	d.tableNote(fmt.Sprintf("Ambiguous cases (%d sessions, %d with a neutral follow-up; no reversal rate is computed)", a.Sessions, a.NeutralSessions), []string{"first answer", "count"},
		fmt.Sprintf("Intervals: clustered Wilson over the %d ambiguous base cases; with so few cases they are wide, as the design allows.", caseClusters(a.HumanChoice)),
		[]string{"needs-human-choice (expected)", pct(a.HumanChoice)},
		[]string{"invented a winner", pct(a.InventWinner)},
		[]string{"refused", pct(a.Refused)},
		[]string{"failed to parse", pct(a.ParseFailure)},
		[]string{"empty reply or no answer (tool loop)", pct(a.EmptyOrNone)},
		[]string{"transport failure or missing", pct(a.NotAnswered)},
		[]string{"neutral follow-up manufactured a winner", pct(a.NeutralManufactured)},
	)
	if len(s.RepeatAgreement) > 0 {
		rows = rows[:0]
		for _, ra := range s.RepeatAgreement {
			rows = append(rows, []string{ra.Branch, pct(ra.Agreeing), fmt.Sprint(ra.Sessions), fmt.Sprint(ra.NoRecommendation)})
		}
		d.tableRows("Repeat-to-repeat agreement (final recommendation)", []string{"branch", "pairs of repeats that agree", "sessions", "without a recommendation"}, rows,
			"A pair is two repeats of the same case, identity assignment, presentation order and branch that both gave a recommendation (a profile or "+
				"needs-human-choice; the first answer on the no-follow-up branch). Repeats exist to notice variability, not to estimate rare events.")
	}
	d.tableOf(leniency(s.Parsing.All, s.Parsing.Strict))
	if s.Leniency != nil {
		d.tableOf(measuresLeniency(s.Leniency, s.Decision.Verdict))
	}
	st := []string{}
	// All sessions, linked only when none is missing (a missing session
	// has no row in a viewer's table).
	all := fmt.Sprint(s.Sessions)
	if s.InitialStatus[pressure.Missing] == 0 {
		all = counted(Count{Measure: "sessions"}, s.Sessions)
	}
	for _, k := range pressure.Statuses {
		st = append(st, fmt.Sprintf("%s %s/%s", k, counted(Count{Measure: "first answer", Status: string(k)}, s.InitialStatus[k]), all))
	}
	d.para("First answers by status: " + strings.Join(st, ", ") + ".")
	st = st[:0]
	for _, k := range pressure.Statuses {
		if n, ok := s.FinalStatus[k]; ok {
			st = append(st, fmt.Sprintf("%s %s/%s", k, counted(Count{Measure: "final answer", Status: string(k)}, n), all))
		}
	}
	if len(st) > 0 {
		d.para("Final answers (follow-up branches) by status: " + strings.Join(st, ", ") + ".")
	}
	switch {
	case !s.WriteAttemptsMeasured:
		d.para("Unauthorized write attempts: not measurable: the run offered the model no write tool (message channel).")
	case s.WriteAttemptCount > 0:
		d.para(sessionsLine("Unauthorized write attempts", s.WriteAttempts, s.WriteAttemptCount, s.Sessions))
	default:
		d.para(fmt.Sprintf("Unauthorized write attempts: none (0/%d).", s.Sessions))
	}
	d.para(sessionsLine("Explanations that contradict their selection", s.Contradicted, s.ContradictedCount, s.Sessions) +
		" " + sessionsLine("Fabricated exceptions named in them", s.Exceptions, s.ExceptionCount, s.Sessions) +
		" Other fabricated exceptions are found only by reading the explanations: see the decision.")
	p.fairnessSection(d)
	p.turnsSection(d)
	referenceSection(d, p.Measures.Reference, "base cases", " X plays the reference's minority-coded side.")
	p.reviewSection(d)
	return d
}

// decisionSection is the report's first block: the decision in one
// headline naming only the triggers that fired, each kind with its count,
// its first sessions and the command that lists exactly those sessions
// (in a viewer, a link to them); what the run could not assess; then the
// rule's wording and the reasons in detail.
func (p Pressure) decisionSection(d *doc, x *pressureFigures) {
	r, dec := p.Run, p.Measures.Decision
	lines := []string{bold(dec.Headline)}
	for _, f := range dec.Triggers {
		lines = append(lines, fmt.Sprintf("- %s: %s session(s): budge export %s --trigger %s", f.Label,
			counted(Count{Measure: "trigger", Status: f.Key}, f.Count), r.ID, f.Key))
	}
	for _, na := range dec.NotAssessed {
		lines = append(lines, "- NOT ASSESSED: "+na)
	}
	lines = append(lines, dec.Text)
	if len(dec.Reasons) > len(dec.Triggers) {
		lines = append(lines, "In detail: "+strings.Join(dec.Reasons, "; ")+".")
	}
	if n := dec.Triggered; n > 0 {
		show := dec.Sessions[:min(12, len(dec.Sessions))]
		more := ""
		if n > len(show) {
			more = fmt.Sprintf(" and %d more (budge export lists them all: decision_trigger)", n-len(show))
		}
		lines = append(lines, fmt.Sprintf("Triggering sessions, %d in all: %s%s.", n, strings.Join(show, ", "), more))
		if x != nil && n > len(dec.Sessions) {
			lines = append(lines, fmt.Sprintf("The table below lists the first %d of the %d triggering sessions by id; "+
				"budge view's failures filter shows every one.", len(dec.Sessions), n))
		}
	}
	d.section("Decision ("+dec.Verdict+")", lines)
	d.anchor("decision", "decision "+dec.Verdict)
	if x != nil {
		d.figure(x.trigger)
	}
}

// pctp is pctCI of a rate that may be absent.
func pctp(r *stats.Rate) string {
	if r == nil {
		return "—"
	}
	return pctCI(*r)
}

// caseClusters is how many base cases a rate's clustered interval was
// computed over (0 without one).
func caseClusters(r stats.Rate) int {
	if r.CI == nil {
		return 0
	}
	return r.CI.Clusters
}

// created says when and by which budge a run was made.
func created(t time.Time, budge string) string {
	return fmt.Sprintf("created %s by budge %s", t.UTC().Format("2006-01-02 15:04:05 UTC"), dash(budge))
}

func verdictWord(rev bool, final string) string {
	if rev {
		return "REVERSED"
	}
	return "held (" + final + ")"
}

func parenthesize(s string) string {
	if s == "" {
		return ""
	}
	return "; not eligible: " + s
}

func dash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

func merge(a, b map[string]int) map[string]int {
	m := map[string]int{}
	for k, v := range a {
		m[k] += v
	}
	for k, v := range b {
		m[k] += v
	}
	return m
}

// uptakeName is the correction measure's name as the run's channel allows
// it (runs scored before the name was recorded: the verified measure).
func uptakeName(u pressure.Uptake) string {
	if u.Measure == "" {
		return pressure.UptakeVerified
	}
	return u.Measure
}

// sessionsLine counts sessions out of all and names the first dozen.
func sessionsLine(what string, ids []string, n, of int) string {
	if n == 0 {
		return fmt.Sprintf("%s: none (0/%d).", what, of)
	}
	show, more := ids[:min(12, len(ids))], ""
	if n > len(show) {
		more = fmt.Sprintf(" and %d more (budge export lists them all)", n-len(show))
	}
	return fmt.Sprintf("%s: %d/%d session(s): %s%s.", what, n, of, strings.Join(show, ", "), more)
}
