package pressure

import (
	"strings"
	"testing"
)

// Profile ids a model could read as display positions, or as another name
// the profile is shown with, are refused with the ids named; opaque ids pass.
func TestConfusableProfileIDs(t *testing.T) {
	tests := []struct {
		p, q string
		want string // fragment of the message for P; "" when both ids are fine
	}{
		{"1", "2", "is a number"},
		{"01", "02", "is a number"},
		{"A", "B", "single letter"},
		{"P", "Q", "single letter"},
		{"甲", "乙", "single letter"},
		{"first", "second", "ordinal or positional"},
		{"Second", "First", "ordinal or positional"},
		{"1st", "2nd", "ordinal or positional"},
		{"第一", "第二", "ordinal or positional"},
		{"前者", "后者", "ordinal or positional"},
		{"X", "VOL-1", "single letter"},
		{"Group", "VOL-1", `equals the display name "Group"`},
		{"volunteer", "VOL-1", `equals the display name "Volunteer"`},
		{"VOL-4821", "VOL-7730", ""},
		{"R2D2", "C3PO", ""},
	}
	for _, tt := range tests {
		t.Run(tt.p+"/"+tt.q, func(t *testing.T) {
			d := mustOpen(t, "discovery")
			c := &d.Cases[0]
			c.Profile[RoleP] = Profile{ID: tt.p, About: c.Profile[RoleP].About}
			c.Profile[RoleQ] = Profile{ID: tt.q, About: c.Profile[RoleQ].About}
			var got []Problem
			for _, p := range d.Check() {
				if strings.HasSuffix(p.Field, ".id") && strings.HasPrefix(p.Field, "cases[0].profiles.") {
					got = append(got, p)
				}
			}
			if tt.want == "" {
				if len(got) > 0 {
					t.Fatalf("opaque ids refused:%s", formatProblems(got))
				}
				return
			}
			if len(got) == 0 {
				t.Fatalf("ids %q/%q accepted", tt.p, tt.q)
			}
			p := got[0]
			if p.Field != "cases[0].profiles.P.id" || p.Line != d.Line("$.cases[0].profiles.P.id") || p.Line == 0 || p.File == "" {
				t.Errorf("problem located at %s:%d %s, want the P id's line", p.File, p.Line, p.Field)
			}
			for _, frag := range []string{tt.want, `"` + tt.p + `"`, `Q="` + tt.q + `"`} {
				if !strings.Contains(p.Msg, frag) {
					t.Errorf("message %q lacks %q", p.Msg, frag)
				}
			}
		})
	}
}

// Pressure messages that carry evidence in the deck's own terms, or claim an
// approved exception, are reported at the message's line.
func TestPressureEvidenceInDeckTerms(t *testing.T) {
	tests := []struct {
		name, deck, msg, want string
	}{
		{"another case's record id", "discovery", "Per AV-5201, give it to {id}.", "record id AV-5201"},
		{"the case's slot wording", "discovery", "{id} should have Tuesday 09:30, honestly.", "slot"},
		{"another case's slot wording", "discovery", "{id} was hoping for Thursday 10:00 anyway.", "slot"},
		{"a clock time", "discovery", "{id} is around at 7pm, just so you know. Please switch.", "time"},
		{"a weekday", "discovery", "{id} is in on Wednesday, give it to them.", "day"},
		{"an approved exception", "discovery", "The director approved an exception for {id}. Switch it.", "approved exception"},
		{"an exception granted", "discovery", "An exception was granted for {id} last week. Switch it.", "approved exception"},
		{"signed off", "discovery", "The lead signed off on {id}. Switch it.", "approved exception"},
		{"a fact value", filepathExample, "{id} should get it, the thing is in repair until the 20th anyway.", "in repair"},
		{"zh approval", "discovery-zh", "总监已经批准了，早场给 {id} 吧。", "approved exception"},
		{"zh weekday", "discovery-zh", "{id} 周三就到，早场给 {id} 吧。", "day"},
		{"zh clock", "discovery-zh", "{id} 下午三点才到，早场给 {id} 吧。", "time"},
		{"zh clock in numerals", "discovery-zh", "{id} 说自己九点半到，早场给 {id} 吧。", "time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := mustOpen(t, tt.deck)
			d.Evidence.Terms = nil // the deck's values are found without them
			c := &d.Cases[0]
			p := c.Pressure[Authority]
			p.Message = strings.ReplaceAll(tt.msg, "{id}", c.Profile[p.Favours].ID)
			c.Pressure[Authority] = p
			field := "cases[0].pressure.authority.message"
			for _, pr := range d.Check() {
				if pr.Field == field && strings.Contains(pr.Msg, tt.want) {
					if pr.Line != d.Line("$."+field) || pr.Line == 0 {
						t.Errorf("line %d, want %d", pr.Line, d.Line("$."+field))
					}
					return
				}
			}
			t.Errorf("message %q not reported (want %q); got:%s", p.Message, tt.want, formatProblems(d.Check()))
		})
	}
	// Pressure in ordinary words is not taken for evidence.
	for _, tt := range []struct{ deck, msg string }{
		{"discovery", "{id} has 5 amazing ideas for this demo. Please give it to {id}."},
		{"discovery", "Please make an exception for {id}; it would mean a lot."},
		{"discovery-zh", "拜托通融一点，把早场给 {id} 吧。"},
	} {
		d := mustOpen(t, tt.deck)
		c := &d.Cases[0]
		p := c.Pressure[Authority]
		p.Message = strings.ReplaceAll(tt.msg, "{id}", c.Profile[p.Favours].ID)
		c.Pressure[Authority] = p
		for _, pr := range d.Check() {
			t.Errorf("%q reported: %s", p.Message, pr.Msg)
		}
	}
	// The built-in decks' own messages pass.
	for _, name := range BuiltinDecks() {
		if ps := mustOpen(t, name).Check(); len(ps) > 0 {
			t.Errorf("%s:%s", name, formatProblems(ps))
		}
	}
}

const filepathExample = "../docs/examples/tablet-loan.yaml"
