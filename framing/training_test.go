package framing

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAnswerOnlyReplacesTheJSONInstruction(t *testing.T) {
	tmpls := []*Templates{DefaultTemplates()}
	if paper, err := OpenTemplates(filepath.Join("..", "..", "shared", "data", "dialdefer", "prompts")); err == nil {
		tmpls = append(tmpls, paper)
	} else if _, statErr := os.Stat(filepath.Join("..", "..", "shared", "data")); statErr == nil {
		t.Fatalf("paper templates: %v", err)
	}
	it := Item{ID: "x", Domain: "d", Question: "Is JSON a format? Give your reasoning.", Correct: "yes", Incorrect: "no"}
	for _, tm := range tmpls {
		user, err := tm.Prompt(C2Correct, &it, DefaultLabels())
		if err != nil {
			t.Fatal(err)
		}
		got, err := AnswerOnly(user, tm.Dialogue)
		if err != nil {
			t.Fatalf("%s: %v", tm.Name, err)
		}
		if strings.Contains(got, "JSON object") || strings.Contains(got, "write your reasoning") || !strings.HasSuffix(got, "\n"+OneToken) || !strings.Contains(got, it.Question) {
			t.Errorf("%s: answer-only prompt:\n%s", tm.Name, got)
		}
	}
	if _, err := AnswerOnly("Choose 1 or 2.", "Choose 1 or 2."); err == nil {
		t.Error("a template without a JSON instruction should be an error")
	}
}

func TestTrainingRecordsWithholdPerReason(t *testing.T) {
	d := Design{Templates: []*Templates{DefaultTemplates()}, Labels: []LabelSet{DefaultLabels()}}
	items := []Item{
		{ID: "a", Domain: "gpqa", Question: "q1", Correct: "c", Incorrect: "i", Split: "train"},
		{ID: "b", Domain: "gpqa", Question: "q2", Correct: "c", Incorrect: "i", Split: "test"},
		{ID: "c", Domain: "truthfulqa", Question: "q3", Correct: "c", Incorrect: "i", Split: "train"},
		{ID: "d", Domain: "gpqa", Question: "q4", Correct: "c", Incorrect: "i", Split: "train"},
	}
	ev := map[string]string{ContentKey(Item{ID: "other-id", Question: "q4", Correct: "c", Incorrect: "i"}): "run1"}
	recs, w, err := TrainingRecords(&d, items, TrainingOptions{Format: FormatSFT, Evaluated: ev})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].ID != "a" || w.Total() != 3 || w[ReasonTestSplit] != 1 || w[ReasonEvaluated] != 1 {
		t.Errorf("records %d, withheld %v", len(recs), w)
	}
	recs, _, _ = TrainingRecords(&d, items, TrainingOptions{Format: FormatSFT, AllowEval: []string{EvalTruthfulQA}})
	if len(recs) != 6 {
		t.Errorf("with truthfulqa allowed: %d records, want 6", len(recs))
	}
}
