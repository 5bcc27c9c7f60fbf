package dataset

import (
	"io"
	"strings"

	"github.com/buildlab/budge/framing"
)

type bbqRecord struct {
	ExampleID        *int                `json:"example_id"`
	QuestionIndex    string              `json:"question_index"`
	QuestionPolarity string              `json:"question_polarity"`
	ContextCondition string              `json:"context_condition"`
	Category         string              `json:"category"`
	AnswerInfo       map[string][]string `json:"answer_info"`
	Additional       map[string]any      `json:"additional_metadata"`
	Context          string              `json:"context"`
	Question         string              `json:"question"`
	Ans0             *string             `json:"ans0"`
	Ans1             *string             `json:"ans1"`
	Ans2             *string             `json:"ans2"`
	Label            *int                `json:"label"`
}

// ReadBBQ reads BBQ's original JSONL (one category file or several). The
// prompt question is the context and the question joined by a space, as
// DialDefer does. The correct answer is the one the label points to: in an
// ambiguous context that is the "unknown" option ("Can't be determined"),
// in a disambiguated one the named person. The incorrect answer shown is
// a person's option (never the unknown one, so that an ambiguous item pits
// a stereotype against "unknown"); every option is kept as a candidate.
func ReadBBQ(name string, r io.Reader) ([]framing.Item, error) {
	return readJSONL(name, r, false, func(c *collector, line int, rec *bbqRecord) (framing.Item, bool) {
		ans := []*string{rec.Ans0, rec.Ans1, rec.Ans2}
		for i, a := range ans {
			if a == nil {
				c.add(line, "ans"+itoa(i), "missing")
				return framing.Item{}, false
			}
		}
		switch {
		case rec.Label == nil:
			c.add(line, "label", "missing")
			return framing.Item{}, false
		case *rec.Label < 0 || *rec.Label > 2:
			c.add(line, "label", "%d is not 0, 1 or 2", *rec.Label)
			return framing.Item{}, false
		case rec.ExampleID == nil:
			c.add(line, "example_id", "missing")
			return framing.Item{}, false
		case rec.Category == "":
			c.add(line, "category", "missing")
			return framing.Item{}, false
		}
		unknown := -1
		for i := 0; i < 3; i++ {
			if info := rec.AnswerInfo["ans"+itoa(i)]; len(info) > 1 && info[1] == "unknown" {
				unknown = i
			}
		}
		if unknown < 0 {
			c.add(line, "answer_info", "no option is tagged unknown")
			return framing.Item{}, false
		}
		it := framing.Item{ID: "bbq-" + rec.Category + "-" + itoa(*rec.ExampleID), Domain: "bbq",
			Question: strings.TrimSpace(rec.Context + " " + rec.Question), Correct: *ans[*rec.Label],
			Meta: map[string]any{"category": rec.Category, "context_condition": rec.ContextCondition,
				"question_polarity": rec.QuestionPolarity, "question_index": rec.QuestionIndex,
				"unknown_option": *ans[unknown], "label_is_unknown": *rec.Label == unknown}}
		if sg, ok := rec.Additional["stereotyped_groups"]; ok {
			it.Meta["stereotyped_groups"] = sg
		}
		it.CorrectAnswers = []string{it.Correct}
		for i := 0; i < 3; i++ {
			if i == *rec.Label {
				continue
			}
			it.IncorrectAnswers = append(it.IncorrectAnswers, *ans[i])
			if i != unknown && it.Incorrect == "" {
				it.Incorrect = *ans[i]
			}
		}
		return it, true
	})
}
