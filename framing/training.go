package framing

import "fmt"

// Training-data formats (DialDefer appendix K).
const (
	FormatSFT = "sft" // {"prompt", "completion"}: the dialogue prompt and the one-token right answer
	FormatDPO = "dpo" // {"prompt", "chosen", "rejected"}: the right and the wrong one-token answer
)

// OneToken is appended to every training prompt: the fine-tuning formats
// answer with a single token, not with JSON.
const OneToken = "\nReturn exactly one token: 1 or 2."

// TrainingRecord is one fine-tuning example: a dialogue-condition prompt
// and its one-token completions.
type TrainingRecord struct {
	ID         string    `json:"id"`
	Domain     string    `json:"domain"`
	Condition  Condition `json:"condition"`
	Prompt     string    `json:"prompt"`
	Completion string    `json:"completion,omitempty"`
	Chosen     string    `json:"chosen,omitempty"`
	Rejected   string    `json:"rejected,omitempty"`
}

// TrainingRecords writes two examples per training item, the correct and the
// incorrect speaker, rendered with the design's first template and label
// set. Only items in the "train" split are used: items in "test" are
// withheld (and counted), and an item with no split is an error, since
// exporting it could leak evaluation items into training.
func TrainingRecords(d *Design, items []Item, format string) (recs []TrainingRecord, withheld int, err error) {
	if format != FormatSFT && format != FormatDPO {
		return nil, 0, fmt.Errorf("training format %q: use %s or %s", format, FormatSFT, FormatDPO)
	}
	if len(d.Templates) == 0 || len(d.Labels) == 0 {
		return nil, 0, fmt.Errorf("training export: the design has no template or label set")
	}
	for i := range items {
		it := &items[i]
		switch it.Split {
		case "test":
			withheld++
			continue
		case "train":
		default:
			return nil, 0, fmt.Errorf("item %s has no train/test split; assign one (--test-fraction) before exporting training data", it.ID)
		}
		for _, c := range []Condition{C2Correct, C2Incorrect} {
			s := Spec{Item: it.ID, Index: i, Domain: it.Domain, Condition: c, Template: d.Templates[0].Name, Labels: d.Labels[0].Name, Mitigation: None}
			_, user, err := d.Messages(s, it)
			if err != nil {
				return nil, 0, err
			}
			r := TrainingRecord{ID: it.ID, Domain: it.Domain, Condition: c, Prompt: user + OneToken}
			right := c.Expected()
			wrong := "1"
			if right == "1" {
				wrong = "2"
			}
			if format == FormatSFT {
				r.Completion = right
			} else {
				r.Chosen, r.Rejected = right, wrong
			}
			recs = append(recs, r)
		}
	}
	return recs, withheld, nil
}
