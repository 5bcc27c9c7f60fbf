package framing

import "testing"

func TestContentKey(t *testing.T) {
	q := Item{ID: "a", Question: "What do bees make?", Correct: "Honey", Incorrect: "Milk"}
	same := q
	same.ID = "b"
	other := q
	other.Incorrect = "Wax"
	d1 := Item{ID: "c1", Dialogue: &Dialogue{Transcript: "A: hi\nB: no", About: "A", Label: "OR"}}
	d2 := Item{ID: "c2", Dialogue: &Dialogue{Transcript: "A: hello\nB: no", About: "A", Label: "OR"}}
	if ContentKey(q) != ContentKey(same) {
		t.Error("the same content under two ids has two keys")
	}
	if ContentKey(q) == ContentKey(other) {
		t.Error("different answers share a key")
	}
	// Naturalistic items have no question or answers: their dialogue
	// tells them apart.
	if ContentKey(d1) == ContentKey(d2) {
		t.Error("two dialogues share a key")
	}
	// Lengths are hashed with the parts, so moving text between fields
	// changes the key.
	if ContentKey(Item{Question: "ab", Correct: "c"}) == ContentKey(Item{Question: "a", Correct: "bc"}) {
		t.Error("field boundaries are not part of the key")
	}
}
