package cli

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/review"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
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
				keys = jsonKeys(t, sc.Bytes())
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

// jsonKeys are an object's keys in their order.
func jsonKeys(t *testing.T, line []byte) []string {
	dec := json.NewDecoder(strings.NewReader(string(line)))
	dec.Token()
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
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
