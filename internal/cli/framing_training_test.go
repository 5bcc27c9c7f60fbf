package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
