package dataset

import (
	"errors"
	"io"
	"strings"

	"github.com/buildlab/budge/framing"
)

// unifiedRecord is one line of DialDefer's unified benchmark JSONL.
type unifiedRecord struct {
	ID               string         `json:"id"`
	Dataset          string         `json:"dataset"`
	Question         string         `json:"question"`
	Context          *string        `json:"context"`
	CorrectAnswers   []string       `json:"correct_answers"`
	IncorrectAnswers []string       `json:"incorrect_answers"`
	Meta             map[string]any `json:"meta"`
	ChosenCorrect    *string        `json:"chosen_correct_answer"`
	ChosenIncorrect  *string        `json:"chosen_incorrect_answer"`
	Type             string         `json:"type"`
	Category         string         `json:"category"`
}

func (r *unifiedRecord) item() framing.Item {
	it := framing.Item{ID: r.ID, Domain: r.Dataset, Question: r.Question, CorrectAnswers: r.CorrectAnswers,
		IncorrectAnswers: r.IncorrectAnswers, Meta: r.Meta}
	if r.Context != nil {
		it.Context = *r.Context
	}
	it.Split = declaredSplit(r.Meta)
	if it.Split == "" {
		// DialDefer's released benchmark files are the paper's held-out
		// evaluation samples: a record that declares no split is
		// evaluation data, never training data unless the user says so
		// (export-training --allow-eval-datasets benchmark).
		it.Split, it.SplitAssumed = "test", true
	}
	if r.ChosenCorrect != nil {
		it.Correct = *r.ChosenCorrect
	} else {
		it.Correct = firstOf(r.CorrectAnswers)
	}
	if r.ChosenIncorrect != nil {
		it.Incorrect = *r.ChosenIncorrect
	} else {
		it.Incorrect = firstOf(r.IncorrectAnswers)
	}
	if r.Type != "" || r.Category != "" {
		if it.Meta == nil {
			it.Meta = map[string]any{}
		}
		if r.Type != "" {
			it.Meta["type"] = r.Type
		}
		if r.Category != "" {
			it.Meta["category"] = r.Category
		}
	}
	return it
}

// declaredSplit is the train/test split a record's meta.split declares:
// "train" for a training split, "test" for any evaluation split (test,
// eval, validation, dev), and "" when it declares none (HaluEval's "all"
// names the source's pool, not a split).
func declaredSplit(meta map[string]any) string {
	v, _ := meta["split"].(string)
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "train", "training":
		return "train"
	case "test", "eval", "evaluation", "validation", "val", "dev", "heldout", "held-out":
		return "test"
	}
	return ""
}

// ReadUnified reads DialDefer's unified benchmark JSONL (id, dataset,
// question, correct_answers, incorrect_answers, context, meta,
// chosen_correct_answer, chosen_incorrect_answer). The domain is the
// record's dataset field.
func ReadUnified(name string, r io.Reader) ([]framing.Item, error) {
	return readJSONL(name, r, false, func(_ *collector, _ int, rec *unifiedRecord) (framing.Item, bool) {
		return rec.item(), true
	})
}

// aioRecord is one line of the r/AIO experiment file.
type aioRecord struct {
	ID              string `json:"id"`
	Dataset         string `json:"dataset"`
	Context         string `json:"context"`
	C1Input         string `json:"c1_input"`
	C2Input         string `json:"c2_input"`
	GroundTruth     string `json:"ground_truth"`
	ChosenCorrect   string `json:"chosen_correct_answer"`
	ChosenIncorrect string `json:"chosen_incorrect_answer"`
	SpeakerA        string `json:"speaker_a_identity"`
	LabelType       string `json:"label_type"`
}

// redacted is how the r/AIO release marks withheld text.
const redacted = "[redacted]"

// aioItem builds a naturalistic item. In r/AIO, Speaker B is always the
// original poster and the community's verdict (OR or NOR) is about them;
// C1 shows a neutral summary (c1_input) and C2 the transcript (c2_input).
func (r *aioRecord) item(c *collector, line int) framing.Item {
	other := map[string]string{"OR": "NOR", "NOR": "OR"}
	it := framing.Item{ID: r.ID, Domain: r.Dataset, Context: r.Context,
		Meta: map[string]any{"speaker_a_identity": r.SpeakerA, "label_type": r.LabelType, "ground_truth": r.GroundTruth}}
	if it.Domain == "" {
		it.Domain = "aio"
	}
	o, ok := other[r.GroundTruth]
	if !ok {
		c.add(line, "ground_truth", "%q is not OR or NOR", r.GroundTruth)
		o = "?"
	}
	it.Dialogue = &framing.Dialogue{Speakers: [2]string{"Speaker A", "Speaker B"}, About: "Speaker B", Label: r.GroundTruth,
		Summary: r.C1Input, Verdicts: map[string]string{r.GroundTruth: r.ChosenCorrect, o: r.ChosenIncorrect}}
	if r.C2Input == redacted || r.C2Input == "" {
		it.Dialogue.Redacted = true
	} else {
		it.Dialogue.Transcript = r.C2Input
	}
	if it.Dialogue.Summary == redacted {
		it.Dialogue.Summary = ""
	}
	if r.ChosenCorrect == r.ChosenIncorrect {
		c.add(line, "chosen_incorrect_answer", "identical to the correct answer %q", r.ChosenCorrect)
	}
	return it
}

// ReadAIO reads the r/AIO experiment-ready JSONL into naturalistic items.
func ReadAIO(name string, r io.Reader) ([]framing.Item, error) {
	return readJSONL(name, r, false, func(c *collector, line int, rec *aioRecord) (framing.Item, bool) {
		return rec.item(c, line), true
	})
}

// ReadItems reads budge's own item JSONL: one framing.Item per line, with
// unknown fields rejected (the format of `--data sample` and of items
// exported from a run).
func ReadItems(name string, r io.Reader) ([]framing.Item, error) {
	return readJSONL(name, r, true, func(_ *collector, _ int, it *framing.Item) (framing.Item, bool) {
		return *it, true
	})
}

func asErr[T error](err error, target *T) bool { return errors.As(err, target) }
