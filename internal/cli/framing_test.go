package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFramingRunReportExport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, out, errs := budge(t, "framing", "run", "--dir", dir, "--quiet", "--resamples", "300", "--labels", "speakers,user-llm")
	if code != ExitOK {
		t.Fatalf("framing run exit %d\n%s\n%s", code, out, errs)
	}
	m := runLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no run line:\n%s", out)
	}
	for _, want := range []string{"budge DialDefer framing report", "C1-True", "DDS", "mean of 5 domains", "conflicts by ground-truth label", "Arms"} {
		if !strings.Contains(out, want) {
			t.Errorf("framing run output lacks %q", want)
		}
	}
	// The generic report command renders framing runs too.
	code, out, errs = budge(t, "report", m[1], "--dir", dir, "--format", "json")
	if code != ExitOK {
		t.Fatalf("report exit %d: %s", code, errs)
	}
	var rep struct {
		Version  int `json:"report_version"`
		Measures struct {
			Arms []struct {
				Domains map[string]struct {
					Items    int `json:"items"`
					Accuracy map[string]struct {
						Num int `json:"numerator"`
						Den int `json:"denominator"`
					} `json:"accuracy"`
				} `json:"domains"`
			} `json:"arms"`
		} `json:"measures"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("report json: %v\n%s", err, out[:200])
	}
	if rep.Version != 1 || len(rep.Measures.Arms) != 2 || rep.Measures.Arms[0].Domains["arithmetic"].Accuracy["C1-True"].Den != 12 {
		t.Errorf("report json: %+v", rep)
	}

	// Two runs: each report, then item-level agreement.
	if code, _, errs := budge(t, "framing", "run", "--dir", dir, "--quiet", "--resamples", "100", "--model", "sim:neutral"); code != ExitOK {
		t.Fatalf("second run: %s", errs)
	}
	code, out, _ = budge(t, "framing", "report", m[1], "latest", "--dir", dir, "--format", "md")
	if code != ExitOK || !strings.Contains(out, "Item-level agreement across runs") || !strings.Contains(out, "| flip in all |") {
		t.Errorf("two-run report (exit %d):\n%s", code, out)
	}

	// Every item of a run was evaluated: none may become training data.
	path := filepath.Join(t.TempDir(), "dpo.jsonl")
	code, _, errs = budge(t, "framing", "export-training", m[1], "--dir", dir, "--format", "dpo", "--test-fraction", "0.5", "-o", path)
	if code != ExitOK || !strings.Contains(errs, "wrote 0 dpo records") || !strings.Contains(errs, "evaluated in a stored run") {
		t.Fatalf("export-training of an evaluated run (exit %d): %s", code, errs)
	}
	if b, _ := os.ReadFile(path); len(b) != 0 {
		t.Errorf("export-training of an evaluated run wrote:\n%s", b)
	}
}

func TestFramingBadInputExitsTwoAndWritesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(bad, []byte(`{"id": "a", "domain": "d", "question": "q", "correct": "x", "incorrect": "y"}`+"\n{not json\n"), 0o644)
	code, _, errs := budge(t, "framing", "run", "--dir", dir, "--quiet", "--data", bad)
	if code != ExitInvalid || !strings.Contains(errs, "bad.jsonl:2: invalid JSON") {
		t.Errorf("bad data: exit %d, stderr %s", code, errs)
	}
	if code, _, _ := budge(t, "runs", "--dir", dir); code != ExitOK {
		t.Errorf("runs exit %d", code)
	}
	if _, out, errs := budge(t, "runs", "--dir", dir); strings.Contains(out, "framing") || !strings.Contains(errs, "no runs") {
		t.Errorf("a run was stored from bad data: %s", out)
	}
	for _, args := range [][]string{
		{"framing"},
		{"framing", "nonsense"},
		{"framing", "run", "--labels", "Ann"},
		{"framing", "run", "--mitigation", "nonsense"},
		{"framing", "run", "--templates", "no-such-set"},
		{"framing", "run", "--unparseable", "maybe"},
		{"framing", "export-training", "sample", "--format", "csv"},
		{"framing", "import"},
	} {
		if code, _, _ := budge(t, append(args, "--dir", dir)...); code != ExitInvalid {
			t.Errorf("%v: exit %d, want %d", args, code, ExitInvalid)
		}
	}
}

func TestFramingImportReplicates(t *testing.T) {
	t.Parallel()
	results := filepath.Join("..", "..", "..", "shared", "data", "dialdefer", "results", "gpt-4o-mini")
	if _, err := os.Stat(results); err != nil {
		t.Skipf("reference data absent (%v); the replication itself is tested in study", err)
	}
	dir := t.TempDir()
	code, out, errs := budge(t, "framing", "import", results, "--dir", dir, "--resamples", "500")
	if code != ExitOK {
		t.Fatalf("import exit %d: %s", code, errs)
	}
	for _, want := range []string{"byte-identical to budge's rendering: 7496/7496", "recorded answer on 7496/7496 replies", "1120 answers came without their conversation", "aio by ground-truth label", "halueval_qa"} {
		if !strings.Contains(out, want) {
			t.Errorf("import report lacks %q", want)
		}
	}
	// A prompt that differs stops the import before anything is written.
	wrong := t.TempDir()
	os.WriteFile(filepath.Join(wrong, "c1_statement.tmpl"), []byte("Statement: '{question}' -> '{answer}'\n"), 0o644)
	os.WriteFile(filepath.Join(wrong, "c2_dialogue.tmpl"), []byte("{speaker1}: {question}\n{speaker2}: {answer}\nIs {speaker2} correct?"), 0o644)
	dir2 := t.TempDir()
	code, _, errs = budge(t, "framing", "import", results, "--dir", dir2, "--templates", wrong)
	if code != ExitInvalid || !strings.Contains(errs, "differ from budge's rendering") {
		t.Errorf("mismatched templates: exit %d: %s", code, errs)
	}
	if _, out, _ := budge(t, "runs", "--dir", dir2); strings.Contains(out, "framing") {
		t.Errorf("a run was stored despite mismatched prompts")
	}
}
