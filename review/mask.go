package review

import (
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/textkey"
)

// What a mask puts in place of what it hides.
const (
	MaskedValue = "[identity masked]"
	MaskedField = "[identity field masked]"
)

// Mask hides, on the first pass of the review, the synthetic identity a
// transcript carries: the identity field's name and the values a run shows
// the model. It replaces whole tokens only, never parts of words: with the
// values "X" and "Y", "You are" and "Yes" stay as they are, and so does
// "XY"; "profile Y." and "Y的记录" are masked.
//
// A token is a run of letters, digits, marks and '_'. Scripts written
// without spaces between words (Han, Hiragana, Katakana, Thai) have no
// word boundaries to find, so each of their characters counts as a token
// of its own: a Latin label next to Chinese text is still a whole token,
// and a label written in such a script is masked wherever it occurs.
// Letters are compared by their key (package textkey): without case, with
// full-width forms read as their ASCII counterparts ("ｙ" is "Y"), in any
// Unicode form and ignoring invisible characters.
type Mask struct {
	terms []maskTerm // longest first
}

type maskTerm struct {
	runes []rune
	with  string
}

// NewMask makes a mask of identity field names and values. Blank entries
// are ignored; a value equal to a field name is masked as a value.
func NewMask(fields, values []string) Mask {
	var m Mask
	seen := map[string]bool{}
	add := func(s, with string) {
		k := textkey.Key(s)
		if k == "" || seen[k] {
			return
		}
		seen[k] = true
		m.terms = append(m.terms, maskTerm{runes: []rune(k), with: with})
	}
	for _, v := range values {
		add(v, MaskedValue)
	}
	for _, f := range fields {
		add(f, MaskedField)
	}
	slices.SortStableFunc(m.terms, func(a, b maskTerm) int { return len(b.runes) - len(a.runes) })
	return m
}

// DeckMask is the mask of a pressure run: the deck's identity field label
// and its two values, and the field name and labels the run shows the model
// instead when it declares its own contrast; whichever the run used, both
// are masked.
func DeckMask(d *pressure.Deck, fields, labels []string) Mask {
	if d == nil {
		return NewMask(fields, labels)
	}
	return NewMask(append([]string{d.Identity.Label}, fields...), append([]string{d.Identity.X, d.Identity.Y}, labels...))
}

// keyRune is one rune of a text's key (textkey) and the byte range of the
// text it came from.
type keyRune struct {
	r          rune
	start, end int
	first      bool // the first key rune of its segment
}

// Text returns s with every whole-token occurrence of the mask's field
// names and values replaced, and the assignment of every session id in it
// hidden (see MaskSessionID). Occurrences are found by their key
// (textkey): a value spelled in another Unicode form, with an invisible
// character inside or in full-width letters is masked too, and the whole
// spelling (its invisible characters included) is replaced.
func (m Mask) Text(s string) string {
	s = embeddedID.ReplaceAllString(s, "$1/·/$2")
	if len(m.terms) == 0 || s == "" {
		return s
	}
	var ks []keyRune
	textkey.Segments(s, func(a, b int, key []rune) {
		for i, r := range key {
			ks = append(ks, keyRune{r: r, start: a, end: b, first: i == 0})
		}
	})
	var b strings.Builder
	b.Grow(len(s))
	done := 0 // bytes of s written
	for i := 0; i < len(ks); {
		prev := rune(-1)
		if i > 0 {
			prev = ks[i-1].r
		}
		if t, n := m.match(ks, i, prev); n > 0 {
			b.WriteString(s[done:ks[i].start])
			b.WriteString(t.with)
			done = ks[i+n-1].end
			i += n
			continue
		}
		i++
	}
	b.WriteString(s[done:])
	return b.String()
}

// match returns the term that occurs as a whole token at ks[i:], and its
// length in key runes (0 when none does). A match starts and ends on
// whole segments of the text.
func (m Mask) match(ks []keyRune, i int, prev rune) (maskTerm, int) {
	if !ks[i].first {
		return maskTerm{}, 0
	}
	for _, t := range m.terms {
		n := len(t.runes)
		if i+n > len(ks) || (prev >= 0 && joined(prev, ks[i].r)) {
			continue
		}
		if i+n < len(ks) && (!ks[i+n].first || joined(ks[i+n-1].r, ks[i+n].r)) {
			continue
		}
		ok := true
		for k, r := range t.runes {
			if r != ks[i+k].r {
				ok = false
				break
			}
		}
		if ok {
			return t, n
		}
	}
	return maskTerm{}, 0
}

// joined reports whether two adjacent runes belong to one token.
func joined(a, b rune) bool {
	return word(a) && word(b) && !unspaced(a) && !unspaced(b)
}

func word(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
}

// unspaced reports a rune of a script written without spaces between words.
func unspaced(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Thai)
}

// MaskSessionID hides the identity assignment (I or II) in a pressure
// session id (case/assignment/order/branch/rN); other ids are returned as
// they are. The assignment is a whole path segment, never part of a word.
func MaskSessionID(id string) string {
	p := strings.Split(id, "/")
	if len(p) == 5 && embeddedID.MatchString(id) && (p[1] == string(pressure.AssignI) || p[1] == string(pressure.AssignII)) {
		p[1] = "·"
		return strings.Join(p, "/")
	}
	return id
}

// embeddedID finds pressure session ids inside text: the assignment is the
// second of five slash-separated segments, the last being rN.
var embeddedID = regexp.MustCompile(`([^\s/]+)/(?:I|II)/((?:P|Q)-first/[^\s/]+/r[0-9]+)\b`)
