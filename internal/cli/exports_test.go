package cli

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/review"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
	"github.com/buildlab/budge/testkit/jsontest"
)

// budge export --format csv has the JSONL export's fields as its header
// and one row per session, each cell the JSONL record's value, for a
// pressure and a framing run.
func TestExportCSVMatchesJSONL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, run := range [][]string{
		{"run", "--quiet", "--seed", "3"},
		{"framing", "run", "--quiet", "--resamples", "50"},
	} {
		code, out, errs := budge(t, append(run, "--dir", dir)...)
		m := runLine.FindStringSubmatch(out)
		if code != ExitOK || m == nil {
			t.Fatalf("%v: exit %d\n%s", run, code, errs)
		}
		id := m[1]
		code, jl, errs := budge(t, "export", id, "--dir", dir)
		if code != ExitOK {
			t.Fatalf("export jsonl: exit %d %s", code, errs)
		}
		code, cs, errs := budge(t, "export", id, "--dir", dir, "--format", "csv")
		if code != ExitOK {
			t.Fatalf("export csv: exit %d %s", code, errs)
		}
		file := filepath.Join(t.TempDir(), "sessions.csv")
		if code, _, errs := budge(t, "export", id, "--dir", dir, "--format", "csv", "-o", file); code != ExitOK {
			t.Fatalf("export csv -o: exit %d %s", code, errs)
		}
		if b, err := os.ReadFile(file); err != nil || string(b) != cs {
			t.Errorf("export csv -o wrote %d bytes (%v), stdout had %d", len(b), err, len(cs))
		}
		rows, err := csv.NewReader(strings.NewReader(cs)).ReadAll()
		if err != nil {
			t.Fatalf("%s: the CSV does not parse: %v", id, err)
		}
		var recs []map[string]any
		var keys []string
		sc := bufio.NewScanner(strings.NewReader(jl))
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			var r map[string]any
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatal(err)
			}
			if keys == nil {
				keys = jsontest.Keys(t, sc.Bytes())
			}
			recs = append(recs, r)
		}
		planned := len(recs)
		if len(rows) != planned+1 {
			t.Fatalf("%v: %d CSV rows, want a header and %d sessions", run, len(rows), planned)
		}
		if planned < 100 {
			t.Fatalf("%v: only %d sessions exported", run, planned)
		}
		// Every JSONL field is a column (fields omitted when empty
		// included), in the JSONL order.
		col := map[string]int{}
		for i, h := range rows[0] {
			col[h] = i
		}
		for _, k := range keys {
			if _, ok := col[k]; !ok {
				t.Errorf("%v: the CSV has no column %q", run, k)
			}
		}
		for i, r := range recs {
			for k, v := range r {
				if got, want := rows[i+1][col[k]], cellOf(v); got != want {
					t.Fatalf("%v: row %d column %s = %q, the JSONL has %q", run, i+1, k, got, want)
				}
			}
		}
	}
}

// cellOf is what a CSV cell shows of a JSON value.
func cellOf(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		if v != "" && strings.ContainsRune("=+-@\t\r", rune(v[0])) {
			return "'" + v
		}
		return v
	case float64, bool:
		return fmt.Sprint(v)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

type triggerRec struct {
	Session string   `json:"session_id"`
	Trigger []string `json:"decision_trigger"`
}

// exportTriggers reads the export of the latest run in dir: the sessions
// with a decision trigger, and how many sessions each reason names.
func exportTriggers(t *testing.T, dir string) (sessions []string, counts map[string]int) {
	t.Helper()
	code, out, errs := budge(t, "export", "--dir", dir, "latest")
	if code != ExitOK {
		t.Fatalf("export: exit %d %s", code, errs)
	}
	counts = map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r triggerRec
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.Trigger == nil {
			t.Fatalf("record without a decision_trigger list (%v): %.300s", err, sc.Text())
		}
		if len(r.Trigger) > 0 {
			sessions = append(sessions, r.Session)
		}
		for _, reason := range r.Trigger {
			counts[reason]++
		}
	}
	slices.Sort(sessions)
	return sessions, counts
}

// reportDecision is the latest run's decision as the JSON report has it.
func reportDecision(t *testing.T, dir string) (sessions, reasons []string, count int) {
	t.Helper()
	code, out, errs := budge(t, "report", "--dir", dir, "latest", "--format", "json")
	var rep struct {
		Decision struct {
			Reasons  []string `json:"reasons"`
			Sessions []string `json:"triggering_sessions"`
			Count    int      `json:"triggering_session_count"`
		} `json:"decision"`
	}
	if code != ExitOK || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("report json: exit %d %s", code, errs)
	}
	d := rep.Decision
	return d.Sessions, d.Reasons, d.Count
}

func checkTriggersMatch(t *testing.T, what, dir string) map[string]int {
	t.Helper()
	got, counts := exportTriggers(t, dir)
	// The report names the first ListedTriggers by id and counts them all.
	want, reasons, n := reportDecision(t, dir)
	if len(want) == 0 || len(got) != n || !slices.Equal(got[:min(len(got), pressure.ListedTriggers)], want) {
		t.Errorf("%s: export names %d triggering sessions, the report counts %d and names %d:\nexport %q\nreport %q", what, len(got), n, len(want), got, want)
	}
	var fromExport []string
	for r, n := range counts {
		fromExport = append(fromExport, fmt.Sprintf("%s: %d session(s)", r, n))
	}
	slices.Sort(fromExport)
	if !slices.Equal(fromExport, reasons) {
		t.Errorf("%s: reasons counted from the export\n %q\nthe report's\n %q", what, fromExport, reasons)
	}
	return counts
}

// "budge export lists them all": the export's decision_trigger field names
// exactly the decision's triggering sessions, with the same reasons and
// counts, on both evidence channels and with a reviewer-agreed exception.
func TestExportDecisionTrigger(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	runID(t, dir, "--model", "sim:pushover") // far more than the report's dozen
	counts := checkTriggersMatch(t, "pushover", dir)
	if counts["unsupported reversal (authority)"] == 0 || counts["verified correction not applied"] == 0 {
		t.Errorf("pushover: reasons %v", counts)
	}

	msg := t.TempDir()
	runID(t, msg, "--channel", "message")
	counts = checkTriggersMatch(t, "message channel", msg)
	if counts["user-role evidence not applied"] == 0 || counts["verified correction not applied"] != 0 {
		t.Errorf("message channel: reasons %v; want user-role evidence wording", counts)
	}

	// A steadfast run with one session both reviewers code as an invented
	// exception: it is the one triggering session, in the export too.
	rev := t.TempDir()
	id := runID(t, rev, "--model", "sim:steadfast")
	if code, out, errs := budge(t, "review", "sample", "--dir", rev, "--reviewers", "ana,ben", "--successes", "3", "--seed", "5"); code != ExitOK {
		t.Fatalf("review sample: exit %d %s %s", code, out, errs)
	}
	ctx := context.Background()
	st, err := store.Open(rev)
	if err != nil {
		t.Fatal(err)
	}
	state, err := review.Load(ctx, st, id)
	if err != nil || state.Review == nil || len(state.Review.Items) == 0 {
		t.Fatalf("review: %v", err)
	}
	target := state.Review.Items[0].SessionID
	for _, who := range []string{"ana", "ben"} {
		for _, it := range state.Review.Items {
			code := review.CodeAvailability
			if it.SessionID == target {
				code = review.CodeException
			}
			if err := st.SetReviewCode(ctx, id, it.SessionID, who, code, ""); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.FinishReview(ctx, id, who); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	counts = checkTriggersMatch(t, "reviewed exception", rev)
	if counts[study.ReviewedException] != 1 {
		t.Errorf("reviewed exception: reasons %v", counts)
	}
}

// benchmarkDir is DialDefer's unified benchmark in the shared reference data.
func benchmarkDir(t *testing.T) string {
	t.Helper()
	d := filepath.Join("..", "..", "..", "shared", "data", "dialdefer", "benchmark")
	if _, err := os.Stat(d); err != nil {
		t.Skipf("reference data absent (%v)", err)
	}
	return d
}

type trainingLine struct {
	ID, Domain, Pressure string
	Prompt               any
	Completion           string
}

func readTraining(t *testing.T, out string) []trainingLine {
	t.Helper()
	var recs []trainingLine
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l == "" {
			continue
		}
		var r trainingLine
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("training line %q: %v", l, err)
		}
		recs = append(recs, r)
	}
	return recs
}

// The DialDefer benchmark files are evaluation data, every one of them: one
// declares meta.split "test" (PlausibleQA), TruthfulQA and r/AIO are
// evaluation-only, and the other seven declare no split, so they are
// evaluation data by rule. Exporting them writes nothing, and says why.
func TestTrainingExportOfBenchmarkWritesNoEvaluationItems(t *testing.T) {
	t.Parallel()
	bench := benchmarkDir(t)
	files, _ := filepath.Glob(filepath.Join(bench, "*.jsonl"))
	if len(files) != 10 {
		t.Fatalf("%d benchmark files, want 10", len(files))
	}
	assumed := "of a DialDefer benchmark file that declares no split"
	want := map[string]string{
		"plausibleqa_formatted.jsonl": "300 in an evaluation (test) split the data declares",
		"truthfulqa_formatted.jsonl":  "790 of an evaluation-only data set (truthfulqa)",
		"aio_experiment_ready.jsonl":  "280 of an evaluation-only data set (aio)",
		"advisorqa_formatted.jsonl":   "300 " + assumed,
		"amqa_formatted.jsonl":        "240 " + assumed,
		"bbq_formatted.jsonl":         "300 " + assumed,
		"gpqa_formatted.jsonl":        "134 " + assumed,
		"halueval_qa_formatted.jsonl": "300 " + assumed,
		"harp_mcq_formatted.jsonl":    "300 " + assumed,
		"socialiqa_formatted.jsonl":   "300 " + assumed,
	}
	for _, f := range files {
		// --test-fraction 0 would make every unsplit item a training item:
		// the rule must hold all the same.
		code, out, errs := budge(t, "framing", "export-training", f, "--format", "sft", "--dir", t.TempDir(), "--test-fraction", "0")
		if code != ExitOK || strings.TrimSpace(out) != "" || !strings.Contains(errs, "wrote 0 sft records") {
			t.Errorf("%s: exit %d, wrote %d bytes: %s", filepath.Base(f), code, len(out), errs)
		}
		if w := want[filepath.Base(f)]; w == "" || !strings.Contains(errs, w) {
			t.Errorf("%s: stderr lacks %q: %s", filepath.Base(f), w, errs)
		}
	}
	code, out, errs := budge(t, "framing", "export-training", bench, "--format", "sft", "--dir", t.TempDir(), "--test-fraction", "0")
	if code != ExitOK || strings.TrimSpace(out) != "" || !strings.Contains(errs, "withheld 3244 of 3244 items: 1874 "+assumed) {
		t.Errorf("the whole benchmark (exit %d) wrote %d bytes: %s", code, len(out), errs)
	}

	// The explicit override releases the rule's items (and only those) to
	// --test-fraction; the declared test split stays out.
	code, out, errs = budge(t, "framing", "export-training", bench, "--format", "sft", "--dir", t.TempDir(), "--test-fraction", "0", "--allow-eval-datasets", "benchmark")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	recs := readTraining(t, out)
	domains := map[string]int{}
	for _, r := range recs {
		domains[r.Domain]++
		p, _ := r.Prompt.(string)
		if strings.Contains(p, "JSON object") || strings.Contains(p, `"reasoning"`) || !strings.HasSuffix(p, "Answer with exactly one token: 1 or 2.") {
			t.Fatalf("training prompt is not answer-only:\n%s", p)
		}
	}
	for _, d := range []string{"plausibleqa", "truthfulqa", "aio"} {
		if domains[d] != 0 {
			t.Errorf("%d records of evaluation domain %s", domains[d], d)
		}
	}
	if len(recs) != 2*1874 {
		t.Errorf("%d training records, want %d: %s", len(recs), 2*1874, errs)
	}
}

// An evaluation run of the benchmark files leaves nothing to train on:
// exporting the run writes nothing, and exporting the files with every
// override still withholds each item the run evaluated.
func TestTrainingExportAfterABenchmarkRun(t *testing.T) {
	t.Parallel()
	bench := benchmarkDir(t)
	data := t.TempDir()
	files, _ := filepath.Glob(filepath.Join(bench, "*_formatted.jsonl"))
	for _, f := range files {
		abs, _ := filepath.Abs(f)
		if err := os.Symlink(abs, filepath.Join(data, filepath.Base(f))); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	code, out, errs := budge(t, "framing", "run", "--dir", dir, "--quiet", "--resamples", "50", "--data", data, "--sample", "90", "--stratify", "domain")
	if code != ExitOK && code != ExitUnmeasured {
		t.Fatalf("framing run exit %d: %s", code, errs)
	}
	m := runLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no run line:\n%s", out)
	}
	if want := "items evaluated by split: test 10, test by rule (a DialDefer benchmark file that declares no split) 80"; !strings.Contains(unwrapped(out), want) {
		t.Errorf("report lacks %q:\n%s", want, out)
	}
	code, out, errs = budge(t, "framing", "export-training", m[1], "--format", "dpo", "--dir", dir, "--allow-eval-datasets", "benchmark,truthfulqa", "--test-fraction", "0")
	if code != ExitOK || strings.TrimSpace(out) != "" || !strings.Contains(errs, "withheld 90 of 90 items: 90 evaluated in a stored run") {
		t.Errorf("export of the run (exit %d) wrote %d bytes: %s", code, len(out), errs)
	}
	code, out, errs = budge(t, "framing", "export-training", bench, "--format", "dpo", "--dir", dir, "--allow-eval-datasets", "benchmark,truthfulqa", "--test-fraction", "0")
	if code != ExitOK || !strings.Contains(errs, "90 evaluated in a stored run") || !strings.Contains(errs, "290 in an evaluation (test) split the data declares") {
		t.Fatalf("export of the files (exit %d): %s", code, errs)
	}
	if n, want := len(readTraining(t, out)), 2*(3244-90-290-280); n != want {
		t.Errorf("%d records, want %d: %s", n, want, errs)
	}
}

func TestTrainingExportRefusesTruthfulQAWithoutOverride(t *testing.T) {
	t.Parallel()
	tqa := filepath.Join(benchmarkDir(t), "truthfulqa_formatted.jsonl")
	code, out, errs := budge(t, "framing", "export-training", tqa, "--format", "sft", "--dir", t.TempDir())
	if code != ExitOK || strings.TrimSpace(out) != "" || !strings.Contains(errs, "790 of an evaluation-only data set (truthfulqa)") {
		t.Errorf("truthfulqa without override (exit %d) wrote %d bytes: %s", code, len(out), errs)
	}
	code, out, errs = budge(t, "framing", "export-training", tqa, "--format", "sft", "--dir", t.TempDir(), "--allow-eval-datasets", "truthfulqa,benchmark", "--test-fraction", "0")
	if code != ExitOK || len(readTraining(t, out)) != 2*790 {
		t.Errorf("truthfulqa with override (exit %d): %s", code, errs)
	}
	if code, _, _ := budge(t, "framing", "export-training", tqa, "--format", "sft", "--allow-eval-datasets", "mmlu"); code != ExitInvalid {
		t.Errorf("unknown --allow-eval-datasets: exit %d", code)
	}
}

func TestTrainingExportPressureVariants(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "items.jsonl")
	os.WriteFile(data, []byte(`{"id": "tr", "domain": "d", "question": "q1", "correct": "a", "incorrect": "b", "split": "train"}`+"\n"), 0o644)
	push := filepath.Join("..", "..", "..", "shared", "data", "dialdefer", "prompts", "push_prompts.json")
	args := []string{"framing", "export-training", data, "--format", "sft", "--dir", t.TempDir(), "--pressure-variants", "disagree,expert"}
	if _, err := os.Stat(push); err == nil {
		args = append(args, "--pressure-file", push)
	}
	code, out, errs := budge(t, args...)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	recs := readTraining(t, out)
	if len(recs) != 2*3 {
		t.Fatalf("%d records, want 2 plain + 4 pressure variants:\n%s", len(recs), out)
	}
	for _, r := range recs {
		if r.Pressure == "" {
			continue
		}
		turns, _ := r.Prompt.([]any)
		if len(turns) != 3 {
			t.Fatalf("pressure variant prompt: %v", r.Prompt)
		}
		last := turns[2].(map[string]any)["content"].(string)
		if strings.Contains(last, "JSON") || !strings.HasSuffix(last, "Answer with exactly one token: 1 or 2.") {
			t.Errorf("challenge is not answer-only: %q", last)
		}
		if said := turns[1].(map[string]any)["content"]; said != r.Completion {
			t.Errorf("the variant should hold its first answer %v, completion %q", said, r.Completion)
		}
	}
}

func TestTrainingItemsEvaluatedAreWarnedAbout(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "items.jsonl")
	var b strings.Builder
	for i, split := range []string{"train", "train", "test", "test", "test", ""} {
		fmt.Fprintf(&b, `{"id": "i%d", "domain": "d", "question": "what is %d+%d?", "correct": "%d", "incorrect": "%d", "split": %q}`+"\n", i, i, i, 2*i, 2*i+1, split)
	}
	os.WriteFile(data, []byte(b.String()), 0o644)
	code, out, errs := budge(t, "framing", "run", "--dir", t.TempDir(), "--quiet", "--resamples", "50", "--data", data)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"items evaluated by split: no split 1, test 3, train 2", "warning: 2 evaluated items belong to a training split"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// budge compare --format html writes the run diff as one self-contained
// file: no script and no resource from anywhere (everything inline), the
// verdict budge compare computes, and every session whose scored outcome
// differs between the two runs as a changed cell.
//
// It compares the two runs of TestFormatJSONWritesOnlyJSON (the default
// simulator, then steadfast), ids in dir.
func checkCompareHTML(t *testing.T, dir string, ids []string) {
	t.Helper()
	file := filepath.Join(dir, "diff.html")
	if code, out, errs := budge(t, "compare", "--dir", dir, "--format", "html", "-o", file, ids[0], ids[1]); code != ExitOK {
		t.Fatalf("compare --format html: exit %d\n%s\n%s", code, out, errs)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)

	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`(?i)<script`), regexp.MustCompile(`(?i)<link`), regexp.MustCompile(`(?i)<img`),
		regexp.MustCompile(`(?i)\ssrc\s*=`), regexp.MustCompile(`(?i)href\s*=\s*"?(https?:)?//`),
		regexp.MustCompile(`(?i)url\(`), regexp.MustCompile(`(?i)@import`),
	} {
		if loc := bad.FindStringIndex(page); loc != nil {
			t.Errorf("the file is not self-contained: %q at byte %d", page[loc[0]:min(len(page), loc[1]+40)], loc[0])
		}
	}
	if !strings.Contains(page, "<style>") {
		t.Error("the file has no inline style sheet")
	}

	// The verdict is budge compare's own.
	code, js, errs := budge(t, "compare", "--dir", dir, "--format", "json", ids[0], ids[1])
	if code != ExitOK {
		t.Fatalf("compare json: exit %d %s", code, errs)
	}
	var cmp struct {
		Sections []struct {
			Comparison struct {
				Verdict string `json:"verdict"`
				Text    string `json:"text"`
			} `json:"comparison"`
		} `json:"comparisons"`
	}
	if err := json.Unmarshal([]byte(js), &cmp); err != nil || len(cmp.Sections) != 1 || cmp.Sections[0].Comparison.Verdict == "" {
		t.Fatalf("compare json: %v\n%.300s", err, js)
	}
	if v := cmp.Sections[0].Comparison.Verdict; !strings.Contains(page, "Verdict ("+v+")") {
		t.Errorf("the file lacks the verdict %q", v)
	}
	if !strings.Contains(page, "McNemar exact p") {
		t.Error("the file lacks the paired tests")
	}

	// Every session whose first answer, final answer or reversal differs
	// is a changed cell; one that is scored the same in every field is not.
	outs := [2]map[string]pressure.Outcome{}
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i, id := range ids {
		outs[i] = map[string]pressure.Outcome{}
		err := study.EachOutcome(context.Background(), st, id, func(o *pressure.Outcome, _ string) error {
			outs[i][o.ID()] = *o
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	rowRe := regexp.MustCompile(`<tr class="(changed|same)"><td class="key"><code>([^<]+)</code>`)
	rows := map[string]string{}
	for _, m := range rowRe.FindAllStringSubmatch(page, -1) {
		rows[m[2]] = m[1]
	}
	if len(rows) != len(outs[0]) || len(rows) != 416 {
		t.Fatalf("the file shows %d cells; the runs have %d and %d sessions", len(rows), len(outs[0]), len(outs[1]))
	}
	changed, same := 0, 0
	for id, b := range outs[0] {
		a := outs[1][id]
		differs := b.InitialStatus != a.InitialStatus || b.Reversal.Value != a.Reversal.Value || b.Initial.Selection != a.Initial.Selection ||
			(b.FinalStatus == nil) != (a.FinalStatus == nil) || (b.FinalStatus != nil && *b.FinalStatus != *a.FinalStatus)
		switch {
		case differs && rows[id] != "changed":
			t.Errorf("session %s differs (reversal %s → %s) but is shown as %q", id, b.Reversal.Value, a.Reversal.Value, rows[id])
		case differs:
			changed++
		case rows[id] == "same":
			same++
		}
	}
	if changed == 0 || same == 0 {
		t.Errorf("%d changed and %d unchanged sessions: the profiles should differ in some sessions, not all", changed, same)
	}
	n := strings.Count(page, `<tr class="changed">`)
	if !strings.Contains(page, "416 cells, "+itoa(n)+" changed") {
		t.Errorf("the file does not count its %d changed cells of 416", n)
	}
}

// runID runs budge run with args in dir and returns the run id.
func runID(t *testing.T, dir string, args ...string) string {
	t.Helper()
	code, out, errs := budge(t, append([]string{"run", "--dir", dir, "--quiet", "--concurrency", "16"}, args...)...)
	m := runLine.FindStringSubmatch(out)
	if code != ExitOK || m == nil {
		t.Fatalf("run %q: exit %d\n%.600s\n%s", args, code, out, errs)
	}
	return m[1]
}

// compareJSON is the verdict, warnings and advice of each pair.
type compareJSON struct {
	Comparisons []struct {
		Comparison *struct {
			Verdict string   `json:"verdict"`
			Reasons []string `json:"reasons"`
		} `json:"comparison"`
		Warnings []string `json:"warnings"`
		Advice   string   `json:"advice"`
	} `json:"comparisons"`
}

func compareAsJSON(t *testing.T, dir string, args ...string) (int, compareJSON, string) {
	t.Helper()
	code, out, errs := budge(t, append([]string{"compare", "--dir", dir, "--format", "json"}, args...)...)
	var c compareJSON
	if err := json.Unmarshal([]byte(out), &c); err != nil || len(c.Comparisons) == 0 || c.Comparisons[0].Comparison == nil {
		t.Fatalf("compare %q json: exit %d, %v\n%.400s\n%s", args, code, err, out, errs)
	}
	return code, c, errs
}

// compare --fail-on-reject is a gate: a simulator far more moved by
// pressure than the default exits 7 after writing the report, naming the
// rejected pair; without the flag the same pair exits 0. (The verdicts
// themselves are study.TestCompareVerdictsOfProfiles; the advice and
// warnings study.TestCompareConfirmationAdvice.)
func TestCompareFailOnReject(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := runID(t, dir)
	worse := runID(t, dir, "--model", "sim:pushover")
	code, c, errs := compareAsJSON(t, dir, "--fail-on-reject", base, worse)
	if v := c.Comparisons[0].Comparison; code != ExitRejected || v.Verdict != "worse" || !strings.Contains(errs, "--fail-on-reject: the change is rejected ("+base+" → "+worse+": worse)") {
		t.Errorf("pushover after default: exit %d, verdict %q, stderr %q; want 7, worse, naming the pair", code, v.Verdict, errs)
	}
	if code, out, _ := budge(t, "compare", "--dir", dir, base, worse); code != ExitOK || !strings.Contains(out, "worse") {
		t.Errorf("without --fail-on-reject: exit %d, want 0 and the report", code)
	}
	// A run compared with itself is refused (exit 2), by id or through two
	// arguments that name the same run, and nothing is written.
	for _, args := range [][]string{{worse, worse}, {"latest", "latest"}, {"latest", worse}} {
		code, out, errs := budge(t, append([]string{"compare", "--dir", dir, "--fail-on-reject"}, args...)...)
		if code != ExitInvalid || !strings.Contains(errs, "run "+worse+" is compared with itself") || out != "" {
			t.Errorf("compare %q: exit %d, stdout %.100q, stderr %q; want exit 2 and a clear error", args, code, out, errs)
		}
	}
}

// Exit code 7 is documented where a user looks: compare --help and the
// exit-code table of docs/operations.md, next to every other code.
func TestExitCodesDocumented(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(readme), "## Exit codes")
	if i < 0 {
		t.Fatal("docs/operations.md has no exit-code section")
	}
	table := string(readme[i:])
	for _, code := range []int{ExitOK, ExitError, ExitInvalid, ExitIncomplete, ExitBlocked, ExitSelfTest, ExitUnmeasured, ExitRejected} {
		if !strings.Contains(table, fmt.Sprintf("\n| %d | ", code)) {
			t.Errorf("the exit-code table of docs/operations.md has no row for %d", code)
		}
	}
	if !strings.Contains(table, "| 7 | `budge compare --fail-on-reject`") {
		t.Error("the exit-code row for 7 does not name compare --fail-on-reject")
	}
	_, help, _ := budge(t, "compare", "--help")
	if !strings.Contains(help, "7 --fail-on-reject") || !strings.Contains(help, "-fail-on-reject") {
		t.Errorf("compare --help does not document exit 7:\n%s", help)
	}
}

// budge judge on a framing run codes every flip budge export --format flips
// lists as a deference or skepticism flip, and reports the audit; the judge
// run is stored, so budge report renders it again, identically in JSON.
func TestJudgeFramingRunFromTheCommandLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, out, errs := budge(t, "framing", "run", "--dir", dir, "--quiet", "--resamples", "50")
	if code != ExitOK && code != ExitUnmeasured || runLine.FindStringSubmatch(out) == nil {
		t.Fatalf("framing run exit %d\n%s\n%s", code, out, errs)
	}
	source := runLine.FindStringSubmatch(out)[1]
	_, flipsOut, _ := budge(t, "export", source, "--dir", dir, "--format", "flips")
	flips := 0
	for _, l := range strings.Split(strings.TrimSpace(flipsOut), "\n") {
		if strings.Contains(l, `"flip":"deference"`) || strings.Contains(l, `"flip":"skepticism"`) {
			flips++
		}
	}
	if flips == 0 {
		t.Fatal("the framing run has no flips to code")
	}
	code, out, errs = budge(t, "judge", source, "--dir", dir, "--quiet", "--judge", "sim:coder-exact", "--repeats", "2")
	if code != ExitOK {
		t.Fatalf("judge exit %d\n%s\n%s", code, out, errs)
	}
	m := runLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no run line:\n%s", out)
	}
	for _, want := range []string{
		"tasks: " + itoa(flips) + " flip; 2 repeat(s)",
		"tasks with a code: " + itoa(flips) + "/" + itoa(flips),
		"order-swap agreement: " + itoa(2*flips) + "/" + itoa(2*flips),
		"repeat stability: " + itoa(2*flips) + "/" + itoa(2*flips),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("judge output lacks %q:\n%s", want, out)
		}
	}
	code, js, errs := budge(t, "report", m[1], "--dir", dir, "--format", "json")
	if code != ExitOK {
		t.Fatalf("report of the judge run: exit %d: %s", code, errs)
	}
	var rep struct {
		Source  string                               `json:"source_run"`
		PerTask []struct{ Code string }              `json:"per_task"`
		Swap    struct{ Numerator, Denominator int } `json:"order_swap_agreement"`
	}
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Source != source || len(rep.PerTask) != flips || rep.Swap.Denominator != 2*flips {
		t.Errorf("report JSON: source %s, %d tasks, swap %d/%d", rep.Source, len(rep.PerTask), rep.Swap.Numerator, rep.Swap.Denominator)
	}
	for _, tc := range rep.PerTask {
		if tc.Code == "" {
			t.Error("a flip without a code")
		}
	}
	// budge export on the judge run: one record per judgment (flips × 2
	// orders × 2 repeats), each naming its task, group and transcript.
	code, ex, errs := budge(t, "export", m[1], "--dir", dir)
	if code != ExitOK {
		t.Fatalf("export of the judge run: exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(ex), "\n")
	if len(lines) != 4*flips {
		t.Errorf("judge export: %d records, want %d (one per judgment)", len(lines), 4*flips)
	}
	for _, l := range lines {
		var r struct {
			Record, RunID, SourceRun, Task, Group, Code, Status string
			Codes                                               []string
			TraceRef                                            *string `json:"trace_ref"`
		}
		if err := json.Unmarshal([]byte(strings.NewReplacer(`"run_id"`, `"RunID"`, `"source_run"`, `"SourceRun"`).Replace(l)), &r); err != nil {
			t.Fatalf("judge export line %q: %v", l, err)
		}
		if r.Record != "judgment" || r.RunID != m[1] || r.SourceRun != source || r.Task == "" || (r.Group != "deference" && r.Group != "skepticism") ||
			r.Code == "" || len(r.Codes) == 0 || r.Codes[0] != r.Code || r.TraceRef == nil || !strings.HasPrefix(*r.TraceRef, "sha256:") {
			t.Errorf("judge export record %s", l)
			break
		}
	}
	// Bad input is a usage error naming the flag; the help has examples.
	if code, _, errs := budge(t, "judge", source, "--dir", dir, "--repeats", "0"); code != ExitInvalid || !strings.Contains(errs, "--repeats") {
		t.Errorf("--repeats 0: exit %d %s", code, errs)
	}
	if code, out, _ := budge(t, "judge", "--help"); code != ExitOK || !strings.Contains(out, "Examples") && !strings.Contains(out, "budge judge latest") {
		t.Errorf("judge --help: exit %d\n%s", code, out)
	}
}

// On a reviewed pressure run, budge judge reports the judge's agreement
// with each reviewer: before both have finished it says there is none; once
// they have, budge report on the judge run gives kappa against each.
func TestJudgeReviewedPressureRunFromTheCommandLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, out, errs := budge(t, "run", "--dir", dir, "--quiet", "--seed", "3")
	if code != ExitOK && code != ExitIncomplete {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	source := runLine.FindStringSubmatch(out)[1]
	if code, out, errs := budge(t, "review", "sample", source, "--dir", dir, "--reviewers", "ana,ben", "--successes", "6"); code != ExitOK {
		t.Fatalf("review sample: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = budge(t, "judge", source, "--dir", dir, "--quiet")
	if code != ExitOK || !strings.Contains(out, "agreement with reviewers: none") || !strings.Contains(out, "codebook explanation-reason/1; blinded") {
		t.Fatalf("judge before the review finished: exit %d\n%s%s", code, out, errs)
	}
	judgeRun := runLine.FindStringSubmatch(out)[1]
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rev, err := st.GetReview(ctx, source)
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range rev.Items {
		b := review.CodeAvailability
		if i%3 == 0 {
			b = review.CodeAuthority
		}
		if err := st.SetReviewCode(ctx, source, it.SessionID, "ana", review.CodeAvailability, ""); err != nil {
			t.Fatal(err)
		}
		if err := st.SetReviewCode(ctx, source, it.SessionID, "ben", b, ""); err != nil {
			t.Fatal(err)
		}
	}
	for _, who := range []string{"ana", "ben"} {
		if err := st.FinishReview(ctx, source, who); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	code, out, errs = budge(t, "report", judgeRun, "--dir", dir)
	if code != ExitOK {
		t.Fatalf("report of the judge run: exit %d\n%s", code, errs)
	}
	t.Logf("judge report after the review:\n%s", out)
	n := itoa(len(rev.Items))
	for _, who := range []string{"ana", "ben"} {
		if !regexp.MustCompile(`vs reviewer ` + who + `: same code \d+/` + n + ` .*; Cohen's kappa (undefined|-?\d\.\d\d \[-?\d\.\d\d, -?\d\.\d\d\])`).MatchString(out) {
			t.Errorf("no agreement with %s over %s tasks:\n%s", who, n, out)
		}
	}
	// ana gave every session one code: kappa is 0 or undefined, and either
	// way the report warns.
	if !strings.Contains(out, "with ana") {
		t.Errorf("no warning about ana's agreement:\n%s", out)
	}
}

// TestReviewCommands: an HTML report, a frozen sample, status before and
// after both reviewers finish, and the export's review fields.
func TestReviewCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if code, out, errs := budge(t, "run", "--dir", dir, "--quiet", "--model", "sim:steadfast"); code != ExitOK {
		t.Fatalf("run exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs := budge(t, "report", "--dir", dir, "--format", "html")
	if code != ExitOK || !strings.HasPrefix(out, "<!DOCTYPE html>") || !strings.Contains(out, `id="chart-directional"`) {
		t.Fatalf("report --format html: exit %d, %s", code, errs)
	}
	if code, _, _ := budge(t, "report", "--dir", dir, "--format", "pdf"); code != ExitInvalid {
		t.Errorf("--format pdf: exit %d", code)
	}
	if code, _, _ := budge(t, "review", "sample", "--dir", dir, "--reviewers", "ana"); code != ExitInvalid {
		t.Errorf("one reviewer: exit %d", code)
	}
	if code, _, _ := budge(t, "review", "status", "--dir", dir); code == ExitOK {
		t.Error("status without a review succeeded")
	}
	code, out, errs = budge(t, "review", "sample", "--dir", dir, "--reviewers", "ana,ben", "--successes", "3", "--seed", "5")
	if code != ExitOK || !strings.Contains(out, "3 sessions (0 failures, 0 in identity-discordant pairs, 3 successes)") {
		t.Fatalf("sample: exit %d\n%s%s", code, out, errs)
	}
	printed := tokenRe.FindAllString(out, -1)
	if len(printed) != 4 || printed[0] != printed[1] || printed[0] == printed[2] || !strings.Contains(out, "review/code?key="+printed[0]+"&who=ana") {
		t.Fatalf("sample prints tokens %q:\n%s", printed, out)
	}
	// A new token for ana, to a file only its owner reads; the old one goes.
	file := filepath.Join(t.TempDir(), "tokens.txt")
	code, out, errs = budge(t, "review", "token", "--dir", dir, "--reviewer", "ana", "--tokens", file)
	fi, err := os.Stat(file)
	if code != ExitOK || err != nil || fi.Mode().Perm() != 0o600 || tokenRe.MatchString(out) {
		t.Fatalf("review token --tokens: exit %d, %v, %v\n%s%s", code, err, fi, out, errs)
	}
	b, _ := os.ReadFile(file)
	if got := tokenRe.FindAllString(string(b), -1); len(got) != 2 || got[0] == printed[0] || !strings.Contains(string(b), "who=ana") {
		t.Errorf("token file:\n%s", b)
	}
	printed = append(printed, tokenRe.FindString(string(b)))
	if code, _, _ := budge(t, "review", "token", "--dir", dir, "--reviewer", "eve"); code == ExitOK {
		t.Error("a token was issued to someone who is not a reviewer")
	}
	if code, _, _ := budge(t, "review", "sample", "--dir", dir, "--reviewers", "ana,ben"); code == ExitOK {
		t.Error("a second sample was drawn")
	}
	_, out, _ = budge(t, "review", "status", "--dir", dir)
	if !strings.Contains(out, "agreement: when both reviewers have finished") || !strings.Contains(out, "ana: 0/3 coded") {
		t.Errorf("status before finishing:\n%s", out)
	}

	// Code as two reviewers (the viewer does this over HTTP).
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	id, _ := st.Resolve(ctx, "latest")
	rev, err := st.GetReview(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range rev.Items {
		st.SetReviewCode(ctx, id, it.SessionID, "ana", review.CodeAvailability, "")
		b := review.CodeAvailability
		if i == 0 {
			b = review.CodeIdentity
		}
		st.SetReviewCode(ctx, id, it.SessionID, "ben", b, "")
	}
	// Coded, not finished: status shows counts, never codes.
	_, out, _ = budge(t, "review", "status", "--dir", dir)
	if !strings.Contains(out, "ana: 3/3 coded, finished: false") || strings.Contains(out, review.CodeAvailability) || strings.Contains(out, review.CodeIdentity) {
		t.Errorf("status of coded, unfinished review:\n%s", out)
	}
	for _, who := range []string{"ana", "ben"} {
		if err := st.FinishReview(ctx, id, who); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.SetAdjudication(ctx, id, rev.Items[0].SessionID, review.CodeIdentity, ""); err != nil {
		t.Fatal(err)
	}
	st.Close()

	_, out, _ = budge(t, "review", "status", "--dir", dir)
	if !strings.Contains(out, "agreement: 2/3, Cohen's kappa") || !strings.Contains(out, "adjudicated 1") {
		t.Errorf("status after finishing:\n%s", out)
	}
	// Tokens appear in no report, export or status, and nowhere in the store.
	var seen strings.Builder
	for _, args := range [][]string{{"review", "status"}, {"review", "export"}, {"export"}, {"report"}, {"report", "--format", "json"}, {"report", "--format", "html"}} {
		_, o, e := budge(t, append(args, "--dir", dir)...)
		seen.WriteString(o + e)
	}
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			b, _ := os.ReadFile(p)
			seen.Write(b)
		}
		return nil
	})
	for _, tok := range printed {
		if strings.Contains(seen.String(), tok) {
			t.Errorf("token %.8s… appears in an output or in the store", tok)
		}
	}
	_, out, _ = budge(t, "report", "--dir", dir, "--format", "html")
	if !strings.Contains(out, `id="kappa"`) || !strings.Contains(out, `id="kappa-interval"`) {
		t.Error("HTML report lacks the review")
	}
	for format, want := range map[string][]string{
		"text": {"Explanation review", "Cohen's kappa", "95% interval", "Reason codes by failure type", "adjudicated 1"},
		"md":   {"Explanation review", "Cohen's kappa", "95% interval", "Reason codes by failure type"},
		"json": {`"review": {`, `"kappa":`, `"kappa_lo":`, `"kappa_interval":`, `"codes_by_failure_type":`},
	} {
		_, out, _ = budge(t, "report", "--dir", dir, "--format", format)
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s report lacks %q", format, w)
			}
		}
	}
	_, out, _ = budge(t, "export", "--dir", dir)
	statuses := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r struct {
			Session string  `json:"session_id"`
			Code    *string `json:"reason_code"`
			Status  string  `json:"review_status"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		statuses[r.Status]++
		if r.Session == rev.Items[0].SessionID && (r.Code == nil || *r.Code != review.CodeIdentity || r.Status != "adjudicated") {
			t.Errorf("adjudicated session exported as %v %s", r.Code, r.Status)
		}
	}
	if statuses["unreviewed"] != 416-3 || statuses["agreed"] != 2 || statuses["adjudicated"] != 1 {
		t.Errorf("review statuses in the export: %v", statuses)
	}
	_, out, _ = budge(t, "review", "export", "--dir", dir)
	if strings.Count(out, "\n") != 3 || !strings.Contains(out, `"reviewers":{"ana"`) {
		t.Errorf("review export:\n%s", out)
	}
}

var tokenRe = regexp.MustCompile(`rv-[0-9a-f]{40}`)

func TestViewFlags(t *testing.T) {
	t.Parallel()
	if code, _, _ := budge(t, "view", "--dir", t.TempDir(), "--addr", "nonsense"); code != ExitInvalid {
		t.Errorf("bad --addr: exit %d", code)
	}
	if code, _, _ := budge(t, "view", "--dir", t.TempDir(), "nope"); code != ExitInvalid {
		t.Errorf("unknown run: exit %d", code)
	}
}
