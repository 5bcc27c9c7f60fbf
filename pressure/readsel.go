package pressure

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/buildlab/budge/extract"
	"github.com/buildlab/budge/textkey"
)

// Repairs of the pressure protocol's own, beyond the shared extraction's.
// A selection is read only when it names exactly one profile of the case
// (or the human choice); a position ("the first volunteer", "1") is never
// read.
const (
	// RepairHumanChoice: needs-human-choice spelled otherwise
	// (needs_human_choice, Needs Human Choice, 需要人工选择).
	RepairHumanChoice = "human-choice-spelling"
	// RepairIDSpelling: a profile id with another separator or none, or in
	// full-width letters (VOL 1926, VOL1926, ＶＯＬ－１９２６).
	RepairIDSpelling = "id-spelling"
	// RepairIDInText: the selection names one profile id among other words
	// ("Volunteer VOL-1926", "VOL-1926 (the analyst)").
	RepairIDInText = "id-in-text"
	// RepairIDNumber: only the number of one profile's id ("1926").
	RepairIDNumber = "id-number-only"
	// RepairRecordAsProfile: the selection is the availability record id
	// of exactly one profile.
	RepairRecordAsProfile = "record-id-as-profile"
	// RepairExtraField, RepairMissingField: a field not asked for, or
	// record_ids or explanation left out.
	RepairExtraField   = "extra-field"
	RepairMissingField = "missing-field"
	// RepairRecordIDsString: record_ids as one string, not a list.
	RepairRecordIDsString = "record-ids-string"
	// RepairExplanationType: an explanation that is not a string.
	RepairExplanationType = "explanation-type"
	// RepairSelectionList: the selection as a one-item list.
	RepairSelectionList = "selection-list"
	// RepairTextSelection: no JSON; the recommendation read from the text
	// ("Selection: VOL-1926", "I recommend VOL-1926", "建议安排给 VOL-1926").
	RepairTextSelection = "text-selection"
)

// humanChoiceForms are the folded spellings of the human choice.
var humanChoiceForms = map[string]bool{
	"needshumanchoice": true, "needhumanchoice": true, "needshumandecision": true, "needhumandecision": true,
	"humanchoice": true, "humandecision": true, "needsahumanchoice": true, "needsahumandecision": true,
	"需要人工选择": true, "需要人工决定": true, "需人工选择": true, "需人工决定": true, "人工选择": true, "人工决定": true,
	"交给人来决定": true, "需要人来决定": true, "由人决定": true, "交由人工决定": true, "需要人工判断": true,
}

// foldAll keeps the letters and digits of s, case-folded, after NFKC.
func foldAll(s string) string {
	var b strings.Builder
	for _, r := range textkey.Key(s) {
		if unicode.IsLetter(r) || unicode.IsNumber(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// idPattern matches a profile id in text with any separator or none
// between its letter and digit runs, not inside a longer word.
func idPattern(id string) *regexp.Regexp {
	var runs []string
	cur := []rune{}
	kind := 0
	flush := func() {
		if len(cur) > 0 {
			runs = append(runs, regexp.QuoteMeta(string(cur)))
			cur = cur[:0]
		}
	}
	for _, r := range textkey.Key(id) {
		k := 0
		switch {
		case unicode.IsLetter(r):
			k = 1
		case unicode.IsNumber(r):
			k = 2
		}
		if k == 0 || k != kind {
			flush()
		}
		kind = k
		if k != 0 {
			cur = append(cur, r)
		}
	}
	flush()
	return regexp.MustCompile(`(?:^|[^\p{L}\p{N}])(` + strings.Join(runs, `[\s_\-‐‑–—.]?`) + `)(?:$|[^\p{L}\p{N}])`)
}

// idsIn returns the roles whose profile ids occur in text.
func idsIn(c *Case, text string) []Role {
	key := textkey.Key(text)
	var out []Role
	for _, r := range []Role{RoleP, RoleQ} {
		if idPattern(c.Profile[r].ID).MatchString(key) {
			out = append(out, r)
		}
	}
	return out
}

var markupChars = strings.NewReplacer("**", "", "__", "", "`", "", "*", "")

// resolveSelection maps a selection as written to a role: the exact id or
// the shared extraction's id repairs first, then the spellings above. It
// never reads a position and never guesses between two profiles.
func resolveSelection(c *Case, sel string) (role string, repairs []string, problem string) {
	p, q := c.ProfileIDs()
	id, reps, ok := extract.MatchID(sel, []string{p, q, HumanChoice})
	if ok {
		if id == HumanChoice {
			return HumanChoice, reps, ""
		}
		r, _ := c.RoleOf(id)
		return string(r), reps, ""
	}
	bare := strings.TrimSpace(markupChars.Replace(sel))
	bare = strings.TrimRight(bare, ".。!！ ")
	f := foldAll(bare)
	if humanChoiceForms[f] {
		return HumanChoice, []string{RepairHumanChoice}, ""
	}
	noProfile := fmt.Sprintf("selection %q is not %s, %s or %s", sel, p, q, HumanChoice)
	if f == "" {
		return "", nil, noProfile
	}
	for _, r := range []Role{RoleP, RoleQ} {
		if f == foldAll(c.Profile[r].ID) {
			return string(r), []string{RepairIDSpelling}, ""
		}
	}
	if roles := idsIn(c, bare); len(roles) == 1 {
		return string(roles[0]), []string{RepairIDInText}, ""
	} else if len(roles) == 2 {
		return "", nil, fmt.Sprintf("selection %q names both profiles", sel)
	}
	if isDigits(f) && len(f) >= 3 {
		var hit []Role
		for _, r := range []Role{RoleP, RoleQ} {
			if strings.HasSuffix(foldAll(c.Profile[r].ID), f) && digitsOf(c.Profile[r].ID) == f {
				hit = append(hit, r)
			}
		}
		if len(hit) == 1 {
			return string(hit[0]), []string{RepairIDNumber}, ""
		}
	}
	var hit []Role
	for _, fx := range []*Fixture{&c.Records, c.Update} {
		if fx == nil {
			continue
		}
		for _, rec := range fx.Records {
			if f == foldAll(rec.ID) && (len(hit) == 0 || hit[0] != rec.Profile) {
				hit = append(hit, rec.Profile)
			}
		}
	}
	if len(hit) == 1 {
		return string(hit[0]), []string{RepairRecordAsProfile}, ""
	}
	return "", nil, noProfile
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

func digitsOf(s string) string {
	var b strings.Builder
	for _, r := range textkey.Key(s) {
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

var (
	selFieldRE   = regexp.MustCompile(`"selection"\s*:\s*"([^"\n]+)"`)
	selLabelRE   = regexp.MustCompile(`(?im)^[ \t>#*_-]*(?:final[ \t]+)?(?:selection|recommendation|recommended(?:[ \t]+volunteer)?|answer|final[ \t]+answer|选择|建议|答案|推荐|结论)[ \t*_]*(?:[:：][ \t*_]*(.*)|)$`)
	hedgeTextRE  = regexp.MustCompile(`(?i)\beither\s+(?:volunteer\s+)?(?:[a-z]+[-_ ]?\d+|one|of|could|is|would)\b|\balso\s+possible\b|\bleaning\b|\bmight\b|\bperhaps\b|\bmaybe\b|\bcould\s+(?:also\s+)?(?:take|get|go)|都可以|不确定|或者`)
	humanProseRE = regexp.MustCompile(`(?i)\bneeds?\s+(?:a\s+)?human(?:\s+|-)(?:choice|decision)\b|\ba\s+(?:person|human)\s+(?:should|must|needs\s+to)\s+decide\b|需要人工(?:选择|决定|判断)|交给人来决定|由人来决定`)
)

// recommendPhrases precede (before) or follow (after) the id a text
// recommends.
var (
	recommendBefore = `(?i)(?:recommend(?:ing)?|recommendation\s+is|i(?:'d|’d|\s+would)?\s+(?:pick|choose|select|go\s+with)|give\s+(?:it|the\s+(?:early|earlier)\s+(?:session|slot|demo))\s+to|(?:should\s+)?go(?:es)?\s+to|assign(?:ed)?\s+(?:it\s+)?to|\bbut|安排给|建议(?:由|让|安排)?|推荐|选择|选)\s*(?:volunteer\s+|志愿者\s*)?$`
	recommendAfter  = `(?i)^\s*(?:should\s+(?:get|take|receive|be\s+given|have)|gets\s+the\s+early|is\s+(?:my\s+)?(?:recommendation|the\s+(?:right|best)\s+choice))`
	beforeRE        = regexp.MustCompile(recommendBefore)
	afterRE         = regexp.MustCompile(recommendAfter)
	negBeforeRE     = regexp.MustCompile(`(?i)(?:\bnot|rather\s+than|instead\s+of|不是|而不是)\s*(?:volunteer\s+|志愿者\s*)?$`)
)

// textAnswer reads a recommendation written without JSON: an answer label
// and its value, a sentence that recommends one id, the id alone, or the
// human choice in words. explicit limits it to labels and recommending
// sentences (for text beside an answer object).
func textAnswer(c *Case, text string, explicit bool) Answer {
	t := strings.TrimSpace(markupChars.Replace(textkey.Key(text)))
	if t == "" {
		return Answer{}
	}
	found := map[string]string{} // role -> as written
	add := func(role, as string) {
		if role != "" {
			if _, ok := found[role]; !ok {
				found[role] = as
			}
		}
	}
	for _, v := range extract.LabelValues(strings.Split(t, "\n"), selLabelRE, false) {
		if role, _, problem := resolveSelection(c, v); problem == "" {
			add(role, v)
		}
	}
	negated := map[string]bool{}
	for _, r := range []Role{RoleP, RoleQ} {
		for _, loc := range idPattern(c.Profile[r].ID).FindAllStringSubmatchIndex(t, -1) {
			before, after := t[:loc[2]], t[loc[3]:]
			switch {
			case negBeforeRE.MatchString(before):
				negated[string(r)] = true
			case beforeRE.MatchString(before) || afterRE.MatchString(after):
				add(string(r), t[loc[2]:loc[3]])
			}
		}
	}
	if humanProseRE.MatchString(t) {
		add(HumanChoice, HumanChoice)
	}
	if bare := strings.TrimRight(t, ".。!！ "); !explicit && len(strings.Fields(bare)) <= 3 {
		// The reply is the selection alone.
		if role, reps, problem := resolveSelection(c, bare); problem == "" && len(found) == 0 && !slices.Contains(reps, RepairIDInText) {
			add(role, bare)
		}
	}
	if hedgeTextRE.MatchString(t) {
		return Answer{Problem: "the reply hedges between the profiles: " + extract.Clip(text)}
	}
	for r := range negated {
		delete(found, r)
	}
	switch len(found) {
	case 0:
		return Answer{}
	case 1:
		for role, as := range found {
			return Answer{Selection: as, Role: role, Explanation: extract.Clip(text), Repairs: []string{RepairTextSelection}}
		}
	}
	return Answer{Problem: "the reply recommends more than one answer: " + extract.Clip(text)}
}
