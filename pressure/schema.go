package pressure

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Schema returns the JSON Schema (draft 2020-12) of a deck file, generated
// from the Deck type by reflection: the YAML keys, which of them are
// required (those without omitempty), the enumerations and a description of
// every field. Editors use it to validate a deck while it is written; deck
// check stays the authority, since it also checks the rule, the balance and
// the wording, which no schema can.
func Schema() []byte {
	g := schemaGen{defs: map[string]any{}}
	root := g.object(reflect.TypeFor[Deck]())
	root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	root["title"] = "budge pressure deck (" + DeckFormat + ")"
	root["description"] = typeNotes["Deck"]
	root["$defs"] = g.defs
	b, err := json.MarshalIndent(root, "", "  ")
	if err != nil {
		panic(err) // only maps, slices and strings: cannot fail
	}
	return append(b, '\n')
}

// note annotates one field of the schema, keyed "Type.yaml_key".
type note struct {
	desc    string
	enum    []string // allowed values (of the items, for a list)
	pattern string
	min     int // minimum of an integer, when > 0
}

var typeNotes = map[string]string{
	"Deck":       "A pressure-and-correction case deck: the wording shown to the model, the decision rule, the synthetic identity contrast and the cases. Documented in docs/deck-format.md.",
	"Identity":   "The one synthetic identity contrast of the deck. Version I shows P with x and Q with y; version II swaps them.",
	"Source":     "The trusted, read-only evidence service the model reads with the get_availability tool.",
	"Templates":  "All the wording shown to the model, in the deck's language. Placeholders are written {like_this}.",
	"ToolText":   "Descriptions of the three tools offered to the model, in the deck's language.",
	"Case":       "One base case. budge crosses it with both identity assignments and both presentation orders.",
	"Profile":    "One of the two people of a case, as shown to the model.",
	"Fixture":    "One published version of the evidence records.",
	"Adaptation": "Where an adapted deck came from and who reviewed its wording.",
	"Record":     "One evidence record about one profile.",
	"Pressure":   "One unsupported pressure message, sent alone after a correct first answer.",
}

var fieldNotes = map[string]note{
	"Deck.format":         {desc: "The deck format and its version.", enum: []string{DeckFormat}},
	"Deck.name":           {desc: "Short name of the deck, shown in reports and stored with every run."},
	"Deck.title":          {desc: "One-line human title."},
	"Deck.kind":           {desc: "discovery (the deck used to find failures) or confirmation (a separately written deck, frozen before a revised prompt is evaluated).", enum: []string{"discovery", "confirmation"}},
	"Deck.language":       {desc: "Language tag of every text in the deck (en, zh, ...). Runs record it; results in different languages are never pooled.", pattern: languageTag.String()},
	"Deck.policy_version": {desc: "Version of the written rule the application prompt states; recorded with every session."},
	"Deck.rule":           {desc: "The rule that computes every reference: availability (built in, verified by deck check), or explicit (every reference is declared and nothing verifies it; checks and reports say so).", enum: RuleNames()},
	"Deck.repeats":        {desc: "How many times every branch of every variant runs.", min: 1},
	"Deck.identity":       {desc: "The synthetic identity contrast."},
	"Deck.evidence":       {desc: "The trusted evidence service."},
	"Deck.templates":      {desc: "The wording shown to the model."},
	"Deck.arms":           {desc: "Optional experimental arms added to the plan: user-claim (a user asserts the correction's change with no trusted update; determinate cases) and tie-shift (the pressure families on ambiguous cases, which then need pressure messages). Without arms the plan is the protocol's.", enum: Arms},
	"Deck.adaptation":     {desc: "Set when the deck was adapted from another deck rather than written independently in its language (a translation or close adaptation): every report then says so and names who reviewed the wording."},
	"Deck.cases":          {desc: "The base cases: determinate cases half with reference P and half with reference Q, plus ambiguous cases."},

	"Adaptation.from":             {desc: "The deck this one was adapted from."},
	"Adaptation.what":             {desc: "What was kept from it and what was written anew."},
	"Adaptation.wording_reviewer": {desc: "Who reviewed the wording in this deck's language; empty while nobody has (reports say so)."},

	"Identity.label":       {desc: "How the field is introduced in each profile line, e.g. \"Group\"; an ordinary profile field, not a label of an experiment."},
	"Identity.x":           {desc: "The displayed value of condition X."},
	"Identity.y":           {desc: "The displayed value of condition Y; must differ from x."},
	"Identity.reviewer":    {desc: "Who reviewed the contrast for the intended context."},
	"Identity.irrelevance": {desc: "The statement, shown with every case, that the identity field does not bear on the rule."},

	"Source.name":       {desc: "Name of the evidence service, shown in tool results and evidence messages."},
	"Source.provenance": {desc: "Who maintains the records and how they are authenticated."},
	"Source.terms":      {desc: "Words that state evidence in this deck's domain; deck check reports a pressure message or neutral follow-up that uses one (in addition to the built-in lexicon of the deck's language)."},

	"Templates.application":       {desc: "The system prompt: the product, the written rule, the source-priority rule, the tool policy and the answer format."},
	"Templates.case":              {desc: "The first user message. Placeholders: {context} {profiles} (required), {early} {late} {irrelevance}."},
	"Templates.profile":           {desc: "One profile line. Placeholders: {id} {identity} (required), {about} {identity_label}."},
	"Templates.neutral":           {desc: "The neutral follow-up: asks for the recommendation again, names no profile and adds no evidence."},
	"Templates.correction_notice": {desc: "Tells the model that the evidence service published an update, without carrying it. Placeholder: {version}."},
	"Templates.evidence_message":  {desc: "Wraps evidence for models that cannot call tools. Placeholders: {json} (required), {source}."},
	"Templates.user_claim":        {desc: "The user-claim arm's message: a user asserts the change the correction makes, without a trusted update. Placeholder: {changes} (required). Empty: the built-in wording of the deck's language (en, zh)."},
	"Templates.user_claim_change": {desc: "One asserted change, per record of the correction. Placeholders: {id} (required), {sessions}."},
	"Templates.tools":             {desc: "Tool descriptions."},

	"ToolText.availability":    {desc: "Description of get_availability, the read-only evidence tool."},
	"ToolText.send_invitation": {desc: "Description of send_invitation, offered but forbidden."},
	"ToolText.update_calendar": {desc: "Description of update_calendar, offered but forbidden."},

	"Case.id":                         {desc: "Unique case id (letters, digits, dots, dashes, underscores); part of every session id and pair key.", pattern: caseIDPattern.String()},
	"Case.kind":                       {desc: "determinate (the rule picks P or Q) or ambiguous (the rule cannot separate them).", enum: []string{Determinate, Ambiguous}},
	"Case.context":                    {desc: "The scene of the case, shown as {context}."},
	"Case.early":                      {desc: "How the contested (early) option is described; required when templates.case shows {early}."},
	"Case.late":                       {desc: "How the other option is described; required when templates.case shows {late}."},
	"Case.profiles":                   {desc: "The two profiles, keyed P and Q."},
	"Case.evidence":                   {desc: "The records published when the session starts."},
	"Case.correction":                 {desc: "The verified update published in the correction branch (determinate cases only, required there): a new version with new record ids."},
	"Case.reference":                  {desc: "The correct answer before correction: P or Q for a determinate case, needs-human-choice for an ambiguous one.", enum: []string{"P", "Q", HumanChoice}},
	"Case.reference_after_correction": {desc: "The correct answer once the update is published (determinate cases only, required there); must differ from reference.", enum: []string{"P", "Q"}},
	"Case.pressure":                   {desc: "One message per pressure family (determinate cases only, all three required there), each favouring the less eligible profile."},

	"Profile.id":    {desc: "The opaque identifier shown to the model and used in its answer, such as VOL-4821: no spaces, not digits, a single letter, an ordinal word or a display name."},
	"Profile.about": {desc: "What the profile says about the person; required when templates.profile shows {about}."},

	"Fixture.version":    {desc: "Version of the records; an update must publish a new one."},
	"Fixture.provenance": {desc: "Who authenticated this version (required for a correction)."},
	"Fixture.records":    {desc: "At least one record for P and one for Q (exactly one each for the availability rule)."},

	"Record.id":       {desc: "Record id, unique across the deck; corrections publish new ids."},
	"Record.profile":  {desc: "The profile the record is about."},
	"Record.sessions": {desc: "The sessions the person can attend (required by the availability rule).", enum: []string{Early, Late}},
	"Record.facts":    {desc: "Facts of the deck's own domain, shown to the model as they are (for decks with rule explicit)."},

	"Pressure.favours": {desc: "The profile the message argues for: always the less eligible one."},
	"Pressure.message": {desc: "The message. It names the profile it favours and carries no evidence."},
	"Pressure.again":   {desc: "Optional further wordings of the same pressure, sent on turns 2, 3, ... of a run with --turns K (reused in order when K exceeds the wordings); each is checked like message."},
}

// keyEnums are the keys of maps keyed by a named type.
var keyEnums = map[reflect.Type][]string{
	reflect.TypeFor[Role]():   {string(RoleP), string(RoleQ)},
	reflect.TypeFor[Family](): {string(Authority), string(Emotional), string(Consensus)},
}

type schemaGen struct{ defs map[string]any }

// ref returns a reference to the named struct type, defining it once.
func (g *schemaGen) ref(t reflect.Type) map[string]any {
	if _, ok := g.defs[t.Name()]; !ok {
		g.defs[t.Name()] = nil // breaks cycles while the definition is built
		def := g.object(t)
		def["description"] = typeNotes[t.Name()]
		g.defs[t.Name()] = def
	}
	return map[string]any{"$ref": "#/$defs/" + t.Name()}
}

func (g *schemaGen) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	required := []string{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		n, ok := fieldNotes[t.Name()+"."+name]
		if !ok {
			panic(fmt.Sprintf("pressure: field %s.%s has no schema note", t.Name(), name))
		}
		s := g.of(f.Type)
		s["description"] = n.desc
		target := s
		if s["type"] == "array" {
			target = s["items"].(map[string]any)
		}
		if n.enum != nil {
			target["enum"] = n.enum
		}
		if n.pattern != "" {
			s["pattern"] = n.pattern
		}
		if n.min > 0 {
			s["minimum"] = n.min
		}
		props[name] = s
		if opts != "omitempty" {
			required = append(required, name)
		}
	}
	return map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false}
}

func (g *schemaGen) of(t reflect.Type) map[string]any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		if e, ok := keyEnums[t]; ok {
			return map[string]any{"type": "string", "enum": e}
		}
		return map[string]any{"type": "string"}
	case reflect.Int:
		return map[string]any{"type": "integer"}
	case reflect.Slice:
		return map[string]any{"type": "array", "items": g.of(t.Elem())}
	case reflect.Map:
		keys, ok := keyEnums[t.Key()]
		if !ok {
			return map[string]any{"type": "object", "additionalProperties": g.of(t.Elem())}
		}
		props := map[string]any{}
		for _, k := range keys {
			props[k] = g.of(t.Elem())
		}
		m := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
		if t.Key() == reflect.TypeFor[Role]() {
			m["required"] = keys // a case always has both profiles
		}
		return m
	case reflect.Struct:
		return g.ref(t)
	}
	panic(fmt.Sprintf("pressure: no schema for %s", t))
}
