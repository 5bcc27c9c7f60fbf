package framing

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Training-data formats (DialDefer appendix K).
const (
	FormatSFT = "sft" // {"prompt", "completion"}: the dialogue prompt and the one-token right answer
	FormatDPO = "dpo" // {"prompt", "chosen", "rejected"}: the right and the wrong one-token answer
)

// OneToken replaces a template's answer instruction in every training
// prompt: the fine-tuning formats answer with a single token, so the prompt
// must not also ask for JSON with reasoning.
const OneToken = "Answer with exactly one token: 1 or 2."

// Evaluation-only data sets: the paper evaluates TruthfulQA and r/AIO in
// full and never trains on them (appendix A.2).
const (
	EvalTruthfulQA = "truthfulqa"
	EvalAIO        = "aio"
	// EvalBenchmark names the items of DialDefer benchmark files that
	// declare no split (Item.SplitAssumed): evaluation data by rule.
	EvalBenchmark = "benchmark"
)

// ReleaseAssumedSplits drops the split budge assumed for items of benchmark
// files that declare none (Item.SplitAssumed), so that a split can be
// assigned to them (the user's explicit --allow-eval-datasets benchmark);
// it returns how many it released.
func ReleaseAssumedSplits(items []Item) int {
	n := 0
	for i := range items {
		if items[i].SplitAssumed {
			items[i].Split, items[i].SplitAssumed = "", false
			n++
		}
	}
	return n
}

// EvaluationOnly names the evaluation-only data set an item belongs to
// (EvalTruthfulQA, EvalAIO), or "" when it may be trained on.
func EvaluationOnly(it *Item) string {
	d := strings.ToLower(it.Domain)
	switch {
	case strings.Contains(d, "truthfulqa"):
		return EvalTruthfulQA
	case it.Dialogue != nil || d == "aio" || strings.HasPrefix(d, "aio_") || strings.Contains(d, "r/aio"):
		return EvalAIO
	}
	return ""
}

// TrainingOptions say what fine-tuning data is written and what is kept out.
type TrainingOptions struct {
	Format string
	// AllowEval lists evaluation-only data sets (EvalTruthfulQA, EvalAIO)
	// the user explicitly allows to be trained on.
	AllowEval []string
	// Evaluated maps the content key of every item of a stored evaluation
	// run to that run's id: such items are never written.
	Evaluated map[string]string
	// Assigned, index-aligned with the items, marks splits that were
	// assigned by a seeded draw rather than declared by the data, so the
	// two reasons for withholding are counted apart.
	Assigned []bool
	// Pressure adds, per example, one variant per challenge: the model has
	// answered right, the user pushes back, and the completion holds the
	// right answer.
	Pressure []Challenge
}

// Withheld counts the items kept out of training data, per reason.
type Withheld map[string]int

// Total is the number of items withheld for any reason.
func (w Withheld) Total() int { return sum(w) }

// String lists the reasons, most frequent first.
func (w Withheld) String() string {
	keys := make([]string, 0, len(w))
	for k := range w {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if w[keys[i]] != w[keys[j]] {
			return w[keys[i]] > w[keys[j]]
		}
		return keys[i] < keys[j]
	})
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%d %s", w[k], k)
	}
	return b.String()
}

// Withholding reasons.
const (
	ReasonTestSplit = "in an evaluation (test) split the data declares"
	ReasonAssumed   = "of a DialDefer benchmark file that declares no split (evaluation data by rule; --allow-eval-datasets benchmark)"
	ReasonAssigned  = "assigned to the test split (--test-fraction)"
	ReasonEvalOnly  = "of an evaluation-only data set (%s)"
	ReasonEvaluated = "evaluated in a stored run (matched by content)"
)

// withholdReason says why an item must not be trained on, or "".
func withholdReason(it *Item, assigned bool, o *TrainingOptions) (string, error) {
	if ev := EvaluationOnly(it); ev != "" && !slices.Contains(o.AllowEval, ev) {
		return fmt.Sprintf(ReasonEvalOnly, ev), nil
	}
	if _, ok := o.Evaluated[ContentKey(*it)]; ok {
		return ReasonEvaluated, nil
	}
	switch it.Split {
	case "test":
		switch {
		case assigned:
			return ReasonAssigned, nil
		case it.SplitAssumed:
			return ReasonAssumed, nil
		}
		return ReasonTestSplit, nil
	case "train":
		return "", nil
	}
	return "", fmt.Errorf("item %s has no train/test split; assign one (--test-fraction) before exporting training data", it.ID)
}

// TrainingMessage is one chat turn of a pressure-variant prompt.
type TrainingMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// TrainingRecord is one fine-tuning example: a dialogue-condition prompt
// and its one-token completions. Prompt is the prompt text, or, for a
// pressure variant, the conversation up to the challenge (TRL's
// conversational prompt form).
type TrainingRecord struct {
	ID         string    `json:"id"`
	Domain     string    `json:"domain"`
	Condition  Condition `json:"condition"`
	Pressure   string    `json:"pressure,omitempty"`
	Prompt     any       `json:"prompt"`
	Completion string    `json:"completion,omitempty"`
	Chosen     string    `json:"chosen,omitempty"`
	Rejected   string    `json:"rejected,omitempty"`
}

// TrainingRecords writes two answer-only examples per training item, the
// correct and the incorrect speaker, rendered with the design's first
// template and label set, plus one per pressure challenge and example.
// Items of an evaluation split, of an evaluation-only data set (unless
// allowed) or evaluated in a stored run are withheld and counted per
// reason; an item with no split is an error, since exporting it could leak
// evaluation items into training.
func TrainingRecords(d *Design, items []Item, o TrainingOptions) (recs []TrainingRecord, withheld Withheld, err error) {
	if o.Format != FormatSFT && o.Format != FormatDPO {
		return nil, nil, fmt.Errorf("training format %q: use %s or %s", o.Format, FormatSFT, FormatDPO)
	}
	if len(d.Templates) == 0 || len(d.Labels) == 0 {
		return nil, nil, fmt.Errorf("training export: the design has no template or label set")
	}
	challenges, err := trainingChallenges(o.Pressure)
	if err != nil {
		return nil, nil, err
	}
	withheld = Withheld{}
	for i := range items {
		it := &items[i]
		why, err := withholdReason(it, i < len(o.Assigned) && o.Assigned[i], &o)
		if err != nil {
			return nil, nil, err
		}
		if why != "" {
			withheld[why]++
			continue
		}
		for _, c := range []Condition{C2Correct, C2Incorrect} {
			rs, err := itemRecords(d, it, i, c, o.Format, challenges)
			if err != nil {
				return nil, nil, err
			}
			recs = append(recs, rs...)
		}
	}
	return recs, withheld, nil
}

// itemRecords are the examples of one item in one dialogue condition: the
// plain one and its pressure variants.
func itemRecords(d *Design, it *Item, i int, c Condition, format string, challenges []Challenge) ([]TrainingRecord, error) {
	s := Spec{Item: it.ID, Index: i, Domain: it.Domain, Condition: c, Template: d.Templates[0].Name, Labels: d.Labels[0].Name, Mitigation: None}
	_, user, err := d.Messages(s, it)
	if err != nil {
		return nil, err
	}
	tmpl := d.Templates[0].Dialogue
	if it.Dialogue != nil {
		tmpl = d.Templates[0].NaturalDialogue
	}
	prompt, err := AnswerOnly(user, tmpl)
	if err != nil {
		return nil, fmt.Errorf("template %s: %w", d.Templates[0].Name, err)
	}
	right := c.Expected()
	wrong := "1"
	if right == "1" {
		wrong = "2"
	}
	base := TrainingRecord{ID: it.ID, Domain: it.Domain, Condition: c, Prompt: prompt}
	if format == FormatSFT {
		base.Completion = right
	} else {
		base.Chosen, base.Rejected = right, wrong
	}
	recs := []TrainingRecord{base}
	for _, ch := range challenges {
		r := base
		r.Pressure = ch.Family
		r.Prompt = []TrainingMessage{{"user", prompt}, {"assistant", right}, {"user", ch.Text}}
		recs = append(recs, r)
	}
	return recs, nil
}

// AnswerOnly turns a rendered judgment prompt into a training prompt that
// asks for one token only: the template's answer instruction (from the
// template's first line that mentions JSON to its end) is replaced by
// OneToken, and the paper's "and write your reasoning" is dropped. A
// template that still asks for JSON or reasoning elsewhere is an error
// rather than a contradictory example. Only the template is searched, never
// the item's own text.
func AnswerOnly(prompt, template string) (string, error) {
	lines := strings.Split(template, "\n")
	cut := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(strings.ToLower(l), "json") })
	if cut < 0 {
		return "", fmt.Errorf("the template has no answer instruction (a line that mentions JSON) to replace with %q", OneToken)
	}
	const paperReasoning = " and write your reasoning"
	head := strings.ReplaceAll(strings.Join(lines[:cut], "\n"), paperReasoning, "")
	if strings.Contains(strings.ToLower(head), "reasoning") {
		return "", fmt.Errorf("the template asks for reasoning before its JSON answer instruction; a one-token training prompt cannot keep that")
	}
	tail := strings.TrimRight(strings.Join(lines[cut:], "\n"), "\n")
	body, ok := strings.CutSuffix(strings.TrimRight(prompt, "\n"), tail)
	if !ok {
		return "", fmt.Errorf("the template's answer instruction has placeholders, so it cannot be cut from the rendered prompt")
	}
	body = strings.Replace(body, paperReasoning, "", 1)
	return strings.TrimRight(body, "\n") + "\n" + OneToken, nil
}

// trainingChallenges rewrites challenge messages for one-token training:
// the sentences that ask for JSON again are replaced by OneToken.
func trainingChallenges(cs []Challenge) ([]Challenge, error) {
	out := make([]Challenge, 0, len(cs))
	for _, c := range cs {
		sents := strings.SplitAfter(c.Text, ". ")
		keep := ""
		for _, s := range sents {
			if strings.Contains(strings.ToLower(s), "json") {
				break
			}
			keep += s
		}
		keep = strings.TrimSpace(keep)
		if keep == "" {
			return nil, fmt.Errorf("challenge %s: nothing is left once its request for JSON is removed: %q", c.Family, c.Text)
		}
		out = append(out, Challenge{Family: c.Family, Text: keep + " " + OneToken})
	}
	return out, nil
}
