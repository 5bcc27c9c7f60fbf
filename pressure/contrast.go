package pressure

import (
	"fmt"
	"strings"

	"github.com/buildlab/budge/textkey"
	"unicode"
	"unicode/utf8"
)

// Contrast is a synthetic identity contrast declared for a run on top of its
// deck (seed section 3): the two values the model sees for conditions X and
// Y, the reviewer who approved them for the intended context, and optionally
// the name of the field that shows them. The deck file is not edited: the
// run records the contrast in its manifest, and every reader of the run
// applies it to the stored deck (WithContrast).
type Contrast struct {
	Field    string `json:"field,omitempty"` // replaces identity.label when set
	X        string `json:"x"`
	Y        string `json:"y"`
	Reviewer string `json:"reviewer,omitempty"` // the deck's reviewer when empty
}

// ParseIdentities reads "LABEL_X,LABEL_Y" as given to `budge run
// --identities`.
func ParseIdentities(s string) (x, y string, err error) {
	parts := strings.Split(s, ",")
	if len(parts) != 2 {
		return "", "", fmt.Errorf("--identities takes two labels separated by one comma (X first, then Y), got %q", s)
	}
	return strings.TrimSpace(parts[0]), strings.TrimSpace(parts[1]), nil
}

// WithContrast returns a copy of the deck that shows the contrast c, or the
// problems that stop the deck from showing it: empty or equal labels, labels
// that would break a profile line, and profile ids that the new labels make
// confusable.
func (d *Deck) WithContrast(c Contrast) (*Deck, error) {
	e := *d
	id := &e.Identity
	if f := strings.TrimSpace(c.Field); f != "" {
		id.Label = f
	}
	id.X, id.Y = strings.TrimSpace(c.X), strings.TrimSpace(c.Y)
	if r := strings.TrimSpace(c.Reviewer); r != "" {
		id.Reviewer = r
	}
	var ps Problems
	bad := func(field, format string, args ...any) {
		ps = append(ps, Problem{File: "--identities", Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	switch {
	case id.X == "" || id.Y == "":
		bad("identity", "both labels are required, X first, then Y (got %q, %q)", id.X, id.Y)
	case id.X == id.Y:
		bad("identity.y", "the two labels must differ (both are %q)", id.X)
	case textkey.Same(id.X, id.Y):
		bad("identity.y", "the two labels must differ in what they show: %+q and %+q read the same (they differ only in letter case, Unicode form, "+
			"full-width letters or invisible characters), so neither a reader nor the review's mask can tell them apart", id.X, id.Y)
	}
	for _, v := range []struct{ field, v string }{{"identity.x", id.X}, {"identity.y", id.Y}, {"identity.label", id.Label}} {
		if strings.ContainsAny(v.v, "\n:：") {
			bad(v.field, "%q cannot hold a line break or a colon: each profile line ends with \"<field>: <label>\"", v.v)
		}
	}
	e.checkProfileIDs(func(path, caseID, format string, args ...any) {
		ps = append(ps, Problem{File: d.Path, Line: d.nearestLine(path), Field: strings.TrimPrefix(path, "$."), Case: caseID, Msg: fmt.Sprintf(format, args...)})
	})
	if len(ps) > 0 {
		return nil, ps
	}
	return &e, nil
}

// IdentityConditions maps each displayed identity value to its condition,
// "X" or "Y": what the simulator is told so that its planted identity
// effects follow the labels the model sees.
func (d *Deck) IdentityConditions() map[string]string {
	return map[string]string{d.Identity.X: "X", d.Identity.Y: "Y"}
}

// NoIdentityContrast says, in one line, why a run with this identity field
// cannot show an identity asymmetry, or returns "" when it can: the values
// are placeholders (single letters such as X and Y, which no model reads as
// an identity), or no reviewer approved the contrast.
func (id Identity) NoIdentityContrast() string {
	var why []string
	if placeholderValue(id.X) || placeholderValue(id.Y) {
		why = append(why, fmt.Sprintf("the identity values are placeholders (%q, %q), so the model sees no identity to treat differently", id.X, id.Y))
	}
	if unassignedReviewer(id.Reviewer) {
		why = append(why, fmt.Sprintf("no reviewer approved the contrast (reviewer %q)", shorten(id.Reviewer, 40)))
	}
	if len(why) == 0 {
		return ""
	}
	return strings.Join(why, "; and ") + "; order and agreeableness can be measured, an identity asymmetry cannot (declare a contrast with budge run --identities X_LABEL,Y_LABEL --identity-reviewer NAME)"
}

func placeholderValue(v string) bool {
	v = strings.TrimSpace(v)
	if v == "" {
		return true
	}
	r, n := utf8.DecodeRuneInString(v)
	return n == len(v) && unicode.IsLetter(r)
}

// unassignedReviewer: empty, or a note that nobody is assigned yet.
func unassignedReviewer(r string) bool {
	low := strings.ToLower(strings.TrimSpace(r))
	for _, p := range []string{"unassigned", "not assigned", "未指定", "待定"} {
		if strings.HasPrefix(low, p) {
			return true
		}
	}
	switch low {
	case "", "-", "none", "n/a", "tbd", "todo", "无":
		return true
	}
	return false
}

func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// AnswerKey maps every record id of the deck to the selection its case
// declares once that record is published: the displayed id of the reference
// profile (or needs-human-choice) for the initial evidence, of the
// reference after correction for the update. Only sim:oracle is handed it.
func (d *Deck) AnswerKey() map[string]string {
	key := map[string]string{}
	show := func(c *Case, ref string) string {
		if ref == HumanChoice {
			return HumanChoice
		}
		return c.Profile[Role(ref)].ID
	}
	for i := range d.Cases {
		c := &d.Cases[i]
		for _, r := range c.Records.Records {
			key[r.ID] = show(c, c.Ref)
		}
		if c.Update != nil {
			for _, r := range c.Update.Records {
				key[r.ID] = show(c, c.RefAfter)
			}
		}
	}
	return key
}
