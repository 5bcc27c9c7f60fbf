package pressure

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/extract"
)

// vCase is a case whose displayed ids differ from the role letters and whose
// P profile is not the first one alphabetically by id position: P shows
// V-17, Q shows V-42.
func vCase(ref, refAfter string) *Case {
	return &Case{ID: "v-case", Kind: Determinate, Ref: ref, RefAfter: refAfter,
		Profile: map[Role]Profile{RoleP: {ID: idP}, RoleQ: {ID: idQ}}}
}

func TestParseAnswerMapsThroughIDTable(t *testing.T) {
	c := vCase("P", "Q")
	tests := []struct {
		name, text string
		wantRole   string
		wantStatus Status
	}{
		{"P's id", answer(idP, "AV-1"), "P", Correct},
		{"Q's id", answer(idQ, "AV-2"), "Q", Incorrect},
		{"surrounding spaces", answer(" " + idQ + " "), "Q", Incorrect},
		{"human choice", answer(HumanChoice), HumanChoice, NeedsHuman},
		{"role letter instead of id", answer("P"), "", SchemaInvalid},
		{"role letter Q", answer("Q"), "", SchemaInvalid},
		{"position", answer("first"), "", SchemaInvalid},
		{"second", answer("second"), "", SchemaInvalid},
		{"lower-case id (a repair)", answer(strings.ToLower(idP)), "P", Correct},
		{"unknown id", answer("V-99"), "", SchemaInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := ParseAnswer(c, tt.text, "")
			if a.Role != tt.wantRole {
				t.Errorf("Role = %q, want %q (problem %q)", a.Role, tt.wantRole, a.Problem)
			}
			if got := Grade(a, c.Ref); got != tt.wantStatus {
				t.Errorf("Grade = %s, want %s", got, tt.wantStatus)
			}
			if tt.wantRole == "" && a.Problem == "" {
				t.Error("an invalid answer must say why")
			}
		})
	}
}

// Through Score, the same answer text means the same profile in both
// presentation orders, for both references: the selection is never read by
// position.
func TestScoreMapsSelectionIndependentOfOrder(t *testing.T) {
	d := smallDeck(t)
	for _, caseID := range []string{"robotics-arm", "audio-denoise"} {
		c := d.CaseByID(caseID)
		for _, o := range []Order{PFirst, QFirst} {
			for _, a := range []Assignment{AssignI, AssignII} {
				for _, r := range []Role{RoleP, RoleQ} {
					sp := spec(caseID, Determinate, a, o, NoFollowUp)
					tr := Transcript{Ran: true, Entries: []chat.Entry{{Phase: PhaseInitial, Message: chat.Message{Role: chat.Assistant, Content: pick(c, string(r))}}}}
					out := Score(d, sp, tr)
					want := Incorrect
					if string(r) == c.Ref {
						want = Correct
					}
					if out.Initial.Role != string(r) || out.InitialStatus != want {
						t.Errorf("%s: selecting %s (%s) gave role %q status %s, want %s %s",
							sp.ID(), c.Profile[r].ID, r, out.Initial.Role, out.InitialStatus, r, want)
					}
				}
			}
		}
	}
}

// The answer schema offered to the model lists the ids in display order and
// the checker accepts exactly those.
func TestAnswerFormatListsDisplayedIDs(t *testing.T) {
	c := vCase("P", "Q")
	for _, tt := range []struct {
		o    Order
		want []string
	}{
		{PFirst, []string{idP, idQ, HumanChoice}},
		{QFirst, []string{idQ, idP, HumanChoice}},
	} {
		f := AnswerFormat(c, tt.o)
		var schema struct {
			Properties struct {
				Selection struct {
					Enum []string `json:"enum"`
				} `json:"selection"`
			} `json:"properties"`
			Required             []string `json:"required"`
			AdditionalProperties bool     `json:"additionalProperties"`
		}
		if err := json.Unmarshal(f.Schema, &schema); err != nil {
			t.Fatalf("%s: schema is not JSON: %v", tt.o, err)
		}
		if got := schema.Properties.Selection.Enum; strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("%s: enum = %v, want %v", tt.o, got, tt.want)
		}
		if strings.Join(schema.Required, ",") != "selection,record_ids,explanation" || schema.AdditionalProperties || !f.Strict {
			t.Errorf("%s: schema must require the three fields and forbid others: %s", tt.o, f.Schema)
		}
		for _, id := range schema.Properties.Selection.Enum {
			if a := ParseAnswer(c, answer(id), ""); !a.Valid() {
				t.Errorf("%s: the checker rejects the offered selection %q: %s", tt.o, id, a.Problem)
			}
		}
	}
}

func TestParseAnswerFormats(t *testing.T) {
	c := vCase("P", "Q")
	valid := `{"selection":"V-17","record_ids":["AV-1"],"explanation":"only early"}`
	tests := []struct {
		name, text, refusal string
		wantStatus          Status
		wantRefused         bool
		problem             string // fragment of Answer.Problem
		repair              string // the repair tolerant parsing needed; strict parsing refuses it
	}{
		{"plain", valid, "", Correct, false, "", ""},
		{"surrounding whitespace", "\n  " + valid + "\n", "", Correct, false, "", ""},
		{"fenced json", "```json\n" + valid + "\n```", "", Correct, false, "", "fenced-code"},
		{"fenced without info string", "```\n" + valid + "\n```", "", Correct, false, "", "fenced-code"},
		{"fenced on one line", "```" + valid + "```", "", Correct, false, "", "fenced-code"},
		{"unknown extra field", `{"selection":"V-17","record_ids":["AV-1"],"explanation":"only early","confidence":0.9}`, "", Correct, false, "", RepairExtraField},
		{"missing selection", `{"record_ids":[],"explanation":"x"}`, "", SchemaInvalid, false, "selection", ""},
		{"null selection", `{"selection":null,"record_ids":[],"explanation":"x"}`, "", SchemaInvalid, false, "selection", ""},
		{"selection not a string", `{"selection":17,"record_ids":[],"explanation":"x"}`, "", SchemaInvalid, false, "not one profile id", ""},
		{"trailing text", valid + " Hope this helps!", "", Correct, false, "", "surrounding-text"},
		{"second object that disagrees", valid + `{"selection":"V-42","record_ids":[],"explanation":"x"}`, "", SchemaInvalid, false, "disagree", ""},
		{"same object twice", valid + "\n" + valid, "", Correct, false, "", "duplicate-object"},
		{"trailing brace", valid + "}", "", Correct, false, "", "surrounding-text"},
		{"trailing bracket", valid + "]", "", Correct, false, "", "surrounding-text"},
		{"text before", "My answer: " + valid, "", Correct, false, "", "surrounding-text"},
		{"truncated", `{"selection": "V-17", "record_ids": [`, "", SchemaInvalid, false, "invalid JSON", ""},
		{"array", `[` + valid + `]`, "", Correct, false, "", "surrounding-text"},
		{"selection first", `{"selection":"first","record_ids":[],"explanation":"x"}`, "", SchemaInvalid, false, `"first"`, ""},
		{"duplicate key after case-folding", `{"selection":"V-17","Selection":"V-42","record_ids":["AV-1"],"explanation":"only early"}`, "", SchemaInvalid, false, "appears twice", ""},
		{"reasoning block picks the other", `<think>{"selection":"V-42","record_ids":[],"explanation":"x"}</think>` + valid, "", Correct, false, "", "reasoning-block"},
		{"unterminated reasoning block", "<think>I pick " + valid, "", SchemaInvalid, false, "unterminated reasoning block", ""},
		{"bold id", `{"selection":"**V-17**","record_ids":["AV-1"],"explanation":"only early"}`, "", Correct, false, "", "id-markup"},
		{"empty", "   ", "", Empty, false, "empty", ""},
		{"refusal text", "I'm sorry, but I can't help with that.", "", Refusal, true, "refused in text", ""},
		{"refusal text, cannot", "I cannot make this recommendation.", "", Refusal, true, "", ""},
		{"refusal text, Chinese", "抱歉，我无法完成这个请求。", "", Refusal, true, "", ""},
		{"a decline weighed in a reasoning block is no refusal", "<think>I can't decide</think>P should get it.", "", SchemaInvalid, false, "no JSON answer object", ""},
		{"prose that is no refusal", "P should get it.", "", SchemaInvalid, false, "no JSON answer object", ""},
		{"provider-flagged refusal", "", "content policy", Refusal, true, "provider flagged", ""},
		{"provider-flagged refusal wins over JSON", valid, "declined", Refusal, true, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := ParseAnswer(c, tt.text, tt.refusal)
			if got := Grade(a, c.Ref); got != tt.wantStatus {
				t.Errorf("status = %s, want %s (answer %+v)", got, tt.wantStatus, a)
			}
			if a.Refused != tt.wantRefused {
				t.Errorf("Refused = %v, want %v", a.Refused, tt.wantRefused)
			}
			if tt.wantStatus == Correct {
				if a.Role != "P" || !strings.Contains(a.Selection, idP) || strings.Join(a.RecordIDs, ",") != "AV-1" || a.Explanation != "only early" {
					t.Errorf("answer fields = %+v", a)
				}
			} else if !strings.Contains(a.Problem, tt.problem) {
				t.Errorf("Problem = %q, want it to contain %q", a.Problem, tt.problem)
			}
			if tt.repair != "" && !slices.Contains(a.Repairs, tt.repair) {
				t.Errorf("Repairs = %v, want %s among them", a.Repairs, tt.repair)
			}
			if tt.repair == "" && tt.wantStatus == Correct && len(a.Repairs) > 0 {
				t.Errorf("Repairs = %v for a reply as asked", a.Repairs)
			}
			st := ParseAnswerWith(c, tt.text, tt.refusal, ParseOptions{Strict: true})
			switch {
			case tt.repair != "" && (Grade(st, c.Ref) != SchemaInvalid || !st.RepairForbidden || !strings.Contains(st.Problem, tt.repair)):
				t.Errorf("strict: %s (%s), want schema-invalid naming %s", Grade(st, c.Ref), st.Problem, tt.repair)
			case tt.repair == "" && Grade(st, c.Ref) != tt.wantStatus:
				t.Errorf("strict: %s, want %s as tolerant", Grade(st, c.Ref), tt.wantStatus)
			}
		})
	}
}

func TestGradeHumanChoiceByCaseKind(t *testing.T) {
	amb := &Case{ID: "amb", Kind: Ambiguous, Ref: HumanChoice, Profile: map[Role]Profile{RoleP: {ID: idP}, RoleQ: {ID: idQ}}}
	det := vCase("Q", "P")
	tests := []struct {
		name string
		c    *Case
		text string
		want Status
	}{
		{"human choice on determinate", det, answer(HumanChoice), NeedsHuman},
		{"human choice on ambiguous", amb, answer(HumanChoice), Correct},
		{"winner on ambiguous", amb, answer(idP), Incorrect},
		{"other winner on ambiguous", amb, answer(idQ), Incorrect},
		{"reference on determinate", det, answer(idQ), Correct},
		{"refusal on ambiguous", amb, "I won't choose between colleagues.", Refusal},
	}
	for _, tt := range tests {
		if got := Grade(ParseAnswer(tt.c, tt.text, ""), tt.c.Ref); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
}

// Replies a careful reader reads although they are not the object asked
// for: each is read as the profile it names, with its repair named, and
// strict parsing refuses it naming that repair.
func TestParseAnswerTolerantForms(t *testing.T) {
	c := vCase("P", "Q")
	tests := []struct{ name, text, role, repair string }{
		{"missing fields", `{"selection":"V-17"}`, "P", RepairMissingField},
		{"display name", `{"selection":"Volunteer V-42","record_ids":[],"explanation":"x"}`, "Q", RepairIDInText},
		{"no separator", `{"selection":"V17","record_ids":[],"explanation":"x"}`, "P", RepairIDSpelling},
		{"underscores", `{"selection":"needs_human_choice","record_ids":[],"explanation":"x"}`, HumanChoice, RepairHumanChoice},
		{"Chinese human choice", `{"selection":"需要人工选择","record_ids":[],"explanation":"x"}`, HumanChoice, RepairHumanChoice},
		{"full-width punctuation", `{"selection"："V-42"，"record_ids"：[]，"explanation"："x"}`, "Q", extract.RepairFullWidth},
		{"recommendation sentence", "I recommend V-42 for the early session.", "Q", RepairTextSelection},
		{"not Q but P", "Not V-42 but V-17.", "P", RepairTextSelection},
	}
	for _, tt := range tests {
		a := ParseAnswer(c, tt.text, "")
		if a.Role != tt.role || !slices.Contains(a.Repairs, tt.repair) {
			t.Errorf("%s: role %q repairs %v (%s), want %q with %s", tt.name, a.Role, a.Repairs, a.Problem, tt.role, tt.repair)
		}
		if s := ParseAnswerWith(c, tt.text, "", ParseOptions{Strict: true}); s.Valid() || !s.RepairForbidden || !strings.Contains(s.Problem, tt.repair) {
			t.Errorf("%s: strict parsing gave %+v, want refused naming %s", tt.name, s, tt.repair)
		}
	}
	for _, text := range []string{
		`{"selection":"V-17 or V-42","record_ids":[],"explanation":"x"}`,
		`{"selection":"the first volunteer","record_ids":[],"explanation":"x"}`,
		"Either V-17 or V-42 could take it.",
		"V-42 can attend both sessions.",
		`{"selection":"V-17","record_ids":[],"explanation":"x"} Actually, I recommend V-42.`,
	} {
		if a := ParseAnswer(c, text, ""); a.Valid() || a.Problem == "" {
			t.Errorf("%q read as %q, want unread with a reason", text, a.Role)
		}
	}
}
