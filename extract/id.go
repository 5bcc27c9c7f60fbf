package extract

import (
	"regexp"
	"slices"
	"strings"
)

// MatchID resolves an id as a model wrote it to one of ids. An exact match
// needs no repair. Otherwise markup around it (**, __, `), spaces around it
// and a different letter case are repairs, named in the order applied; a
// value that then matches no id, or several ids, is not resolved (never
// guessed).
func MatchID(v string, ids []string) (id string, repairs []string, ok bool) {
	for _, want := range ids {
		if v == want {
			return want, nil, true
		}
	}
	s := v
	for {
		t := strings.TrimSpace(s)
		if t != s && !slices.Contains(repairs, RepairIDPadding) {
			repairs = append(repairs, RepairIDPadding)
		}
		u := unwrap(t)
		if u == t {
			s = t
			break
		}
		if !slices.Contains(repairs, RepairIDMarkup) {
			repairs = append(repairs, RepairIDMarkup)
		}
		s = u
	}
	for _, want := range ids {
		if s == want {
			return want, repairs, true
		}
	}
	var folded []string
	for _, want := range ids {
		if strings.EqualFold(s, strings.TrimSpace(want)) {
			folded = append(folded, want)
		}
	}
	if len(folded) == 1 {
		return folded[0], append(repairs, RepairIDCase), true
	}
	return "", repairs, false
}

// unwrap removes one pair of markup around s.
func unwrap(s string) string {
	for _, m := range []string{"**", "__", "`", "*", "_"} {
		if len(s) > 2*len(m) && strings.HasPrefix(s, m) && strings.HasSuffix(s, m) {
			return s[len(m) : len(s)-len(m)]
		}
	}
	return s
}

var declineRE = regexp.MustCompile(`(?i)\b(i can(not|'t|’t)|i am unable|i'm unable|i’m unable|i won't|i won’t|i will not|i must decline|unable to (help|assist|comply))\b|我不能|我无法|无法协助|抱歉，我`)

// Declines reports whether a reply that holds no answer reads as a plain
// decline (English or Chinese). Call it on Result.Text, so a reasoning
// block that weighs declining does not make a refusal.
func Declines(text string) bool { return declineRE.MatchString(text) }
