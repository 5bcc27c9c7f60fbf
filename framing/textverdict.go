package framing

import (
	"regexp"
	"slices"
	"strings"

	"github.com/buildlab/budge/extract"
	"golang.org/x/text/unicode/norm"
)

// The verdict as text: what a careful reader takes from a reply that
// states its choice in words rather than in the JSON field asked for.
// Every mention of a choice is collected (an answer label, an option
// named, a choosing verb, the option's own wording); a choice that is
// ruled out ("not 1") does not count; a reply is read only when exactly
// one choice remains and nothing hedges between the options.

// Repairs of a verdict read from text, each named in Recovered.
const (
	// RecoverTextLabel: an answer label and its value outside JSON
	// ("Answer: 2", "chosen_answer: 2" on a line, "答案：2", a heading).
	RecoverTextLabel = "text-answer-label"
	// RecoverTextOption: the option named or chosen in words ("Option 1",
	// "the first option", "I choose 2", "2.", "选 1").
	RecoverTextOption = "text-option"
	// RecoverTextPolarity: the option's own wording ("Yes", "Speaker 2 is
	// correct", "the statement is incorrect", "正确").
	RecoverTextPolarity = "text-polarity"
	// RecoverFieldText: the answer field held the option's text, a word
	// ("yes"), "Option 2" or a one-item list rather than "1" or "2".
	RecoverFieldText = "answer-field-text"
	// RecoverFullWidthDigit: a full-width digit (２) read as its ASCII one.
	RecoverFullWidthDigit = "full-width-digit"
)

type mention struct {
	choice string
	repair string
}

var (
	markupRE  = regexp.MustCompile("\\*\\*|__|`|(?m)^\\s*#+\\s*|(?m)^\\s*>\\s*|\\$")
	boxedRE   = regexp.MustCompile(`\\boxed\{\s*([^{}]*)\}`)
	answerTag = regexp.MustCompile(`(?is)<(answer|final_answer)>\s*(.*?)\s*</(answer|final_answer)>`)
	// labelRE: an answer label at the start of a line; the value follows
	// on the line, or on the next line when the label stands alone.
	labelRE    = regexp.MustCompile(`(?im)^[ \t]*[-*]?[ \t]*(?:final[ _]+|my[ _]+)?(?:chosen[ _]+answer|answer|choice|verdict|judg(?:e)?ment|selected[ _]+(?:answer|option)|最终答案|答案|选择|回答|结论|判断)(?:[ \t]*(?:[:=]|\bis\b|是|为)[ \t]*(.*)|[ \t]*)$`)
	anyLabelRE = regexp.MustCompile(`(?i)\b(?:answer|choice|verdict)\s*[:=]\s*(?:option\s*)?\(?([12])\b`)
	// chooseRE: a choosing phrase followed by the option.
	chooseRE    = regexp.MustCompile(`(?i)\b(?:i(?:\s+would|'d|’d)?\s+(?:choose|pick|select|go\s+with)|i\s+am\s+choosing|my\s+(?:choice|answer)\s+is|the\s+(?:correct|right|best)\s+(?:option|answer|choice)\s+is|the\s+answer\s+is|answer\s+is|but)\s+(?:the\s+)?(?:option\s*|answer\s*|choice\s*|number\s*)?#?\(?([12])\)?(?:[^0-9]|$)`)
	chooseOrdRE = regexp.MustCompile(`(?i)\b(?:choose|pick|select|go\s+with|is)\s+the\s+(first|second)\b`)
	leadRE      = regexp.MustCompile(`(?i)^\s*(?:option\s*|answer\s*|choice\s*)?#?\(?([12])\)?(?:\s*[.):,\-–—。，]|\s|$)`)
	optionRE    = regexp.MustCompile(`(?i)\b(?:option|answer_|answer\s+#)\s*#?\s*([12])\b`)
	ordinalRE   = regexp.MustCompile(`(?i)\b(first|second)\s+(?:option|answer|choice)\b`)
	zhChooseRE  = regexp.MustCompile(`(?:选择|选)\s*(?:选项|答案|第)?\s*([12一二])|选项\s*([12一二])|第\s*([12一二])\s*(?:个)?\s*(?:选项|项|个答案)|答案\s*(?:是|为|选)\s*(?:选项)?\s*([12一二])`)
	negRE       = regexp.MustCompile(`(?i)\b(?:not|rather\s+than|instead\s+of)\s+(?:the\s+)?(?:option\s*|answer\s*|choice\s*)?#?([12])\b|不是\s*(?:选项)?\s*([12一二])`)
	hedgeRE     = regexp.MustCompile(`(?i)\b([12])\s+(?:or|and|/)\s+(?:option\s*)?([12])\b|\beither\b|\bneither\b|\bpartly\b|\bpartially\b|\bhalf\b|\byes\s+and\s+no\b|\bboth\s+(?:options|answers)\b|既.*又|部分正确|都不`)
	leadYesNo   = regexp.MustCompile(`(?i)^\s*(yes|no|true|false|correct|incorrect|right|wrong)\b`)
	zhWholeRE   = regexp.MustCompile(`^(是|否|对|错|不对|不是|正确|错误|不正确|是的)[。.!！]?$`)
)

// subjects a polarity sentence may be about, besides the judged speaker.
var subjects = []string{"the statement", "this statement", "statement", "the claim", "the answer", "this answer", "the response", "it", "this", "that", "the second speaker"}

var zhSubjects = []string{"该陈述", "这个陈述", "这一陈述", "陈述", "这个说法", "该说法", "说法", "这个回答", "该回答", "回答"}

func digitChoice(s string) string {
	switch s {
	case "1", "一", "first":
		return "1"
	case "2", "二", "second":
		return "2"
	}
	return ""
}

// polarityChoice reads "yes", "correct", "正确" and their opposites as a
// whole value.
func polarityChoice(w string) string {
	switch strings.ToLower(strings.Trim(w, " .!。！")) {
	case "yes", "true", "correct", "right", "是", "对", "正确", "是的":
		return "1"
	case "no", "false", "incorrect", "wrong", "否", "错", "不对", "不是", "错误", "不正确":
		return "2"
	}
	return ""
}

// normalizeVerdictText makes a reply's verdict easy to find: compatibility
// forms (full-width digits and colons) as ASCII, markup dropped, \boxed{}
// and <answer> tags as a plain answer line. fw reports a full-width digit.
func normalizeVerdictText(s string) (string, bool) {
	fw := strings.ContainsFunc(s, func(r rune) bool { return r >= '０' && r <= '９' })
	s = norm.NFKC.String(s)
	s = answerTag.ReplaceAllString(s, "\nAnswer: $2\n")
	s = boxedRE.ReplaceAllString(s, " $1 ")
	s = markupRE.ReplaceAllString(s, "")
	return strings.TrimSpace(s), fw
}

// readTextVerdict reads the one choice a text states. judged are the names
// of the speaker whose answer is judged ("Speaker 2"), for sentences such
// as "Speaker 2 is correct". problem is set when the text states both
// options or hedges; choice and problem are both empty when it states no
// verdict at all.
func readTextVerdict(text string, judged []string) (choice string, repairs []string, problem string) {
	t, fw := normalizeVerdictText(text)
	if t == "" {
		return "", nil, ""
	}
	var ms []mention
	add := func(c, repair string) {
		if c != "" {
			ms = append(ms, mention{c, repair})
		}
	}
	for _, v := range extract.LabelValues(strings.Split(t, "\n"), labelRE, true) {
		if c := valueChoice(v, judged); c != "" {
			add(c, RecoverTextLabel)
		}
	}
	for _, m := range anyLabelRE.FindAllStringSubmatch(t, -1) {
		add(m[1], RecoverTextLabel)
	}
	for _, m := range chooseRE.FindAllStringSubmatch(t, -1) {
		add(digitChoice(m[1]), RecoverTextOption)
	}
	for _, m := range chooseOrdRE.FindAllStringSubmatch(t, -1) {
		add(digitChoice(strings.ToLower(m[1])), RecoverTextOption)
	}
	if m := leadRE.FindStringSubmatch(t); m != nil {
		add(m[1], RecoverTextOption)
	}
	for _, m := range optionRE.FindAllStringSubmatch(t, -1) {
		add(m[1], RecoverTextOption)
	}
	for _, m := range ordinalRE.FindAllStringSubmatch(t, -1) {
		add(digitChoice(strings.ToLower(m[1])), RecoverTextOption)
	}
	for _, m := range zhChooseRE.FindAllStringSubmatch(t, -1) {
		add(digitChoice(m[1]+m[2]+m[3]+m[4]), RecoverTextOption)
	}
	if m := leadYesNo.FindStringSubmatch(t); m != nil {
		add(polarityChoice(m[1]), RecoverTextPolarity)
	}
	if zhWholeRE.MatchString(t) {
		add(polarityChoice(t), RecoverTextPolarity)
	}
	for _, c := range polarities(t, judged) {
		add(c, RecoverTextPolarity)
	}
	if len(ms) == 0 {
		return "", nil, ""
	}
	if hedgeRE.MatchString(t) {
		return "", nil, "the reply hedges between the options: " + extract.Clip(text)
	}
	ruledOut := map[string]bool{}
	for _, m := range negRE.FindAllStringSubmatch(t, -1) {
		ruledOut[digitChoice(m[1]+m[2])] = true
	}
	seen := map[string]bool{}
	for _, m := range ms {
		if ruledOut[m.choice] {
			continue
		}
		if !seen[m.choice] {
			seen[m.choice] = true
			choice = m.choice
		}
		if !slices.Contains(repairs, m.repair) {
			repairs = append(repairs, m.repair)
		}
	}
	switch len(seen) {
	case 0:
		return "", nil, ""
	case 2:
		return "", nil, "the reply states both options: " + extract.Clip(text)
	}
	if fw {
		repairs = append(repairs, RecoverFullWidthDigit)
	}
	return choice, repairs, ""
}

// polarities finds sentences that call the judged answer correct or
// incorrect ("the statement is incorrect", "Speaker 2 is correct", "该陈述
// 不正确"); a question ("whether it is correct") is no verdict.
func polarities(t string, judged []string) []string {
	low := strings.ToLower(t)
	var out []string
	names := append(append([]string{}, subjects...), lowerAll(judged)...)
	for _, s := range names {
		if s == "" {
			continue
		}
		for i := 0; ; {
			j := indexWord(low[i:], s)
			if j < 0 {
				break
			}
			at := i + j
			i = at + len(s)
			before := low[:at]
			if strings.HasSuffix(strings.TrimSpace(before), "whether") || strings.HasSuffix(strings.TrimSpace(before), "if") {
				continue
			}
			if c := copulaVerdict(low[i:]); c != "" {
				out = append(out, c)
			}
		}
	}
	zh := append(append([]string{}, zhSubjects...), judged...)
	for _, s := range zh {
		if s == "" {
			continue
		}
		for _, part := range strings.SplitAfter(t, s)[1:] {
			clause := part
			if k := strings.IndexAny(clause, "。，,.;；!！?？\n"); k >= 0 {
				clause = clause[:k]
			}
			if r := []rune(clause); len(r) > 12 {
				clause = string(r[:12])
			}
			switch {
			case strings.Contains(clause, "不正确") || strings.Contains(clause, "错误") || strings.Contains(clause, "不对") || strings.Contains(clause, "是错的"):
				out = append(out, "2")
			case strings.Contains(clause, "正确") || strings.Contains(clause, "是对的"):
				out = append(out, "1")
			}
		}
	}
	return out
}

var copulaRE = regexp.MustCompile(`^(?:'s|’s)?\s*(?:answer\s+)?(is|was|are)\s+(not\s+|n't\s+)?(?:entirely\s+|completely\s+|fully\s+)?(correct|right|accurate|true|incorrect|wrong|inaccurate|false|mistaken)\b`)
var copulaNotRE = regexp.MustCompile(`^\s*(isn't|isn’t|wasn't|wasn’t)\s+(correct|right|accurate|true)\b`)

func copulaVerdict(rest string) string {
	if m := copulaNotRE.FindStringSubmatch(rest); m != nil {
		return "2"
	}
	m := copulaRE.FindStringSubmatch(strings.TrimLeft(rest, " "))
	if m == nil {
		return ""
	}
	positive := m[3] == "correct" || m[3] == "right" || m[3] == "accurate" || m[3] == "true"
	if m[2] != "" {
		positive = !positive
	}
	if positive {
		return "1"
	}
	return "2"
}

// indexWord finds s in low where it starts and ends at word boundaries.
func indexWord(low, s string) int { return extract.IndexToken(low, s, isWordRune) }

func isWordRune(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_'
}

func lowerAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strings.ToLower(s)
	}
	return out
}

// valueChoice reads an answer field's value (or an answer label's): "2",
// "Option 2", "2. No, …", "yes", "正确", the option's wording.
func valueChoice(v string, judged []string) string {
	v = strings.TrimSpace(strings.Trim(strings.TrimSpace(v), `"'“”「」[]`))
	if c := digitChoice(v); c != "" {
		return c
	}
	if c := polarityChoice(v); c != "" {
		return c
	}
	c, _, problem := readTextVerdict(v, judged)
	if problem != "" {
		return ""
	}
	return c
}
