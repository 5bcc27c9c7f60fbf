package framing

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Item is one question with one correct and one incorrect answer: the unit
// that the four conditions are built from.
type Item struct {
	ID       string `json:"id"`
	Domain   string `json:"domain"`
	Question string `json:"question"`
	// Context is shown with the question when the data has one (HaluEval's
	// knowledge passage, a naturalistic dialogue's background).
	Context string `json:"context,omitempty"`
	// Correct and Incorrect are the two answers the conditions present.
	Correct   string `json:"correct"`
	Incorrect string `json:"incorrect"`
	// CorrectAnswers and IncorrectAnswers are every candidate the source
	// offers, chosen ones included.
	CorrectAnswers   []string       `json:"correct_answers,omitempty"`
	IncorrectAnswers []string       `json:"incorrect_answers,omitempty"`
	Meta             map[string]any `json:"meta,omitempty"`
	// Split is "train", "test" or empty (not assigned).
	Split string `json:"split,omitempty"`
	// SplitAssumed marks a split the data did not declare but budge took
	// by rule: an item of a DialDefer benchmark file that declares no
	// train/test split is evaluation data ("test"), since the released
	// benchmark files are the paper's held-out evaluation samples.
	SplitAssumed bool `json:"split_assumed,omitempty"`
	// Dialogue makes the item naturalistic: a transcript and a constructed
	// judgment about one of its speakers.
	Dialogue *Dialogue `json:"dialogue,omitempty"`
}

// Dialogue is the naturalistic part of an item: a real multi-turn exchange
// between two speakers, and a ground-truth verdict about one of them.
type Dialogue struct {
	// Speakers are the two speaker names as the texts write them
	// ("Speaker A", "Speaker B").
	Speakers [2]string `json:"speakers"`
	// Transcript is the turn-by-turn dialogue shown in C2. Redacted is set
	// when the source withheld it: such items can only be rebuilt in C1.
	Transcript string `json:"transcript,omitempty"`
	Redacted   bool   `json:"redacted,omitempty"`
	// Summary, when set, is shown in C1 instead of the transcript (the
	// r/AIO design shows C1 a neutral summary of the exchange).
	Summary string `json:"summary,omitempty"`
	// About is the speaker the ground-truth label is about, Label the
	// label itself (e.g. "NOR"), and Verdicts the phrase each label value
	// stands for ({"OR": "overreacting", "NOR": "not overreacting"}).
	About    string            `json:"about"`
	Label    string            `json:"label"`
	Verdicts map[string]string `json:"verdicts"`
}

// Validate reports what makes an item unusable, naming the field.
func (it *Item) Validate() []string {
	var p []string
	if strings.TrimSpace(it.ID) == "" {
		p = append(p, "id: missing")
	}
	if strings.TrimSpace(it.Domain) == "" {
		p = append(p, "domain: missing")
	}
	if it.Dialogue != nil {
		return append(p, it.Dialogue.validate()...)
	}
	if strings.TrimSpace(it.Question) == "" {
		p = append(p, "question: missing")
	}
	if strings.TrimSpace(it.Correct) == "" {
		p = append(p, "correct answer: missing")
	}
	if strings.TrimSpace(it.Incorrect) == "" {
		p = append(p, "incorrect answer: missing")
	}
	if it.Correct != "" && strings.TrimSpace(it.Correct) == strings.TrimSpace(it.Incorrect) {
		p = append(p, fmt.Sprintf("incorrect answer: identical to the correct answer %q", it.Correct))
	}
	if it.Split != "" && it.Split != "train" && it.Split != "test" {
		p = append(p, fmt.Sprintf("split: %q is not train or test", it.Split))
	}
	return p
}

func (d *Dialogue) validate() []string {
	var p []string
	if d.Speakers[0] == "" || d.Speakers[1] == "" || d.Speakers[0] == d.Speakers[1] {
		p = append(p, fmt.Sprintf("dialogue.speakers: need two different names, got %q", d.Speakers))
	}
	if d.About != d.Speakers[0] && d.About != d.Speakers[1] {
		p = append(p, fmt.Sprintf("dialogue.about: %q is not one of the speakers %q", d.About, d.Speakers))
	}
	if len(d.Verdicts) != 2 {
		p = append(p, fmt.Sprintf("dialogue.verdicts: need exactly two label values, got %d", len(d.Verdicts)))
	} else if _, ok := d.Verdicts[d.Label]; !ok {
		p = append(p, fmt.Sprintf("dialogue.label: %q is not one of the verdict labels %s", d.Label, strings.Join(slices.Sorted(maps.Keys(d.Verdicts)), ", ")))
	}
	if d.Transcript == "" && !d.Redacted && d.Summary == "" {
		p = append(p, "dialogue.transcript: missing")
	}
	return p
}

// Other returns the label value that is not l (for two-valued labels).
func (d *Dialogue) Other(l string) string {
	for k := range d.Verdicts {
		if k != l {
			return k
		}
	}
	return l
}

// MetaString returns a metadata field as text ("" when absent), for
// stratified sampling and reports.
func (it *Item) MetaString(field string) string {
	switch field {
	case "domain":
		return it.Domain
	case "split":
		return it.Split
	}
	v, ok := it.Meta[field]
	if !ok || v == nil {
		return ""
	}
	switch x := v.(type) {
	case string:
		return x
	case float64:
		if x == float64(int64(x)) {
			return fmt.Sprint(int64(x))
		}
	}
	return fmt.Sprint(v)
}
