package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Two runs whose data files reuse ids for different questions (as
// TruthfulQA's two versions do) are compared by content: a reused id is
// warned about and not compared, the same question under another id is.
func TestFramingAgreementMatchesByContent(t *testing.T) {
	dir, data := t.TempDir(), t.TempDir()
	a := `{"id": "truthfulqa-1", "domain": "tq", "question": "What color is the sky on a clear day?", "correct": "Blue", "incorrect": "Green"}
{"id": "truthfulqa-2", "domain": "tq", "question": "How many days are in a week?", "correct": "Seven", "incorrect": "Ten"}
{"id": "truthfulqa-3", "domain": "tq", "question": "What do bees make?", "correct": "Honey", "incorrect": "Milk"}
`
	b := `{"id": "truthfulqa-1", "domain": "tq", "question": "What color is the sky on a clear day?", "correct": "Blue", "incorrect": "Green"}
{"id": "truthfulqa-2", "domain": "tq", "question": "What is the boiling point of water at sea level?", "correct": "100 °C", "incorrect": "50 °C"}
{"id": "truthfulqa-9", "domain": "tq", "question": "What do bees make?", "correct": "Honey", "incorrect": "Milk"}
`
	for name, text := range map[string]string{"a.jsonl": a, "b.jsonl": b} {
		if err := os.WriteFile(filepath.Join(data, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var ids []string
	for _, f := range []string{"a.jsonl", "b.jsonl"} {
		code, out, errs := budge(t, "framing", "run", "--dir", dir, "--quiet", "--resamples", "50", "--data", filepath.Join(data, f))
		m := runLine.FindStringSubmatch(out)
		// A handful of items is too few to measure a judge (exit 6); the
		// runs still hold what agreement compares.
		if (code != ExitOK && code != ExitUnmeasured) || m == nil {
			t.Fatalf("run %s: exit %d\n%s\n%s", f, code, out, errs)
		}
		ids = append(ids, m[1])
	}
	code, out, errs := budge(t, "framing", "report", ids[0], ids[1], "--dir", dir, "--format", "json")
	if code != ExitOK {
		t.Fatalf("report exit %d: %s", code, errs)
	}
	var rep struct {
		Agreement struct {
			Matched     int      `json:"matched_items"`
			Unmatched   []int    `json:"unmatched_items"`
			IDConflicts int      `json:"id_conflicts"`
			Warnings    []string `json:"warnings"`
			All         struct{ Items int }
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	ag := rep.Agreement
	if ag.Matched != 2 || len(ag.Unmatched) != 2 || ag.Unmatched[0] != 1 || ag.Unmatched[1] != 1 || ag.All.Items != 2 {
		t.Errorf("matched %d, unmatched %v, compared %d; want 2, [1 1], 2", ag.Matched, ag.Unmatched, ag.All.Items)
	}
	if ag.IDConflicts != 1 || len(ag.Warnings) != 1 || !strings.Contains(ag.Warnings[0], `id "truthfulqa-2" names different items`) {
		t.Errorf("id conflicts %d, warnings %q", ag.IDConflicts, ag.Warnings)
	}
	_, out, _ = budge(t, "framing", "report", ids[0], ids[1], "--dir", dir)
	for _, want := range []string{"items matched by content (question, both answers, context, dialogue), not by id: 2 in every run; unmatched: 1 in", "warning: id \"truthfulqa-2\""} {
		if !strings.Contains(unwrapped(out), want) {
			t.Errorf("text report lacks %q:\n%s", want, out)
		}
	}
}
