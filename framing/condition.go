package framing

// Condition is one of the four cases every item is presented in: a framing
// (statement C1 or dialogue C2) crossed with the correctness of the answer
// shown.
type Condition string

const (
	C1True      Condition = "C1-True"      // statement with the correct answer: should be accepted
	C1False     Condition = "C1-False"     // statement with the incorrect answer: should be rejected
	C2Correct   Condition = "C2-Correct"   // a speaker gives the correct answer: should be accepted
	C2Incorrect Condition = "C2-Incorrect" // a speaker gives the incorrect answer: should be rejected
)

// Conditions lists the four in report order.
var Conditions = []Condition{C1True, C1False, C2Correct, C2Incorrect}

// Valid reports whether c is one of the four conditions.
func (c Condition) Valid() bool {
	switch c {
	case C1True, C1False, C2Correct, C2Incorrect:
		return true
	}
	return false
}

// Dialogue reports whether the condition frames the answer as a speaker's.
func (c Condition) Dialogue() bool { return c == C2Correct || c == C2Incorrect }

// AnswerCorrect reports whether the answer shown is the correct one.
func (c Condition) AnswerCorrect() bool { return c == C1True || c == C2Correct }

// Expected is the option a right judgment chooses: "1" (accept: the
// statement or speaker is correct) when the answer shown is correct, "2"
// (reject) otherwise.
func (c Condition) Expected() string {
	if c.AnswerCorrect() {
		return "1"
	}
	return "2"
}

// Pair is the condition with the same content in the other framing
// (C1-True ↔ C2-Correct, C1-False ↔ C2-Incorrect).
func (c Condition) Pair() Condition {
	switch c {
	case C1True:
		return C2Correct
	case C2Correct:
		return C1True
	case C1False:
		return C2Incorrect
	}
	return C1False
}

// PaperKey is the name the DialDefer release uses for the condition.
func (c Condition) PaperKey() string {
	switch c {
	case C1True:
		return "c1_true_statement"
	case C1False:
		return "c1_false_statement"
	case C2Correct:
		return "c2_correct_chat"
	}
	return "c2_incorrect_chat"
}
