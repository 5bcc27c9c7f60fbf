package dataset

import (
	"strings"
	"testing"
)

func TestUnifiedCarriesDeclaredSplit(t *testing.T) {
	in := `{"id": "a", "dataset": "p", "question": "q", "correct_answers": ["c"], "incorrect_answers": ["i"], "meta": {"split": "test"}}
{"id": "b", "dataset": "p", "question": "q", "correct_answers": ["c"], "incorrect_answers": ["i"], "meta": {"split": "train"}}
{"id": "c", "dataset": "p", "question": "q", "correct_answers": ["c"], "incorrect_answers": ["i"], "meta": {"split": "all"}}
{"id": "d", "dataset": "p", "question": "q", "correct_answers": ["c"], "incorrect_answers": ["i"]}
`
	items, err := ReadUnified("u.jsonl", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"test", "train", "", ""}
	for i, it := range items {
		if it.Split != want[i] {
			t.Errorf("item %s: split %q, want %q", it.ID, it.Split, want[i])
		}
	}
}
