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
	// A record that declares no split (HaluEval's "all" is none) is
	// evaluation data by rule, marked as assumed.
	want := []string{"test", "train", "test", "test"}
	assumed := []bool{false, false, true, true}
	for i, it := range items {
		if it.Split != want[i] || it.SplitAssumed != assumed[i] {
			t.Errorf("item %s: split %q assumed %v, want %q %v", it.ID, it.Split, it.SplitAssumed, want[i], assumed[i])
		}
	}
}
