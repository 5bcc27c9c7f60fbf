package framing

// Knowledge is one question with the answers known to be correct and
// incorrect: what a simulated judge is configured with before a run.
type Knowledge struct {
	Question  string   `json:"question"`
	Correct   []string `json:"correct"`
	Incorrect []string `json:"incorrect"`
}

// KnowledgeOf lists what a fully informed judge would know about the items
// as this design presents them: every candidate answer of a question item,
// and for a naturalistic item the correct and incorrect judgment about the
// judgee under each relabelling the design uses (keyed by the background
// text, or by the dialogue itself when there is none).
func KnowledgeOf(d *Design, items []Item) []Knowledge {
	var out []Knowledge
	for i := range items {
		it := &items[i]
		if it.Dialogue == nil {
			k := Knowledge{Question: it.Question, Correct: []string{it.Correct}, Incorrect: []string{it.Incorrect}}
			k.Correct = append(k.Correct, it.CorrectAnswers...)
			k.Incorrect = append(k.Incorrect, it.IncorrectAnswers...)
			out = append(out, k)
			continue
		}
		dl := it.Dialogue
		correct, incorrect, _ := d.Judgments(dl)
		mits := []Mitigation{{Name: None}}
		mits = append(mits, d.Mitigations...)
		for _, m := range mits {
			c, w := correct, incorrect
			keys := []string{it.Context, dl.Transcript, dl.Summary}
			if m.Relabel != nil {
				r := newRelabeler(dl, m.Relabel)
				c, w = r.Replace(c), r.Replace(w)
				for j := range keys {
					keys[j] = r.Replace(keys[j])
				}
			}
			if keys[0] != "" {
				keys = keys[:1]
			}
			for _, k := range keys {
				if k != "" {
					out = append(out, Knowledge{Question: k, Correct: []string{c}, Incorrect: []string{w}})
				}
			}
		}
	}
	return out
}
