package framing

import (
	"strings"
	"testing"
)

func TestParseAnswer(t *testing.T) {
	cases := []struct {
		name, reply string
		choice      string
		recovered   []string
		reasoning   string
	}{
		{"strict", `{"chosen_answer": "1", "reasoning": "Right."}`, "1", nil, "Right."},
		{"strict with spaces", "\n  {\n  \"chosen_answer\": \"2\",\n  \"reasoning\": \"No.\"\n}\n", "2", nil, "No."},
		{"fenced", "```json\n{\"chosen_answer\": \"2\", \"reasoning\": \"x\"}\n```", "2", []string{RecoverFenced}, "x"},
		{"trailing text", `{"chosen_answer": "1", "reasoning": "ok"} Hope this helps!`, "1", []string{RecoverSurrounding}, "ok"},
		{"leading text", `Here you go: {"chosen_answer": "2", "reasoning": "ok"}`, "2", []string{RecoverSurrounding}, "ok"},
		{"single quotes", `{'chosen_answer': '1', 'reasoning': 'it\'s fine, "really"'}`, "1", []string{RecoverSingleQuotes}, `it's fine, "really"`},
		{"latex escapes", `{"chosen_answer": "2", "reasoning": "since \(x^2\) and \sqrt{2} differ"}`, "2", []string{RecoverInvalidEscape}, `since \(x^2\) and \sqrt{2} differ`},
		{"number", `{"chosen_answer": 1, "reasoning": "r"}`, "1", []string{RecoverNumber}, "r"},
		{"unescaped quotes", `{"chosen_answer": "2", "reasoning": "the answer should be "Yes" but it is not"}`, "2", []string{RecoverField}, ""},
		{"truncated", `{"chosen_answer": "1", "reasoning": "The statement is correct because the first`, "1", []string{RecoverField}, ""},
		{"bare", " 2 ", "2", []string{RecoverBare}, ""},
		{"key alias", `{"answer": "1"}`, "1", []string{RecoverKeyVariant}, ""},
		{"misspelled key", `{"chosen_anwser": "2", "reasoning": "r"}`, "2", []string{RecoverKeyVariant}, "r"},
		{"answer label", "Answer: 2", "2", []string{RecoverTextLabel}, ""},
		{"option named", "Option 1", "1", []string{RecoverTextOption}, ""},
		{"not 1 but 2", "Not 1 but 2.", "2", []string{RecoverTextOption}, ""},
		{"polarity", "No, the statement is incorrect.", "2", []string{RecoverTextPolarity}, ""},
		{"yes in the field", `{"chosen_answer": "yes", "reasoning": "r"}`, "1", []string{RecoverFieldText}, "r"},
		{"full-width punctuation", `｛＂chosen_answer＂：＂１＂，＂reasoning＂：＂r＂｝`, "1", []string{RecoverFullWidth, RecoverFieldText}, "r"},
		{"Chinese label", "答案：2", "2", []string{RecoverTextLabel}, ""},
		{"reworded repeat", `{"chosen_answer": "2", "reasoning": "a"} {"chosen_answer": "2", "reasoning": "b"}`, "2", []string{RecoverRepeated}, "a"},
		{"fenced and escaped", "```\n{\"chosen_answer\": \"1\", \"reasoning\": \"\\(a\\)\"}\n```", "1", []string{RecoverFenced, RecoverInvalidEscape}, `\(a\)`},
	}
	for _, c := range cases {
		a := ParseAnswer(c.reply, true)
		if a.Choice != c.choice || strings.Join(a.Recovered, ",") != strings.Join(c.recovered, ",") {
			t.Errorf("%s: choice %q recovered %v (%s), want %q %v", c.name, a.Choice, a.Recovered, a.Problem, c.choice, c.recovered)
		}
		if c.reasoning != "" && a.Reasoning != c.reasoning {
			t.Errorf("%s: reasoning %q, want %q", c.name, a.Reasoning, c.reasoning)
		}
		strict := ParseAnswer(c.reply, false)
		if len(c.recovered) == 0 && strict.Choice != c.choice {
			t.Errorf("%s: strict parsing refused a valid answer: %s", c.name, strict.Problem)
		}
		if len(c.recovered) > 0 && (strict.Parsed() || !strings.Contains(strict.Problem, c.recovered[0])) {
			t.Errorf("%s: strict parsing gave %q (%s), want unparseable naming %s", c.name, strict.Choice, strict.Problem, c.recovered[0])
		}
	}
}

func TestParseAnswerUnparseable(t *testing.T) {
	for _, reply := range []string{
		"",
		"I think Speaker 2 is probably right.",
		`{"chosen_answer": "3", "reasoning": "neither"}`,
		`{"chosen_answer": ["1", "2"], "reasoning": "both"}`,
		`{"chosen_answer": "1", "reasoning": "x"}` + "\nAnswer: 2",
		"The question mentions 2 cities and 1 river.",
		"Answer: 1. On reflection, answer: 2.",
		`{"chosen_answer": "", "reasoning": "unsure"}`,
		"1 or 2, hard to say",
	} {
		if a := ParseAnswer(reply, true); a.Parsed() || a.Problem == "" {
			t.Errorf("ParseAnswer(%q) = %q (%s), want unparseable with a reason", reply, a.Choice, a.Problem)
		}
	}
}

// The shared extraction's rules hold in framing too: a reasoning block never
// supplies the answer, two answers that disagree and a key repeated after
// case-folding are unparseable (never first-wins or last-wins).
func TestParseAnswerSharedExtraction(t *testing.T) {
	cases := []struct {
		name, reply, choice string
		recovered           []string
	}{
		{"think block", `<think>{"chosen_answer": "2", "reasoning": "no"}</think>{"chosen_answer": "1", "reasoning": "yes"}`, "1", []string{RecoverReasoning}},
		{"fence in prose", "Sure.\n```json\n{\"chosen_answer\": \"2\", \"reasoning\": \"x\"}\n```\nDone.", "2", []string{RecoverFenced, RecoverSurrounding}},
		{"same answer twice", `{"chosen_answer": "2", "reasoning": "x"} {"chosen_answer": "2", "reasoning": "x"}`, "2", []string{RecoverDuplicate}},
		{"bold", `**{"chosen_answer": "1", "reasoning": "x"}**`, "1", []string{RecoverBold}},
		{"two that disagree", `{"chosen_answer": "1", "reasoning": "x"} or {"chosen_answer": "2", "reasoning": "y"}`, "", nil},
		{"duplicate key", `{"chosen_answer": "1", "Chosen_Answer": "2", "reasoning": "x"}`, "", nil},
		{"unterminated think", `<think>{"chosen_answer": "1", "reasoning": "x"}`, "", nil},
	}
	for _, c := range cases {
		a := ParseAnswer(c.reply, true)
		if a.Choice != c.choice || (c.choice != "" && strings.Join(a.Recovered, ",") != strings.Join(c.recovered, ",")) {
			t.Errorf("%s: choice %q recovered %v (%s), want %q %v", c.name, a.Choice, a.Recovered, a.Problem, c.choice, c.recovered)
		}
		if c.choice == "" && a.Problem == "" {
			t.Errorf("%s: unparseable without a reason", c.name)
		}
	}
	if a := ParseAnswer("  ", true); !a.Empty || a.Parsed() {
		t.Errorf("an empty reply: %+v", a)
	}
	for _, reply := range []string{"I can't judge this conversation.", "抱歉，我无法判断。"} {
		if a := ParseAnswer(reply, true); !a.Declined || a.Parsed() {
			t.Errorf("%q: not read as a decline: %+v", reply, a)
		}
	}
	if a := ParseAnswer(`<think>I can't tell</think> 1 or 2, hard to say`, true); a.Declined {
		t.Errorf("a decline inside a reasoning block made a refusal: %+v", a)
	}
}
