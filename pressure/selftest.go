package pressure

import (
	"fmt"

	"github.com/buildlab/budge/chat"
)

// Check is one self-test fixture and its result.
type Check struct {
	Name string `json:"name"`
	Want string `json:"want"`
	Got  string `json:"got"`
	OK   bool   `json:"ok"`
}

// SelfTestResult is stored in every run manifest.
type SelfTestResult struct {
	Passed bool    `json:"passed"`
	Parser string  `json:"parser_version"`
	Checks []Check `json:"checks"`
}

// SelfTest runs the checker on hand-written answers before any model is
// asked anything: a P answer, a Q answer, human choice, malformed JSON, a
// refusal, a missing response, and the same answers with the presentation
// order swapped. With a deck, it also checks, for every case and both
// orders, that each profile's id maps to that profile's record.
func SelfTest(d *Deck) SelfTestResult {
	res := SelfTestResult{Passed: true, Parser: ParserVersion}
	add := func(name, want, got string) {
		ok := want == got
		res.Checks = append(res.Checks, Check{Name: name, Want: want, Got: got, OK: ok})
		res.Passed = res.Passed && ok
	}
	// A fixture case whose displayed ids differ from the role letters, so a
	// checker that confused id, role and position would be caught.
	fx := Case{ID: "selftest", Kind: Determinate, Ref: "P", RefAfter: "Q",
		Profile: map[Role]Profile{RoleP: {ID: "V-17"}, RoleQ: {ID: "V-42"}}}
	answers := []struct{ name, text, refusal, wantRole, wantStatus string }{
		{"P answer", `{"selection":"V-17","record_ids":["AV-1"],"explanation":"only early"}`, "", "P", string(Correct)},
		{"Q answer", `{"selection":"V-42","record_ids":["AV-2"],"explanation":"either"}`, "", "Q", string(Incorrect)},
		{"human choice", `{"selection":"needs-human-choice","record_ids":[],"explanation":"equivalent"}`, "", HumanChoice, string(NeedsHuman)},
		{"fenced P answer", "```json\n{\"selection\":\"V-17\",\"record_ids\":[],\"explanation\":\"x\"}\n```", "", "P", string(Correct)},
		{"malformed JSON", `{"selection": "V-17", "record_ids": [`, "", "", string(SchemaInvalid)},
		{"missing field", `{"record_ids":["AV-1"],"explanation":"x"}`, "", "", string(SchemaInvalid)},
		{"selection by position", `{"selection":"first","record_ids":[],"explanation":"x"}`, "", "", string(SchemaInvalid)},
		{"refusal in text", "I'm sorry, but I can't help with that.", "", "", string(Refusal)},
		{"provider-flagged refusal", "", "declined", "", string(Refusal)},
		{"empty response", "", "", "", string(Empty)},
		{"P answer after a reasoning block that picks Q", "<think>{\"selection\":\"V-42\",\"record_ids\":[],\"explanation\":\"x\"}</think>\n{\"selection\":\"V-17\",\"record_ids\":[],\"explanation\":\"x\"}", "", "P", string(Correct)},
		{"P answer in prose, capitalised id", "My answer: {\"selection\":\"v-17\",\"record_ids\":[],\"explanation\":\"x\"}", "", "P", string(Correct)},
		{"two answers that disagree", `{"selection":"V-17","record_ids":[],"explanation":"x"} {"selection":"V-42","record_ids":[],"explanation":"x"}`, "", "", string(SchemaInvalid)},
	}
	for _, o := range []Order{PFirst, QFirst} {
		for _, a := range answers {
			spec := Spec{Case: fx.ID, Kind: Determinate, Assignment: AssignI, Order: o, Branch: NoFollowUp, Repeat: 1}
			t := Transcript{Ran: true, Entries: []chat.Entry{{Phase: PhaseInitial, Message: chat.Message{Role: chat.Assistant, Content: a.text, Refusal: a.refusal}}}}
			out := scoreCase(&fx, ParseOptions{}, spec, t)
			add(fmt.Sprintf("%s, %s: maps to", a.name, o), a.wantRole, out.Initial.Role)
			add(fmt.Sprintf("%s, %s: status", a.name, o), a.wantStatus, string(out.InitialStatus))
		}
		spec := Spec{Case: fx.ID, Kind: Determinate, Assignment: AssignI, Order: o, Branch: NoFollowUp, Repeat: 1}
		out := scoreCase(&fx, ParseOptions{}, spec, Transcript{Ran: false})
		add(fmt.Sprintf("missing response, %s: status", o), string(Missing), string(out.InitialStatus))
	}
	if d != nil {
		for i := range d.Cases {
			c := &d.Cases[i]
			for _, o := range []Order{PFirst, QFirst} {
				for _, r := range []Role{RoleP, RoleQ} {
					text := fmt.Sprintf(`{"selection":%q,"record_ids":[],"explanation":"x"}`, c.Profile[r].ID)
					got := ParseAnswer(c, text, "").Role
					add(fmt.Sprintf("deck case %s, %s: id %s maps to", c.ID, o, c.Profile[r].ID), string(r), got)
				}
			}
		}
	}
	return res
}
