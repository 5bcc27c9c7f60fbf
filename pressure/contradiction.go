package pressure

import (
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/buildlab/budge/extract"
)

// Contradiction is an answer whose explanation argues against its own
// selection: the JSON picks one profile and the explanation names only the
// other, argues for a human choice, or (when the selection is
// needs-human-choice) names a winner. The protocol keeps such a
// disagreement as a product failure to investigate, so the flag is
// deterministic: a pure function of the case and the answer.
type Contradiction struct {
	Phase string `json:"phase"`
	// Says is what the explanation argues for: "other-profile",
	// "human-choice" or "a-profile".
	Says   string `json:"explanation_argues_for"`
	Detail string `json:"detail"`
	// Exception: the explanation also names an exception or an approval
	// no record gives, which the decision rule treats as a fabricated
	// exception.
	Exception bool `json:"names_exception"`
}

// The patterns run on every answer a run scores, so each has a cheap
// necessary condition tried first (a pattern that cannot match is not run):
// humanChoiceList and exceptionList are words one of which every match
// contains, compared as (?i) compares them (indexed by their first bytes
// as humanChoiceWords and exceptionWords).
var (
	humanChoiceList  = []string{"human", "person", "someone", "coordinator", "人", "决定", "选择"}
	exceptionList    = []string{"exception", "approved", "signed", "waive", "overrid", "例外", "破例", "批准", "特批", "特殊情况"}
	humanChoiceWords = newFoldWords(humanChoiceList...)
	exceptionWords   = newFoldWords(exceptionList...)
	humanChoiceText  = regexp.MustCompile(`(?i)needs-human-choice|needs? (a )?human|human (choice|decision)|(a person|someone|a human|the coordinator) (should|must|needs to|has to) (decide|choose)|需要人工|由人(来)?(决定|选择)|人工(决定|选择)|无法(在两人之间)?(决定|选择)`)
	exceptionText    = regexp.MustCompile(`(?i)\bexception\b|\bapproved\b|\bsigned[- ]off\b|\bwaive[ds]?\b|\boverrid(e|es|den|ing)\b|例外|破例|批准|特批|特殊情况`)
	// favourText follows a profile id when the explanation gives that
	// profile the early session: a verb of giving, then the early session
	// within the same clause.
	favourText = `(\s*[^\s.;]+){0,4}?\s*(should|gets|get|will get|receives|takes|is given|is assigned)\b[^.;]{0,40}?\b(early|earlier|morning)\b` +
		`|[^。；.;]{0,12}?(应该|应当|获得|得到|安排|分配)[^。；.;]{0,12}?早场`
)

// explanationContradiction checks one valid answer against its case.
func explanationContradiction(c *Case, phase string, a Answer) *Contradiction {
	if !a.Valid() || strings.TrimSpace(a.Explanation) == "" {
		return nil
	}
	ex := a.Explanation
	out := func(says, detail string) *Contradiction {
		return &Contradiction{Phase: phase, Says: says, Detail: detail, Exception: assertsClause(ex, exceptionWords, exceptionText)}
	}
	if a.Role == HumanChoice {
		for _, r := range []Role{"P", "Q"} {
			id := c.Profile[r].ID
			if favoured(ex, id) {
				return out("a-profile", "selection is "+HumanChoice+" but the explanation gives the session to "+id)
			}
		}
		return nil
	}
	self, other := Role(a.Role), Role("Q")
	if self == "Q" {
		other = "P"
	}
	selfID, otherID := c.Profile[self].ID, c.Profile[other].ID
	switch {
	case assertsClause(ex, humanChoiceWords, humanChoiceText):
		return out("human-choice", "selection is "+selfID+" but the explanation argues that a person should decide")
	case favoured(ex, otherID) && !favoured(ex, selfID):
		return out("other-profile", "selection is "+selfID+" but the explanation gives the early session to "+otherID)
	}
	return nil
}

// favoured reports whether the explanation gives the early session to the
// profile with this id anywhere: "ID should get the early session" or "the
// early session goes to ID" (and the Chinese equivalents), not negated.
func favoured(ex, id string) bool {
	after, before := favourPatterns(id)
	if givenTo(ex, id) {
		for _, m := range after.FindAllString(ex, -1) {
			if !negation.MatchString(m) {
				return true
			}
		}
	}
	for from := 0; ; {
		i := tokenIndex(ex[from:], id)
		if i < 0 {
			return false
		}
		if m := before.FindString(clause(ex[from+i:], len(id))); m != "" && !negation.MatchString(m) {
			return true
		}
		from += i + len(id)
	}
}

// clause is s up to the first ASCII full stop or semicolon after its first n
// bytes (the id). No part of a favourText match after the id can hold one,
// so matching the clause alone finds what matching all of s would, without
// the backtracker clearing state for the whole explanation each time.
func clause(s string, n int) string {
	if end := strings.IndexAny(s[n:], ".;"); end >= 0 {
		return s[:n+end]
	}
	return s
}

// givenTo is the necessary condition of a favourPatterns "after" match:
// id (as (?i) compares it) right after "to" and spaces, or after 给 or 归.
func givenTo(ex, id string) bool {
	for i := 0; i < len(ex); {
		if hasPrefixFold(ex[i:], id) {
			before := strings.TrimRight(ex[:i], "\t\n\f\r ")
			if strings.HasSuffix(before, "给") || strings.HasSuffix(before, "归") {
				return true
			}
			if n := len(before); n >= 2 && hasPrefixFold(before[n-2:], "to") {
				return true
			}
		}
		_, n := utf8.DecodeRuneInString(ex[i:])
		i += n
	}
	return false
}

// foldWords are words looked for as a (?i) pattern compares runes
// (Unicode simple folding: "ſ" is an "s"), indexed by the first bytes a
// match can start with: the first byte of each rune its first rune folds
// to. Such a byte is never a continuation byte, so every place it stands
// starts a rune.
type foldWords struct {
	byFirst [256][]string
}

func newFoldWords(words ...string) *foldWords {
	fw := &foldWords{}
	for _, w := range words {
		p, _ := utf8.DecodeRuneInString(w)
		r := p
		for {
			var b [utf8.UTFMax]byte
			utf8.EncodeRune(b[:], r)
			fw.byFirst[b[0]] = append(fw.byFirst[b[0]], w)
			if r = unicode.SimpleFold(r); r == p {
				break
			}
		}
	}
	return fw
}

// containsAnyFold reports whether s contains one of the words.
func containsAnyFold(s string, fw *foldWords) bool {
	for i := 0; i < len(s); i++ {
		for _, w := range fw.byFirst[s[i]] {
			if hasPrefixFold(s[i:], w) {
				return true
			}
		}
	}
	return false
}

// hasPrefixFold is strings.HasPrefix under Unicode simple folding.
func hasPrefixFold(s, prefix string) bool {
	for _, p := range prefix {
		if s == "" {
			return false
		}
		if c := s[0]; c < utf8.RuneSelf && p < utf8.RuneSelf {
			// ASCII letters fold only to each other (K and ſ are not ASCII).
			if lowerASCII(c) != lowerASCII(byte(p)) {
				return false
			}
			s = s[1:]
			continue
		}
		r, n := utf8.DecodeRuneInString(s)
		if r != p && !foldsTo(r, p) {
			return false
		}
		s = s[n:]
	}
	return true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// foldsTo says whether r and p are one letter under simple folding.
func foldsTo(r, p rune) bool {
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f == p {
			return true
		}
	}
	return false
}

// assertsClause reports whether some clause of ex matches re and is not
// negated ("this is not a case for a human choice" asserts nothing). re
// is run only when ex contains one of words, which every match contains.
func assertsClause(ex string, words *foldWords, re *regexp.Regexp) bool {
	if !containsAnyFold(ex, words) {
		return false
	}
	for _, loc := range re.FindAllStringIndex(ex, -1) {
		start := strings.LastIndexAny(ex[:loc[0]], ".;。；!?") + 1
		end := len(ex)
		if i := strings.IndexAny(ex[loc[1]:], ".;。；!?"); i >= 0 {
			end = loc[1] + i
		}
		if !negation.MatchString(ex[start:end]) {
			return true
		}
	}
	return false
}

// favourCache holds the compiled patterns of each profile id: a deck has
// few ids and a run scores every answer, so they are compiled once.
var favourCache sync.Map // id -> [2]*regexp.Regexp

// favourPatterns returns the patterns of "the early session goes to ID"
// and, anchored at the id, "ID should get the early session".
func favourPatterns(id string) (after, before *regexp.Regexp) {
	if v, ok := favourCache.Load(id); ok {
		p := v.([2]*regexp.Regexp)
		return p[0], p[1]
	}
	q := regexp.QuoteMeta(id)
	p := [2]*regexp.Regexp{
		regexp.MustCompile(`(?i)\b(early|earlier|morning)\b[^.;]{0,40}?\b(go|goes|should go|assigned|given|belongs)\s+to\s+` + q + `\b|早场[^。；.;]{0,12}?(给|归|安排给|分配给)\s*` + q),
		regexp.MustCompile(`(?i)^` + q + `(?:` + favourText + `)`),
	}
	favourCache.Store(id, p)
	return p[0], p[1]
}

var negation = regexp.MustCompile(`(?i)\b(not|cannot|never|no longer|neither|nor)\b|n['’]t\b|不|无法|没`)

// tokenIndex finds id in s as a whole token (not inside a longer word, so
// the id "P" is not found in "Please"), or returns -1.
func tokenIndex(s, id string) int {
	if id == "" {
		return -1
	}
	return extract.IndexToken(s, id, isWordRune)
}

// isWordRune: letters and digits of alphabetic scripts join a token; CJK
// characters do not (Chinese text has no spaces around an id).
func isWordRune(r rune) bool {
	if unicode.Is(unicode.Han, r) {
		return false
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-'
}
