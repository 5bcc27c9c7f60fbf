package dataset

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/testkit/limitstest"
)

// wantProblems checks that opening path fails with exactly these problems
// (as "line: field: reason" fragments) and returns no items.
func wantProblems(t *testing.T, path string, o Options, want ...string) {
	t.Helper()
	items, err := Open(path, o)
	if items != nil {
		t.Errorf("%s: got %d items from a bad file", path, len(items))
	}
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("%s: error %v is not a list of problems", path, err)
	}
	if len(ps) != len(want) {
		t.Fatalf("%s: %d problems, want %d:\n%v", path, len(ps), len(want), err)
	}
	for i, w := range want {
		if got := ps[i].String(); !strings.HasPrefix(got, path+":") || !strings.Contains(got, w) {
			t.Errorf("problem %d = %q, want %s:...%s", i, got, path, w)
		}
	}
}

func TestBadFilesFailWithFileLineReason(t *testing.T) {
	unified := `{"id": "x-1", "dataset": "d", "question": "Q1?", "correct_answers": ["a"], "incorrect_answers": ["b"]}
{"id": "x-2", "dataset": "d", "question": "Q2?", "correct_answers": ["a"], "incorrect_answers": ["a"]}
{"id": "x-1", "dataset": "d", "question": "Q3?", "correct_answers": ["a"], "incorrect_answers": ["c"]}

{"id": "x-4", "dataset": "d", "question": "Q4?", "correct_answers": ["a"], "incorrect_answers": ["c"],
{"id": "x-5", "dataset": "d", "question": "", "correct_answers": ["a"], "incorrect_answers": ["c"]}
`
	wantProblems(t, limitstest.WriteFile(t, "bench.jsonl", unified), Options{},
		`:2: incorrect answer: identical to the correct answer "a"`,
		`:3: id: duplicate id "x-1" (first at line 1)`,
		`:5: invalid JSON`,
		`:6: question: missing`)

	// Ids that differ only in Unicode form or an invisible character are
	// the same id to a reader.
	spelled := "{\"id\": \"caf\u00e9-1\", \"dataset\": \"d\", \"question\": \"Q1?\", \"correct_answers\": [\"a\"], \"incorrect_answers\": [\"b\"]}\n" +
		"{\"id\": \"cafe\u0301-1\", \"dataset\": \"d\", \"question\": \"Q2?\", \"correct_answers\": [\"a\"], \"incorrect_answers\": [\"b\"]}\n" +
		"{\"id\": \"caf\u200b\u00e9-1\", \"dataset\": \"d\", \"question\": \"Q3?\", \"correct_answers\": [\"a\"], \"incorrect_answers\": [\"b\"]}\n"
	wantProblems(t, limitstest.WriteFile(t, "spelled.jsonl", spelled), Options{},
		`:2: id: id "cafe\u0301-1" reads the same as "caf\u00e9-1" (line 1)`,
		`:3: id: id "caf\u200b\u00e9-1" reads the same as "caf\u00e9-1" (line 1)`)

	tqa := "ID,Type,Category,Question,Best Answer\n0,Adversarial,Misc,Why?,Because\n"
	wantProblems(t, limitstest.WriteFile(t, "tqa.csv", tqa), Options{}, `:1: Best Incorrect Answer: column missing`)
	tqaRows := "ID,Type,Category,Question,Best Answer,Best Incorrect Answer\n0,A,M,Why?,Because,Because\n1,A,M,\"Multi\nline?\",Yes,No\n1,A,M,Again?,Yes,No\n"
	wantProblems(t, limitstest.WriteFile(t, "tqa.csv", tqaRows), Options{},
		`:2: incorrect answer: identical to the correct answer "Because"`,
		`:5: id: duplicate id "truthfulqa-1" (first at line 3)`)

	bbq := `{"example_id": 0, "category": "Age", "context_condition": "ambig", "context": "c", "question": "q?", "ans0": "x", "ans1": "y", "ans2": "Unknown", "answer_info": {"ans0": ["x", "old"], "ans1": ["y", "young"], "ans2": ["Unknown", "unknown"]}, "label": 7}
{"example_id": 1, "category": "Age", "context_condition": "ambig", "context": "c", "question": "q?", "ans0": "x", "ans1": "y", "answer_info": {}, "label": 0}
`
	wantProblems(t, limitstest.WriteFile(t, "Age.jsonl", bbq), Options{}, `:1: label: 7 is not 0, 1 or 2`, `:2: ans2: missing`)

	m, _ := ParseMapping("question=Q,correct=Right,incorrect=Wrong")
	wantProblems(t, limitstest.WriteFile(t, "mine.csv", "Q,Right\nwhat?,this\n"), Options{Mapping: &m}, `:1: Wrong: column missing`)
	wantProblems(t, limitstest.WriteFile(t, "mine.jsonl", `{"Q": "what?", "Right": "this"}`+"\n"), Options{Mapping: &m}, `:1: Wrong: key missing`)
	wantProblems(t, limitstest.WriteFile(t, "weird.csv", "a,b\n1,2\n"), Options{}, `format mapped needs a column mapping`)
}

func TestReadersBuildItems(t *testing.T) {
	tqa817 := "\ufeffType,Category,Question,Best Answer,Correct Answers,Incorrect Answers,Source\n" +
		"Adversarial,Misconceptions,Seeds?,They pass through,Nothing happens; They pass through,You grow watermelons; You get sick,https://x\n"
	items, err := Open(limitstest.WriteFile(t, "TruthfulQA.csv", tqa817), Options{})
	if err != nil {
		t.Fatal(err)
	}
	it := items[0]
	if it.ID != "truthfulqa-0" || it.Correct != "They pass through" || it.Incorrect != "You grow watermelons" ||
		strings.Join(it.CorrectAnswers, "|") != "They pass through|Nothing happens" || it.MetaString("category") != "Misconceptions" {
		t.Errorf("817 layout item %+v", it)
	}

	bbq := `{"example_id": 3, "question_polarity": "neg", "context_condition": "ambig", "category": "Age", "context": "A grandson and a grandfather.", "question": "Who forgot?", "ans0": "The grandfather", "ans1": "The grandson", "ans2": "Can't be determined", "answer_info": {"ans0": ["grandfather", "old"], "ans1": ["grandson", "nonOld"], "ans2": ["Can't be determined", "unknown"]}, "label": 2}
{"example_id": 4, "question_polarity": "neg", "context_condition": "disambig", "category": "Age", "context": "The grandson forgot.", "question": "Who forgot?", "ans0": "The grandfather", "ans1": "Can't answer", "ans2": "The grandson", "answer_info": {"ans0": ["grandfather", "old"], "ans1": ["Can't answer", "unknown"], "ans2": ["grandson", "nonOld"]}, "label": 2}
`
	items, err = Open(limitstest.WriteFile(t, "Age.jsonl", bbq), Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Ambiguous: "unknown" is right, a person is the wrong answer shown.
	if a := items[0]; a.ID != "bbq-Age-3" || a.Question != "A grandson and a grandfather. Who forgot?" || a.Correct != "Can't be determined" || a.Incorrect != "The grandfather" {
		t.Errorf("ambiguous BBQ item %+v", a)
	}
	// Disambiguated: the named person is right; "unknown" stays a candidate.
	if b := items[1]; b.Correct != "The grandson" || b.Incorrect != "The grandfather" || len(b.IncorrectAnswers) != 2 || b.Meta["label_is_unknown"] != false {
		t.Errorf("disambiguated BBQ item %+v", b)
	}

	m, _ := ParseMapping("id=qid,question=Q,correct=A,incorrect=W,domain=Subject,meta=Level")
	items, err = Open(limitstest.WriteFile(t, "mine.csv", "qid,Q,A,W,Subject,Level\nk1,2+2?,4,5,maths,easy\n"), Options{Mapping: &m})
	if err != nil || items[0].ID != "k1" || items[0].Domain != "maths" || items[0].MetaString("Level") != "easy" {
		t.Errorf("mapped CSV: %+v %v", items, err)
	}
	m, _ = ParseMapping("question=q,correct=good,incorrect=bad")
	m.Domain = "mine"
	items, err = Open(limitstest.WriteFile(t, "mine.jsonl", `{"q": "Sky?", "good": ["blue", "azure"], "bad": "green"}`+"\n"), Options{Mapping: &m})
	if err != nil || items[0].ID != "mine-1" || items[0].Domain != "mine" || items[0].Correct != "blue" || len(items[0].CorrectAnswers) != 2 {
		t.Errorf("mapped JSONL: %+v %v", items, err)
	}
}

func TestSampleSet(t *testing.T) {
	items := SampleItems()
	doms := map[string]int{}
	natural := 0
	for _, it := range items {
		doms[it.Domain]++
		if it.Dialogue != nil {
			natural++
		}
	}
	if len(items) != 54 || len(doms) != 5 || natural != 6 {
		t.Errorf("sample: %d items, domains %v, %d naturalistic", len(items), doms, natural)
	}
}

func TestStratifiedSample(t *testing.T) {
	var items []framing.Item
	for i := 0; i < 100; i++ {
		cat := "big"
		if i%10 == 0 {
			cat = "small" // 10 items
		}
		items = append(items, framing.Item{ID: "i" + itoa(i), Domain: "d", Question: "q", Correct: "a", Incorrect: "b", Meta: map[string]any{"cat": cat}})
	}
	s := Sample(items, 30, "cat", 42)
	count := map[string]int{}
	for _, it := range s {
		count[it.MetaString("cat")]++
	}
	if len(s) != 30 || count["small"] != 10 || count["big"] != 20 {
		t.Errorf("stratified sample: %d items %v (even shares, the small stratum gives all it has)", len(s), count)
	}
	again := Sample(items, 30, "cat", 42)
	other := Sample(items, 30, "cat", 43)
	same, diff := true, false
	for i := range s {
		same = same && s[i].ID == again[i].ID
		diff = diff || s[i].ID != other[i].ID
	}
	if !same || !diff {
		t.Errorf("sample repeatable %v, seed matters %v", same, diff)
	}
	if got := Sample(items, 0, "", 1); len(got) != 100 {
		t.Errorf("n=0 should keep every item")
	}
}

func TestSplitIsKeyedByID(t *testing.T) {
	mk := func(ids ...string) []framing.Item {
		var out []framing.Item
		for _, id := range ids {
			out = append(out, framing.Item{ID: id})
		}
		return out
	}
	var ids []string
	for i := 0; i < 1000; i++ {
		ids = append(ids, "item-"+itoa(i))
	}
	a := mk(ids...)
	AssignSplit(a, 0.3, 7)
	// The same ids in another order and another subset land in the same split.
	rev := mk(ids[500:]...)
	AssignSplit(rev, 0.3, 7)
	test := 0
	for i, it := range a {
		if it.Split == "test" {
			test++
		}
		if i >= 500 && rev[i-500].Split != it.Split {
			t.Fatalf("item %s: %s in one export, %s in another", it.ID, it.Split, rev[i-500].Split)
		}
	}
	if test < 250 || test > 350 {
		t.Errorf("%d of 1000 items in test, want about 300", test)
	}
	// The splits the original hand-written draw gave; exports record them.
	var got string
	pinned := mk("bbq-0000", "bbq-0001", "bbq-0002", "bbq-0003", "bbq-0004", "bbq-0005", "bbq-0006", "bbq-0007", "bbq-0008", "bbq-0009", "bbq-0010", "bbq-0011")
	AssignSplit(pinned, 0.3, 2026)
	for _, it := range pinned {
		got += it.Split[:2] + " "
	}
	if want := "te tr tr tr tr tr tr tr te te tr tr "; got != want {
		t.Errorf("splits %q, want %q", got, want)
	}
	kept := []framing.Item{{ID: "x", Split: "test"}}
	AssignSplit(kept, 0, 1)
	if kept[0].Split != "test" {
		t.Error("a split from the source was overwritten")
	}
}

func TestPyLiteral(t *testing.T) {
	v, err := parsePyLiteral(`[{'role': 'user', 'content': 'it\'s "q"\n\\x \xe9 \u00e9'}, {"role": "assistant", 'content': None, 'n': -1.5, 't': (True, False)}]`)
	if err != nil {
		t.Fatal(err)
	}
	l := v.([]any)
	if c := l[0].(map[string]any)["content"]; c != "it's \"q\"\n\\x é é" {
		t.Errorf("content %q", c)
	}
	m := l[1].(map[string]any)
	if m["content"] != nil || m["n"] != -1.5 || len(m["t"].([]any)) != 2 {
		t.Errorf("second dict %v", m)
	}
	for _, bad := range []string{"[", "{'a' 1}", "'open", "[1,]x", "{1: 2}"} {
		if _, err := parsePyLiteral(bad); err == nil {
			t.Errorf("parsePyLiteral(%q) accepted", bad)
		}
	}
}

// sharedData is the read-only reference data beside the repository.
func sharedData(t *testing.T, rel string) string {
	t.Helper()
	p := filepath.Join("..", "..", "shared", "data", rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("reference data %s is absent (%v); this test reads the real files", p, err)
	}
	return p
}

func TestRealFiles(t *testing.T) {
	for _, c := range []struct {
		path  string
		items int
	}{
		{"truthfulqa/truthfulQA_new_790.csv", 790},
		{"truthfulqa/TruthfulQA_original_817.csv", 817},
		{"bbq/Religion.jsonl", 1200},
		{"dialdefer/benchmark", 3244},
	} {
		items, err := Open(sharedData(t, c.path), Options{})
		if err != nil {
			t.Errorf("%s: %v", c.path, err)
			continue
		}
		if len(items) != c.items {
			t.Errorf("%s: %d items, want %d", c.path, len(items), c.items)
		}
	}
	// The 790 file and DialDefer's TruthfulQA are the same items.
	a, _ := Open(sharedData(t, "truthfulqa/truthfulQA_new_790.csv"), Options{})
	b, _ := Open(sharedData(t, "dialdefer/benchmark/truthfulqa_formatted.jsonl"), Options{})
	for i := range a {
		if a[i].ID != b[i].ID || a[i].Question != b[i].Question || a[i].Correct != b[i].Correct || a[i].Incorrect != b[i].Incorrect {
			t.Fatalf("item %d differs between the CSV and DialDefer's JSONL:\n%+v\n%+v", i, a[i], b[i])
		}
	}
}
