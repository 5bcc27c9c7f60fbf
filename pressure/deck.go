package pressure

import (
	"crypto/sha256"
	"encoding/hex"
)

// DeckFormat is the value of a deck file's "format" key.
const DeckFormat = "budge/pressure-deck/v1"

// Role names the two profiles of a case independently of how they are shown.
type Role string

const (
	RoleP Role = "P"
	RoleQ Role = "Q"
)

// Other returns the other role.
func (r Role) Other() Role {
	if r == RoleP {
		return RoleQ
	}
	return RoleP
}

// HumanChoice is the answer a case expects when the rule cannot separate the
// two profiles.
const HumanChoice = "needs-human-choice"

// Case kinds.
const (
	Determinate = "determinate"
	Ambiguous   = "ambiguous"
)

// Deck is a pressure-and-correction case deck as written in YAML.
type Deck struct {
	Format        string `yaml:"format" json:"format"`
	Name          string `yaml:"name" json:"name"`
	Title         string `yaml:"title,omitempty" json:"title"`
	Kind          string `yaml:"kind" json:"kind"` // discovery | confirmation
	Language      string `yaml:"language" json:"language"`
	PolicyVersion string `yaml:"policy_version" json:"policy_version"`
	// Rule names the decision rule that computes every reference: a built-in
	// rule (see Rules) or ExplicitRule, where the references are declared.
	Rule      string    `yaml:"rule" json:"rule"`
	Repeats   int       `yaml:"repeats" json:"repeats"`
	Identity  Identity  `yaml:"identity" json:"identity"`
	Evidence  Source    `yaml:"evidence" json:"evidence"`
	Templates Templates `yaml:"templates" json:"templates"`
	// Arms are optional experimental branches added to the plan (ArmUserClaim,
	// ArmTieShift); without them a deck plans exactly the protocol's sessions.
	Arms []string `yaml:"arms,omitempty" json:"arms,omitempty"`
	// Adaptation, when set, says the deck was adapted from another deck
	// rather than written independently in its language, and who reviewed
	// its wording; every report says so.
	Adaptation *Adaptation `yaml:"adaptation,omitempty" json:"adaptation,omitempty"`
	Cases      []Case      `yaml:"cases" json:"cases"`

	// Hash is the sha256 of the deck file's bytes; Path is where it came from.
	Hash string `yaml:"-" json:"hash"`
	Path string `yaml:"-" json:"path"`
	// lines maps YAML paths ("$.cases[2].reference") to 1-based lines.
	lines map[string]int
}

// Identity declares the one synthetic identity contrast of the deck.
type Identity struct {
	// Label is how the field is introduced in each profile ("Group").
	Label string `yaml:"label" json:"label"`
	// X and Y are the displayed values of the two declared conditions.
	X string `yaml:"x" json:"x"`
	Y string `yaml:"y" json:"y"`
	// Reviewer names who reviewed the contrast for the intended context.
	Reviewer string `yaml:"reviewer" json:"reviewer"`
	// Irrelevance is the statement, shown with each case, that the field
	// does not bear on the rule.
	Irrelevance string `yaml:"irrelevance" json:"irrelevance"`
}

// Adaptation records that a deck was adapted from another one.
type Adaptation struct {
	// From names the deck it was adapted from.
	From string `yaml:"from" json:"from"`
	// What says what was kept from it and what was written anew.
	What string `yaml:"what" json:"what"`
	// WordingReviewer names who reviewed the wording in the deck's
	// language; empty while nobody has.
	WordingReviewer string `yaml:"wording_reviewer" json:"wording_reviewer"`
}

// Source describes the trusted evidence service.
type Source struct {
	Name       string `yaml:"name" json:"name"`
	Provenance string `yaml:"provenance" json:"provenance"`
	// Terms are words that state evidence in the deck's own domain. Deck
	// check reports a pressure message or neutral follow-up that uses one, in
	// addition to the built-in lexicon of the deck's language.
	Terms []string `yaml:"terms,omitempty" json:"terms,omitempty"`
}

// Templates hold all the wording shown to the model, so a deck in another
// language carries its own. Placeholders are written {like_this}.
type Templates struct {
	// Application is the system prompt: the product, the written rule, the
	// source-priority rule, the tool policy and the answer format.
	Application string `yaml:"application" json:"application"`
	// Case is the first user message. Placeholders: {context} {profiles}
	// {early} {late} {irrelevance}.
	Case string `yaml:"case" json:"case"`
	// Profile renders one profile line. Placeholders: {id} {about}
	// {identity_label} {identity}.
	Profile string `yaml:"profile" json:"profile"`
	// Neutral is the neutral follow-up.
	Neutral string `yaml:"neutral" json:"neutral"`
	// CorrectionNotice tells the model that the evidence service published an
	// update, without carrying the update itself. Placeholder: {version}.
	CorrectionNotice string `yaml:"correction_notice" json:"correction_notice"`
	// EvidenceMessage wraps evidence when the model cannot call tools.
	// Placeholders: {source} {json}.
	EvidenceMessage string `yaml:"evidence_message" json:"evidence_message"`
	// UserClaim is the user-claim arm's message: a user asserting the change
	// the verified correction makes, with no trusted update. Placeholder:
	// {changes}, one ClaimChange per record of the correction. Empty: the
	// built-in wording of the deck's language (userClaimDefaults).
	UserClaim   string `yaml:"user_claim,omitempty" json:"user_claim,omitempty"`
	ClaimChange string `yaml:"user_claim_change,omitempty" json:"user_claim_change,omitempty"`
	// Tool descriptions, in the deck's language.
	Tools ToolText `yaml:"tools" json:"tools"`
}

// ToolText describes the three tools the model is offered.
type ToolText struct {
	Availability string `yaml:"availability" json:"availability"`
	Invitation   string `yaml:"send_invitation" json:"send_invitation"`
	Calendar     string `yaml:"update_calendar" json:"update_calendar"`
}

// Case is one base case.
type Case struct {
	ID       string              `yaml:"id" json:"id"`
	Kind     string              `yaml:"kind" json:"kind"` // determinate | ambiguous
	Context  string              `yaml:"context" json:"context"`
	Early    string              `yaml:"early,omitempty" json:"early"` // how the early session is described
	Late     string              `yaml:"late,omitempty" json:"late"`
	Profile  map[Role]Profile    `yaml:"profiles" json:"profiles"`
	Records  Fixture             `yaml:"evidence" json:"evidence"`
	Update   *Fixture            `yaml:"correction,omitempty" json:"correction,omitempty"`
	Ref      string              `yaml:"reference" json:"reference"`
	RefAfter string              `yaml:"reference_after_correction,omitempty" json:"reference_after_correction,omitempty"`
	Pressure map[Family]Pressure `yaml:"pressure,omitempty" json:"pressure,omitempty"`
}

// Profile is one volunteer as shown to the model.
type Profile struct {
	ID    string `yaml:"id" json:"id"` // the opaque identifier shown (VOL-4821)
	About string `yaml:"about,omitempty" json:"about"`
}

// Fixture is one version of the availability records.
type Fixture struct {
	Version    string   `yaml:"version" json:"version"`
	Provenance string   `yaml:"provenance,omitempty" json:"provenance,omitempty"`
	Records    []Record `yaml:"records" json:"records"`
}

// Record is one evidence record. The availability rule reads Sessions;
// decks with explicit references may describe their own domain in Facts.
type Record struct {
	ID       string            `yaml:"id" json:"record_id"`
	Profile  Role              `yaml:"profile" json:"-"`
	Sessions []string          `yaml:"sessions,omitempty" json:"can_attend"`
	Facts    map[string]string `yaml:"facts,omitempty" json:"facts,omitempty"`
}

// Pressure is one unsupported pressure message.
type Pressure struct {
	Favours Role   `yaml:"favours" json:"favours"`
	Message string `yaml:"message" json:"message"`
	// Again are further wordings of the same pressure, for runs of more
	// than one pressure turn (budge run --turns).
	Again []string `yaml:"again,omitempty" json:"again,omitempty"`
}

// Wording is the pressure message of turn t (1-based) of a multi-turn
// session: the message, then each of Again, then the same list again from
// the start when the turns outnumber the wordings.
func (p Pressure) Wording(t int) string {
	all := append([]string{p.Message}, p.Again...)
	return all[(max(t, 1)-1)%len(all)]
}

// Family names a pressure family.
type Family string

const (
	Authority Family = "authority"
	Emotional Family = "emotional"
	Consensus Family = "consensus"
)

// Families lists the pressure families in report order.
var Families = []Family{Authority, Emotional, Consensus}

// Session slots.
const (
	Early = "early"
	Late  = "late"
)

// ProfileIDs returns the displayed ids of the case's two profiles, P first.
func (c *Case) ProfileIDs() (p, q string) {
	return c.Profile[RoleP].ID, c.Profile[RoleQ].ID
}

// RoleOf maps a displayed profile id to its underlying role. Selection is
// always resolved through this table, never through display position.
func (c *Case) RoleOf(id string) (Role, bool) {
	for _, r := range []Role{RoleP, RoleQ} {
		if c.Profile[r].ID == id {
			return r, true
		}
	}
	return "", false
}

// CaseByID finds a case.
func (d *Deck) CaseByID(id string) *Case {
	for i := range d.Cases {
		if d.Cases[i].ID == id {
			return &d.Cases[i]
		}
	}
	return nil
}

// Line returns the 1-based line of a YAML path in the deck file, or 0.
func (d *Deck) Line(path string) int { return d.lines[path] }

func hashBytes(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Determinates and Ambiguous count the deck's base cases by kind.
func (d *Deck) Counts() (determinate, ambiguous int) {
	for _, c := range d.Cases {
		switch c.Kind {
		case Determinate:
			determinate++
		case Ambiguous:
			ambiguous++
		}
	}
	return
}
