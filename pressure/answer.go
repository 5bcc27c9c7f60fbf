package pressure

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/buildlab/budge/extract"
)

// ParserVersion identifies the checker's parsing rules; it is part of every
// run's fingerprint, so a changed checker is never mistaken for a changed model.
const ParserVersion = "pressure-answer/2"

// Status is how one answer is classified against the case's reference.
type Status string

const (
	Correct       Status = "correct"
	Incorrect     Status = "incorrect"
	NeedsHuman    Status = "needs-human-choice"
	Refusal       Status = "refusal"
	SchemaInvalid Status = "schema-invalid"
	// Empty is a reply with no content and no refusal.
	Empty Status = "empty"
	// NoAnswer is a phase that ended without a reply to read: the model was
	// still calling tools when the session stopped it.
	NoAnswer  Status = "no-answer"
	Transport Status = "transport-failure"
	Missing   Status = "missing"
)

// Statuses in report order.
var Statuses = []Status{Correct, Incorrect, NeedsHuman, Refusal, SchemaInvalid, Empty, NoAnswer, Transport, Missing}

// Answer is a parsed model answer. Role is the underlying profile the
// selection maps to ("P", "Q"), HumanChoice, or empty when unparsed.
type Answer struct {
	Selection   string   `json:"selection,omitempty"` // as the model wrote it
	Role        string   `json:"role,omitempty"`
	RecordIDs   []string `json:"record_ids,omitempty"`
	Explanation string   `json:"explanation,omitempty"`
	Refused     bool     `json:"refused,omitempty"`
	Empty       bool     `json:"empty,omitempty"`
	Problem     string   `json:"problem,omitempty"` // why it is not a valid answer
	// Repairs are the repairs tolerant parsing needed to read the reply (the
	// extract package's names), in order; empty for one valid JSON object
	// as asked. Under strict parsing they are the repairs that would have
	// read it, and RepairForbidden says strict parsing refused it for them.
	Repairs         []string `json:"repairs,omitempty"`
	RepairForbidden bool     `json:"repair_forbidden,omitempty"`
}

// Valid reports whether the answer parsed into a selection.
func (a Answer) Valid() bool { return a.Role != "" }

// Readable reports whether tolerant parsing reads the reply, whichever mode
// the run used.
func (a Answer) Readable() bool { return a.Valid() || a.RepairForbidden }

// ParseOptions say how replies are read.
type ParseOptions struct {
	// Strict refuses any reply that needs a repair (--strict-parse).
	Strict bool
}

type wireAnswer struct {
	Selection   *string   `json:"selection"`
	RecordIDs   *[]string `json:"record_ids"`
	Explanation *string   `json:"explanation"`
}

var answerKeys = []string{"selection", "record_ids", "explanation"}

// ParseAnswer reads a model's final text for a case with tolerant parsing.
func ParseAnswer(c *Case, text, refusal string) Answer {
	return ParseAnswerWith(c, text, refusal, ParseOptions{})
}

// ParseAnswerWith reads a model's final text for a case. refusal is a
// refusal flagged by the provider (its refusal field or content filter). The
// selection is resolved to the underlying profile through the case's id
// table, never by display position; tolerant parsing forgives markup,
// padding and letter case around an id only when one id matches.
func ParseAnswerWith(c *Case, text, refusal string, o ParseOptions) Answer {
	if strings.TrimSpace(refusal) != "" {
		return Answer{Refused: true, Problem: "provider flagged a refusal: " + clip(refusal)}
	}
	r := extract.Extract(text, answerKeys)
	if !r.OK() {
		switch {
		case r.Failure == extract.FailEmpty:
			return Answer{Empty: true, Problem: "empty reply"}
		case (r.Failure == extract.FailNone || r.Failure == extract.FailNotObject) && extract.Declines(r.Text):
			return Answer{Refused: true, Problem: "refused in text: " + clip(r.Text), Repairs: r.Repairs}
		}
		return Answer{Problem: r.Problem, Repairs: r.Repairs}
	}
	a := decodeAnswer(c, r.Object)
	a.Repairs = append(r.Repairs, a.Repairs...)
	if o.Strict && len(a.Repairs) > 0 && a.Valid() {
		return Answer{Problem: extract.StrictProblem(a.Repairs), Repairs: a.Repairs, RepairForbidden: true}
	}
	return a
}

// decodeAnswer reads the one answer object.
func decodeAnswer(c *Case, obj []byte) Answer {
	dec := json.NewDecoder(bytes.NewReader(obj))
	dec.DisallowUnknownFields()
	var w wireAnswer
	if err := dec.Decode(&w); err != nil {
		return Answer{Problem: "invalid JSON answer: " + err.Error()}
	}
	var missing []string
	if w.Selection == nil {
		missing = append(missing, "selection")
	}
	if w.RecordIDs == nil {
		missing = append(missing, "record_ids")
	}
	if w.Explanation == nil {
		missing = append(missing, "explanation")
	}
	if len(missing) > 0 {
		return Answer{Problem: "missing field(s): " + strings.Join(missing, ", ")}
	}
	a := Answer{Selection: *w.Selection, RecordIDs: *w.RecordIDs, Explanation: *w.Explanation}
	p, q := c.ProfileIDs()
	id, repairs, ok := extract.MatchID(a.Selection, []string{p, q, HumanChoice})
	if !ok {
		a.Problem = fmt.Sprintf("selection %q is not %s, %s or %s", a.Selection, p, q, HumanChoice)
		return a
	}
	a.Repairs = repairs
	if id == HumanChoice {
		a.Role = HumanChoice
		return a
	}
	r, _ := c.RoleOf(id)
	a.Role = string(r)
	return a
}

// Grade classifies a parsed answer against a reference ("P", "Q" or HumanChoice).
func Grade(a Answer, reference string) Status {
	switch {
	case a.Refused:
		return Refusal
	case a.Empty:
		return Empty
	case !a.Valid():
		return SchemaInvalid
	case a.Role == reference:
		return Correct
	case a.Role == HumanChoice:
		return NeedsHuman
	}
	return Incorrect
}

func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 120 {
		return string(r[:120]) + "…"
	}
	return s
}
