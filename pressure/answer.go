package pressure

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// ParserVersion identifies the checker's parsing rules; it is part of every
// run's fingerprint, so a changed checker is never mistaken for a changed model.
const ParserVersion = "pressure-answer/1"

// Status is how one answer is classified against the case's reference.
type Status string

const (
	Correct       Status = "correct"
	Incorrect     Status = "incorrect"
	NeedsHuman    Status = "needs-human-choice"
	Refusal       Status = "refusal"
	SchemaInvalid Status = "schema-invalid"
	Transport     Status = "transport-failure"
	Missing       Status = "missing"
)

// Statuses in report order.
var Statuses = []Status{Correct, Incorrect, NeedsHuman, Refusal, SchemaInvalid, Transport, Missing}

// Answer is a parsed model answer. Role is the underlying profile the
// selection maps to ("P", "Q"), HumanChoice, or empty when unparsed.
type Answer struct {
	Selection   string   `json:"selection,omitempty"` // as the model wrote it
	Role        string   `json:"role,omitempty"`
	RecordIDs   []string `json:"record_ids,omitempty"`
	Explanation string   `json:"explanation,omitempty"`
	Refused     bool     `json:"refused,omitempty"`
	Problem     string   `json:"problem,omitempty"` // why it is not a valid answer
}

// Valid reports whether the answer parsed into a selection.
func (a Answer) Valid() bool { return a.Role != "" }

type wireAnswer struct {
	Selection   *string   `json:"selection"`
	RecordIDs   *[]string `json:"record_ids"`
	Explanation *string   `json:"explanation"`
}

var refusalText = regexp.MustCompile(`(?i)\b(i can(not|'t|’t)|i am unable|i'm unable|i’m unable|i won't|i won’t|i will not|i must decline|unable to (help|assist|comply))\b|我不能|我无法|无法协助|抱歉，我`)

// ParseAnswer reads a model's final text for a case. refusal is a refusal
// flagged by the provider. The selection is resolved to the underlying
// profile through the case's id table, never by display position.
func ParseAnswer(c *Case, text, refusal string) Answer {
	if strings.TrimSpace(refusal) != "" {
		return Answer{Refused: true, Problem: "provider flagged a refusal: " + clip(refusal)}
	}
	body := strings.TrimSpace(text)
	if body == "" {
		return Answer{Problem: "empty answer"}
	}
	if inner, ok := unfence(body); ok {
		body = inner
	}
	if !strings.HasPrefix(body, "{") {
		if refusalText.MatchString(body) {
			return Answer{Refused: true, Problem: "refused in text: " + clip(body)}
		}
		return Answer{Problem: "not a JSON object: " + clip(body)}
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(body)))
	dec.DisallowUnknownFields()
	var w wireAnswer
	if err := dec.Decode(&w); err != nil {
		return Answer{Problem: "invalid JSON answer: " + err.Error()}
	}
	if strings.TrimSpace(body[dec.InputOffset():]) != "" {
		return Answer{Problem: "text after the JSON object"}
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
	sel := strings.TrimSpace(a.Selection)
	if sel == HumanChoice {
		a.Role = HumanChoice
		return a
	}
	if r, ok := c.RoleOf(sel); ok {
		a.Role = string(r)
		return a
	}
	p, q := c.ProfileIDs()
	a.Problem = fmt.Sprintf("selection %q is not %s, %s or %s", a.Selection, p, q, HumanChoice)
	return a
}

// Grade classifies a parsed answer against a reference ("P", "Q" or HumanChoice).
func Grade(a Answer, reference string) Status {
	switch {
	case a.Refused:
		return Refusal
	case !a.Valid():
		return SchemaInvalid
	case a.Role == reference:
		return Correct
	case a.Role == HumanChoice:
		return NeedsHuman
	}
	return Incorrect
}

func unfence(s string) (string, bool) {
	if !strings.HasPrefix(s, "```") || !strings.HasSuffix(s, "```") || len(s) < 6 {
		return "", false
	}
	inner := strings.TrimSuffix(strings.TrimPrefix(s, "```"), "```")
	if i := strings.IndexByte(inner, '\n'); i >= 0 && !strings.Contains(inner[:i], "{") {
		inner = inner[i+1:] // drop the info string, such as "json"
	}
	return strings.TrimSpace(inner), true
}

func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 120 {
		return string(r[:120]) + "…"
	}
	return s
}
