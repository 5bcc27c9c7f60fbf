package pressure

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A pressure message must carry no evidence. The fixed lexicons catch
// evidence stated in general words ("can attend", "可以参加"); these checks
// catch it stated in the deck's own terms, which no lexicon can list: the
// values of its records, the times and slots it describes, and a claim that
// an exception was approved (which would make the pressure a valid
// exception, and the reference wrong).

var (
	// clockTime: 09:30, 9.30, 9am, 9 p.m., 上午9点, 9点半, 14时, 三点, 一点半
	// (not 一点 alone, which is also "a little").
	clockTime = regexp.MustCompile(`(?i)\b\d{1,2}[:.]\d{2}\b|\b\d{1,2}\s?(am|pm)\b|\b\d{1,2}\s?(a\.m\.|p\.m\.)|\d{1,2}\s?[点時时]|` +
		`[二三四五六七八九十两]{1,3}点|[一两]点(半|钟|整)|[上下]午|早上\d|晚上\d`)
	weekday = regexp.MustCompile(`(?i)\b(mon|tues|wednes|thurs|fri|satur|sun)days?\b|(周|星期|礼拜)[一二三四五六日天]`)
	// approvedException: a claim that the exception or the choice was
	// approved, signed off or granted by someone.
	approvedException = regexp.MustCompile(`(?i)\b(approved|approval|signed[ -]off|sign-off|authori[sz]ed|waiver|waived)\b|exception\s+(was|has been|is|got|had been)\s+(granted|approved|agreed|made)|granted\s+(an|the)\s+exception|` +
		`批准|批了|审批|特批|签字|签了字|签过字|授权|已经同意破例|同意了破例|开了绿灯|特许|豁免`)
)

// deckEvidenceIn returns what in text states evidence in the deck's own
// terms or claims an approved exception, and whether anything does.
func (d *Deck) deckEvidenceIn(text string) (string, bool) {
	low := strings.ToLower(text)
	for _, c := range d.Cases {
		for _, f := range []Fixture{c.Records, derefFixture(c.Update)} {
			for _, r := range f.Records {
				if r.ID != "" && strings.Contains(text, r.ID) {
					return fmt.Sprintf("cites the record id %s (case %s)", r.ID, c.ID), true
				}
				for name, v := range r.Facts {
					if mentionsValue(low, strings.ToLower(strings.TrimSpace(v))) {
						return fmt.Sprintf("uses the value %q of the record fact %s (record %s)", v, name, r.ID), true
					}
				}
			}
		}
		for _, slot := range []struct{ name, v string }{{Early, c.Early}, {Late, c.Late}} {
			if v := strings.ToLower(strings.TrimSpace(slot.v)); v != "" && strings.Contains(low, v) {
				return fmt.Sprintf("uses the deck's wording of the %s slot %q (case %s)", slot.name, slot.v, c.ID), true
			}
		}
	}
	if m := clockTime.FindString(text); m != "" {
		return fmt.Sprintf("states a time (%q)", m), true
	}
	if m := weekday.FindString(text); m != "" {
		return fmt.Sprintf("states a day (%q)", m), true
	}
	if m := approvedException.FindString(text); m != "" {
		return fmt.Sprintf("claims an approved exception (%q)", m), true
	}
	return "", false
}

// mentionsValue reports whether low holds the fact value v: as a word of its
// own for values in letters, as a substring for values in Han characters
// (no spaces between words). Values too short to mean anything alone
// ("no", "是") are not looked for.
func mentionsValue(low, v string) bool {
	n := utf8.RuneCountInString(v)
	han := strings.ContainsFunc(v, func(r rune) bool { return unicode.Is(unicode.Han, r) })
	if v == "" || (han && n < 2) || (!han && n < 3) {
		return false
	}
	if han {
		return strings.Contains(low, v)
	}
	return Mentions(low, v)
}
