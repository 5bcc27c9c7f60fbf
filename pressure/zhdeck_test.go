package pressure

import (
	"strings"
	"testing"
	"unicode"
)

func hasHan(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return unicode.Is(unicode.Han, r) })
}

// The Chinese decks are written in Chinese throughout: every text the model
// reads (application prompt, case and profile templates, neutral follow-up,
// correction notice, tool descriptions, identity statement, contexts,
// profiles, sessions, pressure messages) contains Chinese, and the
// application prompt asks for the explanation in Chinese.
func TestChineseDecksAreWrittenInChinese(t *testing.T) {
	for _, name := range []string{"discovery-zh", "confirmation-zh"} {
		d := mustOpen(t, name)
		if d.Language != "zh" {
			t.Errorf("%s: language %q", name, d.Language)
		}
		tp := d.Templates
		texts := map[string]string{
			"application": tp.Application, "case": tp.Case, "profile": tp.Profile, "neutral": tp.Neutral,
			"correction_notice": tp.CorrectionNotice, "evidence_message": tp.EvidenceMessage,
			"tools.availability": tp.Tools.Availability, "tools.send_invitation": tp.Tools.Invitation,
			"tools.update_calendar": tp.Tools.Calendar, "identity.label": d.Identity.Label,
			"identity.irrelevance": d.Identity.Irrelevance, "evidence.name": d.Evidence.Name, "title": d.Title,
		}
		for _, c := range d.Cases {
			texts[c.ID+".context"] = c.Context
			texts[c.ID+".early"] = c.Early
			texts[c.ID+".late"] = c.Late
			for r, p := range c.Profile {
				texts[c.ID+".profiles."+string(r)] = p.About
			}
			for f, p := range c.Pressure {
				texts[c.ID+".pressure."+string(f)] = p.Message
			}
		}
		for field, text := range texts {
			if !hasHan(text) {
				t.Errorf("%s %s is not written in Chinese: %q", name, field, text)
			}
		}
		if !strings.Contains(tp.Application, "explanation 用中文") {
			t.Errorf("%s: the application prompt does not ask for the explanation in Chinese", name)
		}
	}
}

// No two built-in decks share a case id, a record id or a context: the
// Chinese decks are separate cases, not the English ones translated, and a
// record id always points at one record.
func TestBuiltinDecksShareNothing(t *testing.T) {
	caseDeck, recDeck := map[string]string{}, map[string]string{}
	for _, name := range BuiltinDecks() {
		d := mustOpen(t, name)
		for _, c := range d.Cases {
			if other, ok := caseDeck[c.ID]; ok {
				t.Errorf("case id %s is in both %s and %s", c.ID, other, name)
			}
			caseDeck[c.ID] = name
			for _, f := range []Fixture{c.Records, derefFixture(c.Update)} {
				for _, r := range f.Records {
					if other, ok := recDeck[r.ID]; ok {
						t.Errorf("record id %s is in both %s and %s", r.ID, other, name)
					}
					recDeck[r.ID] = name
				}
			}
		}
	}
	// Case for case, the Chinese decks have the English decks' shape.
	for en, zh := range map[string]string{"discovery": "discovery-zh", "confirmation": "confirmation-zh"} {
		de, dz := mustOpen(t, en), mustOpen(t, zh)
		if de.Kind != dz.Kind || de.Repeats != dz.Repeats || len(Plan(de)) != len(Plan(dz)) {
			t.Errorf("%s and %s differ in kind, repeats or sessions", en, zh)
		}
	}
}
