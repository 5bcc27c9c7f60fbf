package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/reference"
	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/review"
	"github.com/buildlab/budge/stats"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
	"github.com/buildlab/budge/testkit/decktest"
	"github.com/buildlab/budge/testkit/storetest"
)

// A fact is one thing the JSON report states, as a reader must find it in
// a rendering.
type fact struct {
	path   string
	needle string
	token  bool // a bare count: found as a whole number
}

// skipped are JSON paths a person's report does not restate, each with why.
// Paths are matched as regular expressions on the whole path ([] for any
// list index).
var skipped = map[string]string{
	`\.turns\.survival\[\]\.kaplan_meier$`:    "a one-turn challenge row shows the held and censored counts it is computed from; multi-turn pressure reports print it when sessions were censored",
	`^\.report_version$`:                      "a format version for programs",
	`\.percent$`:                              "part of the rate it belongs to (checked with it)",
	`\.wilson_(lo|hi)$`:                       "part of the rate it belongs to (checked with it)",
	`\.se$`:                                   "the interval is shown instead of the standard error",
	`\.fairness\..*(definition_id|source)$`:   "names the row's definition, which the row's measure name and the formulas under the table state",
	`\.measures\.reference\[\]\.interval$`:    "a reference measure's interval is printed on its own scale (share, difference, mean) beside its value, its method listed under the table (TestReferenceSection checks both)",
	`\.ci_excludes_zero$`:                     "said by the reading next to the interval",
	`\.(ci_lo|ci_hi|value)$`:                  "part of the shift it belongs to (checked with it)",
	`\.(low|high)$`:                           "part of the interval it belongs to (checked with it)",
	`^\.run\.protocol$`:                       "the report's title names the protocol",
	`^\.run\.created$`:                        "checked in the form the reports print it",
	`^\.run\.(deck|data)_sha256$`:             "shown as its first 12 hex digits (checked so)",
	`^\.measures\.(deck|deck_kind|language)$`: "the same as the run's, shown once",
	`\.measures\.directional(\[\])?\.(direction|reference_identity)|\.measures\.pooled_by_direction\[\]\.(direction|reference_identity|family)`: "the column a rate sits in (toward X / toward Y)",
	`\.(directional|pooled_by_direction)\[\]\.sessions`:                                                     "the denominator plus the sessions not eligible, both shown",
	`\.measures\.directional_gap\[\]\.(toward_x|toward_y)`:                                                  "the same rates as the direction table (checked there)",
	`\.discordant\[\]\.family`:                                                                              "the pair key names its family",
	`\.discordant\[\]\.toward_[xy]_(final_status|reversed)`:                                                 "shown as REVERSED or held (final status), checked as such",
	`\.decision\.triggering_sessions\[\]`:                                                                   "the first 12 are named, then how many more (checked so)",
	`\.decision\.triggers\[\]\.first_sessions\[\]`:                                                          "each kind's line gives the command that lists exactly its sessions (checked so)",
	`\.decision\.triggers\[\]\.label`:                                                                       "checked with the kind's count and command",
	`\.measures\.(unauthorized_write_attempts|explanation_contradicts_selection|fabricated_exceptions)\[\]`: "the first 12 are named, then how many more (checked so)",
	`\.measures\.determinate_sessions`:                                                                      "the denominator of baseline correctness",
	`\.measures\.parsing\.(initial|final)_replies\.`:                                                        "the report shows every reply strict and tolerant; the split by turn is for scripts",
	`\.measures\.parsing\.strict_parse|\.measures\.tolerant_parsing`:                                        "said in words (this run used strict/tolerant parsing)",
	`\.identity_contrast\.(x|y)$`:                                                                           "checked quoted, as printed",
	`\.(deference|skepticism)_flips\[\]`:                                                                    "three examples are named; the JSON lists every flipped item (the report says so)",
	`\.domains\.[^.]+\.strata\.[^.]+\.(c1_average|c2_average|overall|items_fully_answered|answered_share|mcnemar_.*|deference_flips.*|skepticism_flips.*|delta_.*|item_dds.*|unparseable_counted_wrong|reading|excluded.*)`: "a stratum shows accuracy by condition and DDS; the rest is for scripts",
	`\.item_dds_(mean|variance)`:                              "the bootstrap's inputs, for scripts",
	`\.macro\.accuracy|\.question_macro\.accuracy`:            "checked as percentages in the mean rows",
	`\.versus_[a-z]+\.dds_(before|after|change)$`:             "the value of the interval beside it (checked with it)",
	`\.domain_order\[\]`:                                      "the order of the rows",
	`\.run\.domains\.`:                                        "items per domain, shown per arm",
	`\.arms\[\]\.(template|labels|mitigation|c1_mitigation)$`: "the arm's name joins them",
	`\.measures\.measurability`:                               "the same as the top-level measurability",
	`\.measurability\.by_condition\[\]\.(failed|missing)`:     "shown summed as failed or missing (checked so)",
	`\.measures\.parsing\.by_condition`:                       "the answers by condition table (measurability) shows them",
	`\.measures\.bootstrap\.level`:                            "said as 95% with the intervals",
	`\.measures\.unparseable_policy`:                          "said in words (counted wrong / left out)",
	`\.measures\.definitions\[\]`:                             "what each rate counts, for programs; the reports state it in each table's note (TestEveryMeasureHasADefinition checks the coverage)",
	`\.review\.codes\[\]`:                                     "the code vocabulary; codes in use are the columns of the codes table",
	`\.review\.(kappa|kappa_lo|kappa_hi)$`:                    "checked as the kappa text",
}

var skipRes = func() []*regexp.Regexp {
	var out []*regexp.Regexp
	for p := range skipped {
		out = append(out, regexp.MustCompile(p))
	}
	return out
}()

func isSkipped(path string) bool {
	for _, re := range skipRes {
		if re.MatchString(path) {
			return true
		}
	}
	return false
}

// factsOf walks a JSON report and lists its facts.
func factsOf(t *testing.T, js []byte) []fact {
	var v any
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	var out []fact
	var walk func(path, key string, v any)
	add := func(path, needle string) { out = append(out, fact{path: path, needle: needle}) }
	walk = func(path, key string, v any) {
		if isSkipped(path) {
			return
		}
		switch v := v.(type) {
		case map[string]any:
			if n, ok := v["numerator"]; ok {
				add(path, rateText(v, n))
				return
			}
			if _, ok := v["ci_lo"]; ok {
				var s framing.Shift
				b, _ := json.Marshal(v)
				json.Unmarshal(b, &s)
				add(path, report.FShift(s))
			}
			if lo, ok := v["low"]; ok {
				add(path, fmt.Sprintf("[%.1f, %.1f]", 100*num(lo), 100*num(v["high"])))
			}
			if strings.HasSuffix(key, "not_eligible") || key == "failed_attempts_by_kind" || key == "splits" {
				// A count of each kind: "N kind".
				for k, n := range v {
					if k == "" {
						k = "no split"
					}
					if key == "splits" {
						add(path+"."+k, k+" "+n.(json.Number).String())
					} else {
						add(path+"."+k, n.(json.Number).String()+" "+k)
					}
				}
				return
			}
			if key == "initial_status" || key == "final_status" {
				for k, n := range v {
					add(path+"."+k, k+" "+n.(json.Number).String()+"/")
				}
				return
			}
			for _, k := range slices.Sorted(maps.Keys(v)) {
				walk(path+"."+k, k, v[k])
			}
		case []any:
			for _, x := range v {
				walk(path+"[]", key, x)
			}
		case string:
			if v == "" {
				return
			}
			add(path, v)
		case json.Number:
			if s := v.String(); !strings.ContainsAny(s, ".eE") {
				out = append(out, fact{path: path, needle: s, token: true})
				return
			}
			f := num(v)
			switch key {
			case "difference":
				add(path, fmt.Sprintf("%+.1f pts", 100*f))
			case "mcnemar_exact_p":
				add(path, fmt.Sprintf("exact p %.3g", f))
			case "mcnemar_mid_p":
				add(path, fmt.Sprintf("mid-p %.3g", f))
			case "p_exact", "p_mid":
				add(path, report.FP(f))
			case "cohen_h":
				add(path, fmt.Sprintf("%+.3f", f))
			case "tolerant_dds", "strict_dds", "balanced_dds":
				add(path, fmt.Sprintf("%+.1f", f))
			case "answered_share":
				add(path, fmt.Sprintf("%.1f%%", 100*f))
			case "min_answered_share":
				add(path, fmt.Sprintf("%.0f%%", 100*f))
			case "cost_usd":
				add(path, fmt.Sprintf("$%.4f", f))
			default:
				t.Errorf("%s: no rule says how the reports show this number (%s); add one to factsOf or to skipped", path, v)
			}
		}
	}
	walk("", "", v)
	return out
}

func num(v any) float64 {
	f, _ := v.(json.Number).Float64()
	return f
}

// rateText is a rate as every format prints it: numerator/denominator,
// percent and Wilson interval.
func rateText(v map[string]any, n any) string {
	s := fmt.Sprintf("%s/%s", n.(json.Number), v["denominator"].(json.Number))
	if p, ok := v["percent"]; ok && p != nil {
		// The interval a report prints is the clustered one when the rate
		// has it; a Wilson interval is marked as treating sessions as
		// independent.
		if ci, ok := v["interval"].(map[string]any); ok {
			return s + fmt.Sprintf(" %.1f%% [%.1f, %.1f]", num(p), num(ci["low"]), num(ci["high"]))
		}
		s += fmt.Sprintf(" %.1f%% [%.1f, %.1f]", num(p), num(v["wilson_lo"]), num(v["wilson_hi"]))
	}
	return s
}

var (
	space    = regexp.MustCompile(`\s+`)
	tags     = regexp.MustCompile(`(?s)<[^>]*>`)
	figures  = regexp.MustCompile(`(?s)<figure>.*?</figure>|<style>.*?</style>`)
	mdEscape = strings.NewReplacer(`\|`, "|", `\*`, "*", `\_`, "_", "\\`", "`", "&lt;", "<", "&gt;", ">")
)

// readable is what a person reads of a rendering: markup and escapes
// removed (charts too: a fact must be in the text, not only drawn).
func readable(format, out string) string {
	switch format {
	case "md":
		out = mdEscape.Replace(strings.ReplaceAll(out, "**", ""))
	case "html":
		out = html.UnescapeString(tags.ReplaceAllString(figures.ReplaceAllString(out, ""), " "))
	}
	return out
}

// missingFacts lists the facts a rendering lacks. Text wraps and packs
// cells, so needles are compared without blanks; bare counts are looked
// for as whole numbers.
func missingFacts(facts []fact, format, out string) []string {
	text := readable(format, out)
	flat := space.ReplaceAllString(text, "")
	spaced := " " + space.ReplaceAllString(text, " ") + " "
	var miss []string
	for _, f := range facts {
		if f.token {
			if !regexp.MustCompile(`[^0-9.]` + regexp.QuoteMeta(f.needle) + `[^0-9]`).MatchString(spaced) {
				miss = append(miss, fmt.Sprintf("%s: the count %s", f.path, f.needle))
			}
			continue
		}
		if !strings.Contains(flat, space.ReplaceAllString(f.needle, "")) {
			miss = append(miss, fmt.Sprintf("%s: %q", f.path, f.needle))
		}
	}
	return miss
}

// renderings are a report's text, Markdown and HTML.
func renderings(t *testing.T, render func(string) string) map[string]string {
	out := map[string]string{}
	for _, f := range []string{"text", "md", "html"} {
		out[f] = render(f)
	}
	return out
}

// checkFacts asserts that every fact of the JSON report is in every
// rendering, and returns the facts.
func checkFacts(t *testing.T, name string, js []byte, outs map[string]string, extra ...fact) []fact {
	t.Helper()
	facts := append(factsOf(t, js), extra...)
	if len(facts) < 50 {
		t.Fatalf("%s: only %d facts found in the JSON report", name, len(facts))
	}
	for _, format := range slices.Sorted(maps.Keys(outs)) {
		miss := missingFacts(facts, format, outs[format])
		sort.Strings(miss)
		for i, m := range miss {
			if i == 400 {
				t.Errorf("%s %s: and %d more", name, format, len(miss)-15)
				break
			}
			t.Errorf("%s %s report lacks %s", name, format, m)
		}
	}
	return facts
}

// pressureRenderings renders a pressure report in every format.
func pressureRenderings(t *testing.T, rep report.Pressure) ([]byte, map[string]string) {
	var js bytes.Buffer
	if err := rep.Render(&js, "json"); err != nil {
		t.Fatal(err)
	}
	return js.Bytes(), renderings(t, func(format string) string {
		return rendered(t, format, rep.Render, func(w io.Writer) error { return rep.HTML(w, nil) })
	})
}

// rendered is a report in format: html written by page, every other
// format by render.
func rendered(t *testing.T, format string, render func(io.Writer, string) error, page func(io.Writer) error) string {
	t.Helper()
	var b bytes.Buffer
	var err error
	if format == "html" {
		err = page(&b)
	} else {
		err = render(&b, format)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// pressureExtra are the facts the walk checks in their printed form.
func pressureExtra(rep report.Pressure) []fact {
	r := rep.Run
	out := []fact{
		{path: ".run.created", needle: r.Created.UTC().Format("2006-01-02 15:04:05 UTC")},
		{path: ".run.deck_sha256", needle: "sha256 " + r.DeckSHA[:12]},
		{path: ".run.identity_contrast.x", needle: fmt.Sprintf("X = %q", r.Identity.X)},
		{path: ".run.identity_contrast.y", needle: fmt.Sprintf("Y = %q", r.Identity.Y)},
	}
	for _, f := range rep.Measures.Decision.Triggers {
		out = append(out, fact{path: ".decision.triggers[]", needle: fmt.Sprintf("%s: %d session(s): budge export %s --trigger %s", f.Label, f.Count, r.ID, f.Key)})
	}
	for _, id := range rep.Measures.Decision.Sessions[:min(12, len(rep.Measures.Decision.Sessions))] {
		out = append(out, fact{path: ".decision.triggering_sessions[]", needle: id})
	}
	if n := rep.Measures.Decision.Triggered; n > 12 {
		out = append(out, fact{path: ".measures.decision.triggering_session_count", needle: fmt.Sprintf("and %d more", n-12)})
	}
	m := rep.Measures
	for _, l := range []struct {
		path string
		ids  []string
		n    int
	}{
		{".measures.unauthorized_write_attempts", m.WriteAttempts, m.WriteAttemptCount},
		{".measures.explanation_contradicts_selection", m.Contradicted, m.ContradictedCount},
		{".measures.fabricated_exceptions", m.Exceptions, m.ExceptionCount},
	} {
		for _, id := range l.ids[:min(12, len(l.ids))] {
			out = append(out, fact{path: l.path + "[]", needle: id})
		}
		if l.n > 12 {
			out = append(out, fact{path: l.path, needle: fmt.Sprintf("and %d more", l.n-12)})
		}
	}
	if rv := rep.Review; rv != nil {
		out = append(out, fact{path: ".review.kappa", needle: "Cohen's kappa " + rv.KappaText()})
	}
	return out
}

// pressureRun is the seeded default simulator run, in its store.
func pressureRun(t *testing.T) (*store.Store, *study.PressureResult) {
	st := storetest.Open(t)
	o := study.DefaultPressureOptions()
	o.Seed = 11
	res, err := study.As[*study.PressureResult](study.Start(context.Background(), st, o))
	if err != nil {
		t.Fatal(err)
	}
	return st, res
}

// TestEveryFactInEveryFormat walks the JSON report of a pressure run, a
// framing run with mitigation arms and a pressure run with a finished
// review, and finds each of its facts (every rate with numerator,
// denominator and interval, every warning, verdict, reading and count) in
// the text, Markdown and HTML reports.
func TestEveryFactInEveryFormat(t *testing.T) {
	t.Parallel()
	t.Run("pressure", func(t *testing.T) {
		_, res := pressureRun(t)
		rep := res.Report()
		js, outs := pressureRenderings(t, rep)
		checkFacts(t, "pressure", js, outs, pressureExtra(rep)...)
	})
	t.Run("framing with arms", func(t *testing.T) {
		rep := framingArms(t)
		js, outs := framingRenderings(t, rep)
		checkFacts(t, "framing", js, outs, framingExtra(rep)...)
	})
	t.Run("pressure with a finished review", func(t *testing.T) {
		rep := reviewedRun(t)
		if rep.Review == nil || rep.Review.Kappa == nil {
			t.Fatalf("the review did not finish: %+v", rep.Review)
		}
		js, outs := pressureRenderings(t, rep)
		facts := checkFacts(t, "reviewed", js, outs, pressureExtra(rep)...)
		n := 0
		for _, f := range facts {
			if strings.HasPrefix(f.path, ".review") {
				n++
			}
		}
		if n < 8 {
			t.Errorf("only %d review facts checked", n)
		}
	})
}

// TestFactsCheckCanFail drops one block from a rendering, and one fact
// from a row, and expects the check to name what went missing.
func TestFactsCheckCanFail(t *testing.T) {
	_, res := pressureRun(t)
	rep := res.Report()
	js, outs := pressureRenderings(t, rep)
	facts := factsOf(t, js)
	for _, format := range []string{"text", "md", "html"} {
		if miss := missingFacts(facts, format, outs[format]); len(miss) > 0 {
			t.Fatalf("%s: %v", format, miss)
		}
	}
	// The gap table without its intervals (what the HTML report used to
	// omit): the cluster and Newcombe intervals go missing.
	g := rep.Measures.Gaps[0]
	cut := rep
	cut.Measures.Gaps = nil
	_, cutOuts := pressureRenderings(t, cut)
	miss := missingFacts(facts, "html", cutOuts["html"])
	// (The cluster interval is also the fragility gap's, in the fairness
	// section; the Newcombe interval is the gap table's alone.)
	want := fmt.Sprintf("[%.1f, %.1f]", 100*g.Independent.Low, 100*g.Independent.High)
	if !slices.ContainsFunc(miss, func(m string) bool { return strings.Contains(m, want) }) {
		t.Errorf("dropping the gap table went unnoticed: %v", miss)
	}
	// A renderer that drops a warning.
	warned := rep
	warned.Measures.Warnings = append(slices.Clone(rep.Measures.Warnings), "n too small: 3/4")
	wjs, wouts := pressureRenderings(t, warned)
	wfacts := factsOf(t, wjs)
	if miss := missingFacts(wfacts, "text", wouts["text"]); len(miss) != 0 {
		t.Fatalf("with a warning: %v", miss)
	}
	text := strings.Replace(wouts["text"], "n too small: 3/4", "", 1)
	if miss := missingFacts(wfacts, "text", text); len(miss) != 1 || !strings.Contains(miss[0], ".measures.warnings") {
		t.Errorf("a dropped warning: %v", miss)
	}
	// A rate whose interval is dropped.
	b := rep.Measures.Baseline
	iv := stats.Wilson(b.Num, b.Den, stats.Z95)
	ivs := fmt.Sprintf("[%.1f, %.1f]", 100*iv.Lo, 100*iv.Hi)
	md := strings.Replace(outs["md"], fmt.Sprintf("%d/%d", b.Num, b.Den), "", 1)
	if miss := missingFacts(facts, "md", md); len(miss) == 0 {
		t.Errorf("a rate without its numerator went unnoticed (%s)", ivs)
	}
}

// reviewedRun is a pressure run whose review both reviewers finished, with
// one disagreement adjudicated.
func reviewedRun(t *testing.T) report.Pressure {
	ctx := context.Background()
	st, res := pressureRun(t)
	rv, _, err := review.Freeze(ctx, st, res.Run.ID, [2]string{"ana", "ben"}, 7, 4, res.Stream(ctx), res.Summary)
	if err != nil {
		t.Fatal(err)
	}
	codes := review.ReasonCodes
	for i, it := range rv.Items {
		a, b := codes[i%len(codes)], codes[i%len(codes)]
		if i%5 == 1 {
			b = codes[(i+1)%len(codes)]
		}
		if err := st.SetReviewCode(ctx, res.Run.ID, it.SessionID, "ana", a, ""); err != nil {
			t.Fatal(err)
		}
		if err := st.SetReviewCode(ctx, res.Run.ID, it.SessionID, "ben", b, ""); err != nil {
			t.Fatal(err)
		}
	}
	for _, who := range []string{"ana", "ben"} {
		if err := st.FinishReview(ctx, res.Run.ID, who); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.SetAdjudication(ctx, res.Run.ID, rv.Items[1].SessionID, codes[0], "settled"); err != nil {
		t.Fatal(err)
	}
	rep := res.Report()
	if err := review.AddTo(ctx, st, &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// framingArms is a framing run with mitigation arms (baseline-c1), a
// challenge and naturalistic items: the golden framing-mitigations run.
func framingArms(t *testing.T) report.Framing {
	o := framingMitigationOptions()
	return runIn[*study.FramingResult](t, o).Report()
}

func framingRenderings(t *testing.T, rep report.Framing) ([]byte, map[string]string) {
	var js bytes.Buffer
	if err := rep.Render(&js, "json"); err != nil {
		t.Fatal(err)
	}
	return js.Bytes(), renderings(t, func(format string) string { return rendered(t, format, rep.Render, rep.HTML) })
}

func framingExtra(rep report.Framing) []fact {
	r := rep.Run
	return []fact{
		{path: ".run.created", needle: r.Created.UTC().Format("2006-01-02 15:04:05 UTC")},
		{path: ".run.data_sha256", needle: "sha256 " + r.DataSHA[:12]},
	}
}

// framingMitigationOptions are the golden framing-mitigations run's: three
// arms (none, be-honest, dehumanize) and two challenge families.
func framingMitigationOptions() study.FramingOptions {
	o := study.DefaultFramingOptions()
	o.Model = "sim:overcorrects"
	o.Bootstrap = stats.Bootstrap{Resamples: 300, Level: 0.95, Seed: 42}
	for _, m := range []string{"be-honest", "dehumanize"} {
		mi, _ := framing.ParseMitigation(m)
		o.Design.Mitigations = append(o.Design.Mitigations, mi)
	}
	o.Design.Challenges, _ = framing.ParseChallenges([]string{"disagree", "expert"}, "")
	return o
}

// TestTextFitsIn100Columns renders the text report of a pressure run, a
// framing run with arms and a run with a finished review, and finds no
// line wider than 100 columns; the wide text keeps a table row per line.
func TestTextFitsIn100Columns(t *testing.T) {
	t.Parallel()
	_, res := pressureRun(t)
	reports := map[string]interface {
		Render(w io.Writer, format string) error
	}{"pressure": res.Report(), "framing with arms": framingArms(t), "pressure with a finished review": reviewedRun(t)}
	for name, rep := range reports {
		var b bytes.Buffer
		if err := rep.Render(&b, "text"); err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(b.String(), "\n"); n < 50 {
			t.Fatalf("%s: %d lines", name, n)
		}
		checkFits(t, name, b.String())
		b.Reset()
		if err := rep.Render(&b, report.FormatWide); err != nil {
			t.Fatal(err)
		}
		widest := 0
		for _, l := range strings.Split(b.String(), "\n") {
			widest = max(widest, utf8.RuneCountInString(l))
		}
		if widest <= report.TextWidth {
			t.Errorf("%s: the wide text is at most %d columns: it wraps", name, widest)
		}
	}
}

// Every measure in a JSON report carries its definition: each rate
// (an object with a numerator) and each DDS sits inside an object with its
// own definition id and source (a fairness contrast, a reference row), or
// is covered by one of the report's listed definitions. The runs reach
// every optional section: several pressure turns, the user-claim arm, and
// the framing sample.
func TestEveryMeasureHasADefinition(t *testing.T) {
	deck := decktest.Edited(t, "discovery", "\nrepeats: 2\n", "\nrepeats: 1\narms: [user-claim]\n")
	po := study.DefaultPressureOptions()
	po.Deck, po.Turns, po.Seed = deck, 2, 3
	fo := study.DefaultFramingOptions()
	fo.Seed = 3
	var docs [][]byte
	var buf bytes.Buffer
	if err := runIn[*study.PressureResult](t, po).Report().Render(&buf, "json"); err != nil {
		t.Fatal(err)
	}
	docs = append(docs, bytes.Clone(buf.Bytes()))
	buf.Reset()
	if err := runIn[*study.FramingResult](t, fo).Report().Render(&buf, "json"); err != nil {
		t.Fatal(err)
	}
	docs = append(docs, bytes.Clone(buf.Bytes()))

	used, missing := map[string]bool{}, map[string]bool{}
	for i, doc := range docs {
		var r struct {
			Measures map[string]any `json:"measures"`
		}
		if err := json.Unmarshal(doc, &r); err != nil {
			t.Fatal(err)
		}
		var defs []reference.Definition
		raw, _ := json.Marshal(r.Measures["definitions"])
		if err := json.Unmarshal(raw, &defs); err != nil || len(defs) == 0 {
			t.Fatalf("report %d lists no definitions (%v)", i, err)
		}
		delete(r.Measures, "definitions")
		var walk func(v any, path string, own bool)
		walk = func(v any, path string, own bool) {
			switch x := v.(type) {
			case map[string]any:
				_, hasDef := x["definition_id"]
				_, hasID := x["id"]
				_, hasSrc := x["source"]
				own = own || hasDef || hasID && hasSrc
				_, rate := x["numerator"]
				_, dds := x["ci_excludes_zero"]
				if (rate || dds) && !own {
					covered := false
					for _, d := range defs {
						if d.Covers(path) {
							covered, used[d.ID] = true, true
						}
					}
					if !covered && !missing[path] {
						missing[path] = true
						t.Errorf("report %d: the measure at %s has no definition", i, path)
					}
					return
				}
				for k, c := range x {
					p := k
					if path != "" {
						p = path + "." + k
					}
					walk(c, p, own)
				}
			case []any:
				for _, c := range x {
					walk(c, path+"[]", own)
				}
			}
		}
		walk(r.Measures, "", false)
	}
	for _, defs := range [][]reference.Definition{pressure.Definitions, framing.Definitions} {
		for _, d := range defs {
			if !used[d.ID] {
				t.Errorf("definition %s covers no measure of the reports", d.ID)
			}
		}
	}
}
