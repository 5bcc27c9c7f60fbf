package dataset

import (
	"io"
	"strings"

	"github.com/buildlab/budge/framing"
)

// ReadTruthfulQA reads a TruthfulQA CSV in either layout:
//   - the January 2025 790-question file (ID, Type, Category, Question,
//     Best Answer, Best Incorrect Answer, ...): the correct answer is Best
//     Answer, the incorrect one Best Incorrect Answer, ids truthfulqa-<ID>;
//   - the original 817-question file (Type, Category, Question, Best
//     Answer, Correct Answers, Incorrect Answers, Source): candidates are
//     split on ";", the incorrect answer is the first incorrect candidate,
//     ids truthfulqa-<row> counting rows from 0.
func ReadTruthfulQA(name string, r io.Reader) ([]framing.Item, error) {
	c := &collector{file: name}
	t := readCSV(c, r)
	if t == nil {
		return nil, c.err()
	}
	// The 790-question file numbers its rows; the original does not.
	newLayout := t.has("Best Incorrect Answer") || t.has("ID")
	if newLayout {
		if !t.need(c, "ID", "Question", "Best Answer", "Best Incorrect Answer") {
			return nil, c.err()
		}
	} else if !t.need(c, "Question", "Best Answer", "Incorrect Answers") {
		return nil, c.err()
	}
	var items []framing.Item
	for i, row := range t.rows {
		it := framing.Item{Domain: "truthfulqa", Question: t.get(row, "Question"), Correct: t.get(row, "Best Answer"), Meta: map[string]any{}}
		for _, m := range []string{"Type", "Category", "Source"} {
			if v := t.get(row, m); v != "" {
				it.Meta[strings.ToLower(m)] = v
			}
		}
		if newLayout {
			it.ID = "truthfulqa-" + t.get(row, "ID")
			it.Incorrect = t.get(row, "Best Incorrect Answer")
			it.CorrectAnswers = []string{it.Correct}
			it.IncorrectAnswers = []string{it.Incorrect}
			if t.get(row, "ID") == "" {
				c.add(t.lines[i], "ID", "missing")
			}
		} else {
			it.ID = "truthfulqa-" + itoa(i)
			it.CorrectAnswers = splitCandidates(t.get(row, "Correct Answers"))
			it.IncorrectAnswers = splitCandidates(t.get(row, "Incorrect Answers"))
			// The best answer comes first among the correct candidates.
			it.CorrectAnswers = append([]string{it.Correct}, remove(it.CorrectAnswers, it.Correct)...)
			it.Incorrect = firstOf(it.IncorrectAnswers)
		}
		items = append(items, it)
	}
	return finish(c, items, t.lines)
}

func splitCandidates(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ";") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func remove(list []string, s string) []string {
	var out []string
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var d []byte
	for ; n > 0; n /= 10 {
		d = append([]byte{byte('0' + n%10)}, d...)
	}
	if neg {
		return "-" + string(d)
	}
	return string(d)
}
