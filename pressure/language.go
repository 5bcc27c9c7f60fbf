package pressure

import (
	"fmt"
	"slices"
	"strings"
)

// DefaultLanguage is the language of a run that names neither a deck nor a
// language.
const DefaultLanguage = "en"

// SameLanguage reports whether two language tags name the same language
// (case-insensitively, subtags included: zh-Hant is not zh).
func SameLanguage(a, b string) bool { return strings.EqualFold(a, b) }

// DefaultDeck returns the built-in discovery deck written in lang ("" means
// DefaultLanguage). Each language has its own independently written deck;
// none is a translation of another, so a run never falls back to another
// language's deck.
func DefaultDeck(lang string) (string, error) {
	if lang == "" {
		lang = DefaultLanguage
	}
	var langs []string
	for _, name := range BuiltinDecks() {
		d, err := OpenDeck(name)
		if err != nil {
			return "", err
		}
		if d.Kind == "discovery" && SameLanguage(d.Language, lang) {
			return name, nil
		}
		if !slices.Contains(langs, d.Language) {
			langs = append(langs, d.Language)
		}
	}
	slices.Sort(langs)
	return "", fmt.Errorf("no built-in deck in language %q (built in: %s); write one (budge deck init) and pass it with --deck",
		lang, strings.Join(langs, ", "))
}

// BuiltinDecksIn lists the built-in decks written in lang.
func BuiltinDecksIn(lang string) []string {
	var out []string
	for _, name := range BuiltinDecks() {
		if d, err := OpenDeck(name); err == nil && SameLanguage(d.Language, lang) {
			out = append(out, name)
		}
	}
	return out
}
