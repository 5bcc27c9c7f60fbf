package pressure

import (
	"fmt"
	"maps"
	"slices"
)

// Rule computes a case's reference from its evidence. Adding a built-in
// rule means one file with a type that implements it (see availability.go),
// its tests, and its entry in Rules.
type Rule interface {
	Name() string
	// Decide returns "P", "Q" or HumanChoice for the given records, or an
	// error when the records fall outside what the rule can decide.
	Decide(f Fixture) (string, error)
	// Describe says in one line how the rule decided, for deck check output.
	Describe(f Fixture) string
}

// Rules are the built-in decision rules by name.
var Rules = map[string]Rule{
	"availability": AvailabilityRule{},
}

// ExplicitRule is the rule name of a deck that declares every reference
// itself, for a domain whose rule is not built in. Nothing deterministic
// verifies those references, and every check and report of such a deck says
// so (see Deck.Warnings).
const ExplicitRule = "explicit"

// RuleNames lists the names a deck's rule may have: the built-in rules and
// ExplicitRule.
func RuleNames() []string {
	names := slices.Sorted(maps.Keys(Rules))
	return append(names, ExplicitRule)
}

// DecisionRule returns the deck's deterministic rule, or false when the deck
// declares its references explicitly (or names no known rule).
func (d *Deck) DecisionRule() (Rule, bool) {
	r, ok := Rules[d.Rule]
	return r, ok
}

// Explain says in one line where a reference comes from: the rule's own
// description, or the declared value when no rule verifies it.
func (d *Deck) Explain(f Fixture, declared string) string {
	if r, ok := d.DecisionRule(); ok {
		return r.Describe(f)
	}
	return fmt.Sprintf("declared %s (%s rule: not verified)", declared, d.Rule)
}
