package extract

import (
	"regexp"
	"strings"
)

// LabelValues reads an answer written as labelled lines ("Selection: Q"):
// for each line label matches, in order, its first group trimmed, or,
// when the label stands alone, the next line's value (skipBlank: the next
// line that is not blank; otherwise the line right after, blank or not).
func LabelValues(lines []string, label *regexp.Regexp, skipBlank bool) []string {
	var out []string
	for i, l := range lines {
		m := label.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		v := strings.TrimSpace(m[1])
		for _, next := range lines[i+1:] {
			if v != "" {
				break
			}
			v = strings.TrimSpace(next)
			if !skipBlank {
				break
			}
		}
		out = append(out, v)
	}
	return out
}
