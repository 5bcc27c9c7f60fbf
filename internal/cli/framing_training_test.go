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

func TestTrainingExportOfBenchmarkWritesNoEvaluationItems(t *testing.T) {
	bench := benchmarkDir(t)
	code, out, errs := budge(t, "framing", "export-training", bench, "--format", "sft", "--dir", t.TempDir(), "--test-fraction", "0")
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
	// PlausibleQA declares meta.split "test" on all 300; TruthfulQA and
	// r/AIO are evaluation-only.
	for _, d := range []string{"plausibleqa", "truthfulqa", "aio"} {
		if domains[d] != 0 {
			t.Errorf("%d records of evaluation domain %s", domains[d], d)
		}
	}
	for _, want := range []string{"300 in an evaluation (test) split the data declares", "790 of an evaluation-only data set (truthfulqa)", "280 of an evaluation-only data set (aio)"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q: %s", want, errs)
		}
	}
	if want := 2 * (3244 - 300 - 790 - 280); len(recs) != want {
		t.Errorf("%d training records, want %d: %s", len(recs), want, errs)
	}
}

func TestTrainingExportRefusesItemsOfAnEvaluationRun(t *testing.T) {
	gpqa := filepath.Join(benchmarkDir(t), "gpqa_formatted.jsonl")
	dir := t.TempDir()
	code, out, errs := budge(t, "framing", "run", "--dir", dir, "--quiet", "--resamples", "100", "--data", gpqa, "--sample", "30")
	if code != ExitOK {
		t.Fatalf("framing run exit %d: %s", code, errs)
	}
	m := runLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no run line:\n%s", out)
	}
	// The items are matched by content, so giving them new ids does not help.
	b, err := os.ReadFile(gpqa)
	if err != nil {
		t.Fatal(err)
	}
	renamed := filepath.Join(t.TempDir(), "renamed.jsonl")
	if err := os.WriteFile(renamed, []byte(strings.ReplaceAll(string(b), `"id": "gpqa`, `"id": "renamed-gpqa`)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = budge(t, "framing", "export-training", renamed, "--format", "dpo", "--dir", dir, "--test-fraction", "0")
	if code != ExitOK || !strings.Contains(errs, "30 evaluated in a stored run") {
		t.Fatalf("export exit %d: %s", code, errs)
	}
	if n := len(readTraining(t, out)); n != 2*(134-30) {
		t.Errorf("%d dpo records, want %d: %s", n, 2*(134-30), errs)
	}
	code, out, errs = budge(t, "framing", "export-training", m[1], "--format", "sft", "--dir", dir)
	if code != ExitOK || strings.TrimSpace(out) != "" || !strings.Contains(errs, "withheld 30 of 30") {
		t.Errorf("export of the run itself (exit %d) wrote %q: %s", code, out, errs)
	}
}

func TestTrainingExportRefusesTruthfulQAWithoutOverride(t *testing.T) {
	tqa := filepath.Join(benchmarkDir(t), "truthfulqa_formatted.jsonl")
	code, out, errs := budge(t, "framing", "export-training", tqa, "--format", "sft", "--dir", t.TempDir())
	if code != ExitOK || strings.TrimSpace(out) != "" || !strings.Contains(errs, "790 of an evaluation-only data set (truthfulqa)") {
		t.Errorf("truthfulqa without override (exit %d) wrote %d bytes: %s", code, len(out), errs)
	}
	code, out, errs = budge(t, "framing", "export-training", tqa, "--format", "sft", "--dir", t.TempDir(), "--allow-eval-datasets", "truthfulqa", "--test-fraction", "0")
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
