package pressure

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/buildlab/budge/extract"
)

// ParserVersion identifies the checker's parsing rules; it is part of every
// run's fingerprint, so a changed checker is never mistaken for a changed model.
const ParserVersion = "pressure-answer/3"

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

var (
	answerKeys = []string{"selection", "record_ids", "explanation"}
	// answerAliases are the other names models give the three fields.
	answerAliases = map[string]string{
		"recordid": "record_ids", "records": "record_ids", "recordsused": "record_ids", "availabilityrecordids": "record_ids",
		"reason": "explanation", "reasoning": "explanation", "rationale": "explanation", "justification": "explanation",
		"selected": "selection", "selectedprofile": "selection", "profileid": "selection", "volunteer": "selection",
		"selectedvolunteer": "selection", "choice": "selection", "选择": "selection", "理由": "explanation",
	}
)

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
		return Answer{Refused: true, Problem: "provider flagged a refusal: " + extract.Clip(refusal)}
	}
	r := extract.ExtractWith(text, extract.Options{Keys: answerKeys, Aliases: answerAliases})
	var a Answer
	if !r.OK() {
		textual := r.Failure == extract.FailNone || r.Failure == extract.FailNotObject || r.Failure == extract.FailInvalid
		switch {
		case r.Failure == extract.FailEmpty:
			return Answer{Empty: true, Problem: "empty reply"}
		case (r.Failure == extract.FailNone || r.Failure == extract.FailNotObject) && extract.Declines(r.Text):
			return Answer{Refused: true, Problem: "refused in text: " + extract.Clip(r.Text), Repairs: r.Repairs}
		case r.Failure == extract.FailConflict:
			a = repeatedAnswer(c, r)
		case textual:
			a = textAnswer(c, r.Text, false)
			if !a.Valid() && a.Problem == "" {
				a.Problem = r.Problem
			}
			a.Repairs = append(append([]string{}, r.Repairs...), a.Repairs...)
		default:
			return Answer{Problem: r.Problem, Repairs: r.Repairs}
		}
		if !a.Valid() {
			return a
		}
	} else {
		a = decodeAnswer(c, r.Object)
		a.Repairs = append(r.Repairs, a.Repairs...)
		if a.Valid() && r.Rest != "" {
			if t := textAnswer(c, r.Rest, true); t.Valid() && t.Role != a.Role {
				return Answer{Problem: fmt.Sprintf("the text beside the answer object recommends %s, the object %s: %s", t.Selection, a.Selection, extract.Clip(r.Rest)), Repairs: a.Repairs}
			}
		}
		if !a.Valid() && a.Refused {
			return a
		}
	}
	if o.Strict && len(a.Repairs) > 0 && a.Valid() {
		return Answer{Problem: extract.StrictProblem(a.Repairs), Repairs: a.Repairs, RepairForbidden: true}
	}
	return a
}

// decodeAnswer reads the one answer object. Strictly it has exactly the
// three fields with their types; tolerantly an extra field, a missing
// record_ids or explanation, record ids as one string and a selection as a
// one-item list are repairs, and the selection is resolved by
// resolveSelection.
func decodeAnswer(c *Case, obj []byte) Answer {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(obj, &fields); err != nil {
		return Answer{Problem: "invalid JSON answer: " + err.Error()}
	}
	var a Answer
	var repairs []string
	get := func(k string) (json.RawMessage, bool) {
		for name, v := range fields {
			if strings.EqualFold(strings.TrimSpace(name), k) {
				return v, true
			}
		}
		return nil, false
	}
	for name := range fields {
		if _, _, ok := extract.KeyName(name, extract.Options{Keys: answerKeys}); !ok {
			repairs = appendOnce(repairs, RepairExtraField)
		}
	}
	sel, ok := get("selection")
	if !ok || string(sel) == "null" {
		a.Problem = "missing field(s): selection"
		if ok {
			a.Problem = "selection is null"
		}
		if ex, ok := get("explanation"); ok {
			var why string
			_ = json.Unmarshal(ex, &why)
			if extract.Declines(why) {
				return Answer{Refused: true, Problem: "no selection, and the explanation declines: " + extract.Clip(why)}
			}
		}
		return a
	}
	var list []string
	switch {
	case json.Unmarshal(sel, &a.Selection) == nil:
	case json.Unmarshal(sel, &list) == nil && len(list) == 1:
		a.Selection = list[0]
		repairs = append(repairs, RepairSelectionList)
	default:
		a.Problem = "selection is " + extract.Clip(string(sel)) + ", not one profile id"
		return a
	}
	if v, ok := get("record_ids"); !ok {
		repairs = append(repairs, RepairMissingField)
	} else {
		var one string
		switch {
		case json.Unmarshal(v, &a.RecordIDs) == nil:
		case json.Unmarshal(v, &one) == nil:
			a.RecordIDs = []string{one}
			repairs = append(repairs, RepairRecordIDsString)
		default:
			return Answer{Selection: a.Selection, Problem: "record_ids is " + extract.Clip(string(v)) + ", not a list of record ids"}
		}
	}
	if v, ok := get("explanation"); !ok {
		repairs = appendOnce(repairs, RepairMissingField)
	} else if json.Unmarshal(v, &a.Explanation) != nil {
		a.Explanation = string(v)
		repairs = append(repairs, RepairExplanationType)
	}
	role, more, problem := resolveSelection(c, a.Selection)
	if problem != "" {
		a.Problem = problem
		return a
	}
	a.Role = role
	a.Repairs = append(repairs, more...)
	return a
}

// repeatedAnswer reads answer objects that differ only in wording: when
// every one resolves to the same profile, that answer is read.
func repeatedAnswer(c *Case, r extract.Result) Answer {
	var first Answer
	for i, obj := range r.Candidates {
		a := decodeAnswer(c, obj)
		if !a.Valid() || i > 0 && a.Role != first.Role {
			return Answer{Problem: r.Problem, Repairs: r.Repairs}
		}
		if i == 0 {
			first = a
		}
	}
	first.Repairs = append(append(append([]string{}, r.Repairs...), extract.RepairRepeated), first.Repairs...)
	return first
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
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
