package framing

import (
	"fmt"
	"strings"
)

// Messages renders what a session sends first: the mitigation's system
// prompt (if any) and the user prompt of the item in the spec's condition.
func (d *Design) Messages(s Spec, it *Item) (system, user string, err error) {
	t := d.Template(s.Template)
	if t == nil {
		return "", "", fmt.Errorf("session %s: no template set %q in the design", s.ID(), s.Template)
	}
	m, ok := d.Mitigation(s.Mitigation)
	if !ok {
		return "", "", fmt.Errorf("session %s: no mitigation %q in the design", s.ID(), s.Mitigation)
	}
	if it.Dialogue != nil {
		user, err = d.NaturalPrompt(t, s.Condition, it, m)
		return m.SystemPrompt, user, err
	}
	labels := LabelSet{}
	if s.Condition.Dialogue() {
		var ok bool
		if labels, ok = d.LabelSet(s.Labels); !ok {
			return "", "", fmt.Errorf("session %s: no label set %q in the design", s.ID(), s.Labels)
		}
		if m.Relabel != nil {
			labels = *m.Relabel
		}
	}
	user, err = t.Prompt(s.Condition, it, labels)
	return m.SystemPrompt, user, err
}

// Roles returns the judger and judgee of a naturalistic item: by default
// the second speaker judges the first (r/AIO: the original poster judges
// the other party); Reverse swaps them.
func (d *Design) Roles(dl *Dialogue) (judger, judgee string) {
	if d.Reverse {
		return dl.Speakers[0], dl.Speakers[1]
	}
	return dl.Speakers[1], dl.Speakers[0]
}

// Perspective describes, for a report, who judges whom in naturalistic
// items and whether ground truth about the other party is inverted.
func (d *Design) Perspective() string {
	who := "the second speaker (the original poster) judges the first"
	if d.Reverse {
		who = "the first speaker judges the second (--reverse-perspective)"
	}
	inv := "a label about the other party is inverted to give the judgee's ground truth"
	if !d.InvertTruth {
		inv = "labels are used as given, without inversion"
	}
	return who + "; " + inv
}

// Judgments returns the correct and the incorrect judgment about the
// judgee ("Speaker A is overreacting"), before any relabelling. The label
// is the judgee's own when it is about the judgee; when it is about the
// other speaker it is inverted under InvertTruth (one party not
// overreacting implies the other is) and taken as it is otherwise.
func (d *Design) Judgments(dl *Dialogue) (correct, incorrect, truth string) {
	_, judgee := d.Roles(dl)
	truth = dl.Label
	if dl.About != judgee && d.InvertTruth {
		truth = dl.Other(truth)
	}
	return judgee + " is " + dl.Verdicts[truth], judgee + " is " + dl.Verdicts[dl.Other(truth)], truth
}

// NaturalPrompt renders a naturalistic item. The same constructed judgment
// about the judgee is shown as a statement in C1 and as the judger's last
// message in C2; a mitigation's relabelling renames both speakers
// everywhere in the texts.
func (d *Design) NaturalPrompt(t *Templates, c Condition, it *Item, m Mitigation) (string, error) {
	dl := it.Dialogue
	if c.Dialogue() && dl.Redacted {
		return "", fmt.Errorf("item %s: the source withheld the dialogue transcript, so only the statement condition can be rebuilt", it.ID)
	}
	judger, judgee := d.Roles(dl)
	correct, incorrect, _ := d.Judgments(dl)
	answer := incorrect
	if c.AnswerCorrect() {
		answer = correct
	}
	dialogue := dl.Transcript
	if !c.Dialogue() && dl.Summary != "" {
		dialogue = dl.Summary
	}
	context := it.Context
	if m.Relabel != nil {
		r := newRelabeler(dl, m.Relabel)
		dialogue, context, answer = r.Replace(dialogue), r.Replace(context), r.Replace(answer)
		judger, judgee = r.Replace(judger), r.Replace(judgee)
	}
	st, dt := t.NaturalStatement, t.NaturalDialogue
	if st == "" {
		// Never another set's wording in place of the one chosen: the
		// report would name templates the prompt was not made with.
		return "", fmt.Errorf("item %s is naturalistic, and %s", it.ID, t.noNatural())
	}
	v := map[string]string{"{question}": context, "{context}": context, "{dialogue}": dialogue, "{answer}": answer,
		"{judger}": judger, "{judgee}": judgee, "{speaker1}": judgee, "{speaker2}": judger}
	if c.Dialogue() {
		return Render(dt, v), nil
	}
	return Render(st, v), nil
}

// noNatural says that a template set cannot express naturalistic items.
func (t *Templates) noNatural() string {
	return fmt.Sprintf("template set %s (%s) has no naturalistic pair (%s and %s with {dialogue}, {answer} and {judger}), so it cannot express naturalistic items",
		t.Name, t.Source, NaturalStatementFile, NaturalDialogueFile)
}

// CheckItems refuses a design whose template sets cannot render the items:
// naturalistic items need every chosen set to have its naturalistic pair,
// since budge never renders them with another set's wording in its place.
func (d *Design) CheckItems(items []Item) error {
	var natural []string
	for i := range items {
		if items[i].Dialogue != nil {
			natural = append(natural, items[i].ID)
		}
	}
	if len(natural) == 0 {
		return nil
	}
	var probs []string
	for _, t := range d.Templates {
		if t.NaturalStatement == "" {
			probs = append(probs, t.noNatural())
		}
	}
	if len(probs) == 0 {
		return nil
	}
	eg := natural[0]
	if len(natural) > 1 {
		eg += fmt.Sprintf(" and %d more", len(natural)-1)
	}
	return fmt.Errorf("%d naturalistic item(s) (%s): %s; add the pair to the template directory, choose a set that has one (budge, budge-plain, budge-formal), or leave the naturalistic items out of --data",
		len(natural), eg, strings.Join(probs, "; "))
}

// newRelabeler renames a dialogue's two speakers: the first to the label
// set's first name, the second to its second.
func newRelabeler(dl *Dialogue, l *LabelSet) *strings.Replacer {
	return strings.NewReplacer(dl.Speakers[0], l.Speaker1, dl.Speakers[1], l.Speaker2)
}
