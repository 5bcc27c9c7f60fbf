package pressure

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/buildlab/budge/textkey"
)

// A profile id is what the model writes to select a profile, so it must not
// be readable as a position in the list or as another name the profile is
// shown with: a model answering "the first one" or "1" would then be scored
// as if it had chosen the record behind that id, and an order effect would
// pass for a choice (seed section 6: selection maps to the record, never to
// the display position).

// ordinalWords are ids a model could read as display positions: ordinals,
// small cardinals, and words for "the one above / the other one", in the
// languages budge has decks in. They are compared lower-cased and whole.
var ordinalWords = map[string]bool{
	"first": true, "second": true, "third": true, "fourth": true, "fifth": true,
	"sixth": true, "seventh": true, "eighth": true, "ninth": true, "tenth": true,
	"one": true, "two": true, "three": true, "four": true, "five": true,
	"former": true, "latter": true, "top": true, "bottom": true, "upper": true, "lower": true,
	"left": true, "right": true, "above": true, "below": true, "next": true, "last": true, "other": true,
	"ii": true, "iii": true, "iv": true, "vi": true, "vii": true, "viii": true, "ix": true,
	// Chinese: the heavenly stems used as "party A / party B", small
	// numerals, "the former / the latter", "above / below".
	"甲": true, "乙": true, "丙": true, "丁": true, "一": true, "二": true, "三": true, "两": true,
	"前者": true, "后者": true, "前一位": true, "后一位": true, "上": true, "下": true, "上面": true, "下面": true,
	"甲方": true, "乙方": true, "第一位": true, "第二位": true,
}

var (
	digitsOnly  = regexp.MustCompile(`^[\p{Nd}\s._-]+$`)
	ordinalForm = regexp.MustCompile(`(?i)^(#?\d+(st|nd|rd|th)?|no\.?\s*\d+|第[0-9一二三四五六七八九十百]+[位个名号]?)$`)
)

// confusableID says why a profile id could be read as a display position,
// or "" when it cannot.
func confusableID(id string) string {
	s := strings.TrimSpace(id)
	low := strings.ToLower(s)
	switch {
	case s == "":
		return ""
	case digitsOnly.MatchString(s):
		return "is a number, which reads as a position in the list"
	case utf8.RuneCountInString(s) == 1 && unicode.IsLetter([]rune(s)[0]):
		return "is a single letter, which reads as a position (A/B) or a placeholder (P/Q)"
	case ordinalWords[low] || ordinalForm.MatchString(s):
		return "is an ordinal or positional word, which reads as a position in the list"
	}
	return ""
}

// displayNames are the other names a deck shows with a profile: the values
// and label of the identity field, and the noun the profile template puts
// before the id ("Volunteer" in "- Volunteer {id}: ..."). An id equal to one
// of them makes "the volunteer" or "X" ambiguous between an id and a name.
func (d *Deck) displayNames() []string {
	names := []string{d.Identity.X, d.Identity.Y, d.Identity.Label}
	if before, _, ok := strings.Cut(d.Templates.Profile, "{id}"); ok {
		fields := strings.FieldsFunc(before, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
		if len(fields) > 0 {
			names = append(names, fields[len(fields)-1])
		}
	}
	return names
}

// checkProfileIDs reports every profile id that is confusable with a display
// position or equal to a display name, naming the ids.
func (d *Deck) checkProfileIDs(add func(path, caseID, format string, args ...any)) {
	names := d.displayNames()
	for i, c := range d.Cases {
		for _, r := range []Role{RoleP, RoleQ} {
			id := c.Profile[r].ID
			path := fmt.Sprintf("$.cases[%d].profiles.%s.id", i, r)
			if why := confusableID(id); why != "" {
				add(path, c.ID, "profile id %q %s: use an opaque record-like id such as VOL-4821 (ids of this case: %s)", id, why, idPair(c))
				continue
			}
			for _, n := range names {
				if n != "" && textkey.Same(n, id) {
					add(path, c.ID, "profile id %q equals the display name %q: use an opaque record-like id such as VOL-4821 (ids of this case: %s)", id, n, idPair(c))
					break
				}
			}
		}
	}
}

func idPair(c Case) string {
	p, q := c.ProfileIDs()
	return fmt.Sprintf("P=%q, Q=%q", p, q)
}
