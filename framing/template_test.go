package framing_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/buildlab/budge/dataset"
	"github.com/buildlab/budge/framing"
)

var trickyItems = []framing.Item{
	{ID: "plain", Domain: "d", Question: "What is 2 + 2?", Correct: "4", Incorrect: "5"},
	{ID: "quotes", Domain: "d", Question: `Who said "it's 'fine'"?` + "\nSecond line.", Correct: "Ann's \"friend\"", Incorrect: "Bob"},
	{ID: "braces", Domain: "d", Question: "Is {answer} a placeholder or {speaker2}?", Correct: "It is text: {question}", Incorrect: "$\\frac{1}{2}$"},
	{ID: "unicode", Domain: "d", Question: "Что такое «кот»? 猫", Correct: "Кошка 🐈", Incorrect: "Собака"},
}

// C1 and C2 of the same content must carry byte-identical question and
// answer text; only the framing around them differs.
func TestConditionsCarryIdenticalText(t *testing.T) {
	for _, name := range framing.BuiltinTemplateNames() {
		tm, err := framing.OpenTemplates(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range trickyItems {
			for _, c := range framing.Conditions {
				p, err := tm.Prompt(c, &it, framing.DefaultLabels())
				if err != nil {
					t.Fatal(err)
				}
				// The same prompt with sentinels in place of the item's text,
				// then the text put back: equal only if the question and
				// answer went in verbatim, in placeholder slots only.
				const sq, sa = "\x00Q\x00", "\x00A\x00"
				probe := it
				probe.Question, probe.Correct, probe.Incorrect = sq, sa, sa
				p2, _ := tm.Prompt(c, &probe, framing.DefaultLabels())
				want := it.Incorrect
				if c.AnswerCorrect() {
					want = it.Correct
				}
				if strings.Count(p2, sq) < 1 || strings.Count(p2, sa) != 1 {
					t.Errorf("%s %s: question or answer slot missing or repeated", name, c)
				}
				if back := strings.NewReplacer(sq, it.Question, sa, want).Replace(p2); back != p {
					t.Errorf("%s %s %s: the item's text was altered when rendered:\n%s", name, it.ID, c, p)
				}
				if c.Dialogue() != strings.Contains(p, "Speaker 2") {
					t.Errorf("%s %s: speaker label present = %v", name, c, !c.Dialogue())
				}
			}
		}
	}
}

func TestRenderDoesNotExpandInsertedText(t *testing.T) {
	it := trickyItems[2]
	p, _ := framing.DefaultTemplates().Prompt(framing.C2Correct, &it, framing.LabelSet{Name: "x", Speaker1: "A", Speaker2: "B"})
	if !strings.Contains(p, "Is {answer} a placeholder or {speaker2}?") || !strings.Contains(p, "It is text: {question}") {
		t.Errorf("placeholders inside the item's text were expanded:\n%s", p)
	}
}

func TestOpenTemplatesReportsMissingPlaceholders(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, framing.StatementFile), []byte("Is '{question}' answered by it?\n"), 0o644)
	os.WriteFile(filepath.Join(dir, framing.DialogueFile), []byte("{speaker1}: {question}\n{speaker2}: {answer}\nIs {speaker2} right?"), 0o644)
	_, err := framing.OpenTemplates(dir)
	if err == nil || !strings.Contains(err.Error(), "c1_statement.tmpl: lacks the placeholder {answer}") {
		t.Errorf("error = %v, want it to name c1_statement.tmpl and {answer}", err)
	}
	if _, err := framing.OpenTemplates("no-such-set"); err == nil || !strings.Contains(err.Error(), "budge") {
		t.Errorf("unknown built-in set: %v", err)
	}
	if _, err := framing.OpenTemplates(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing directory opened")
	}
}

// The paper's own templates, read from the reference data, must render the
// exact prompts recorded in the paper's results (the replication test in
// experiment checks all 7,496; this checks one file directly).
func TestPaperTemplatesRenderRecordedPrompts(t *testing.T) {
	root := filepath.Join("..", "..", "shared", "data", "dialdefer")
	if _, err := os.Stat(root); err != nil {
		t.Skipf("reference data %s is absent: %v", root, err)
	}
	tm, err := framing.OpenTemplates(filepath.Join(root, "prompts"))
	if err != nil {
		t.Fatal(err)
	}
	// The quirks the README lists: C1 ends with a newline, C2 does not.
	if !strings.HasSuffix(tm.Statement, "\n") || strings.HasSuffix(tm.Dialogue, "\n") {
		t.Fatalf("template files were not read byte for byte")
	}
	dir := t.TempDir()
	src, _ := os.ReadFile(filepath.Join(root, "results", "gpt-4o-mini", "bbq_gpt-4o-mini_Speaker1_vs_Speaker2_all.jsonl"))
	os.WriteFile(filepath.Join(dir, "bbq.jsonl"), src, 0o644)
	files, err := dataset.ReadResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range files[0].Records {
		for c, a := range r.Answers {
			p, err := tm.Prompt(c, &r.Item, r.Labels)
			if err != nil {
				t.Fatal(err)
			}
			if p != a.Prompt {
				t.Fatalf("line %d %s: rendered prompt differs from the recorded one", r.Line, c)
			}
			n++
		}
	}
	if n != 1200 {
		t.Errorf("compared %d prompts, want 1200", n)
	}
}

func TestLabels(t *testing.T) {
	l, err := framing.ParseLabels("User/LLM")
	if err != nil || l.Speaker1 != "User" || l.Speaker2 != "LLM" {
		t.Errorf("ParseLabels(User/LLM) = %+v, %v", l, err)
	}
	if l, _ := framing.ParseLabels("mine=Ann/Bo"); l.Name != "mine" {
		t.Errorf("named label set = %+v", l)
	}
	for _, bad := range []string{"Ann", "Ann/Ann", "/B", "nonsense-set"} {
		if _, err := framing.ParseLabels(bad); err == nil {
			t.Errorf("ParseLabels(%q) accepted", bad)
		}
	}
}
