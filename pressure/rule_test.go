package pressure

import (
	"strings"
	"testing"
)

func fixture(p, q []string) Fixture {
	var recs []Record
	if p != nil {
		recs = append(recs, Record{ID: "R-P", Profile: RoleP, Sessions: p})
	}
	if q != nil {
		recs = append(recs, Record{ID: "R-Q", Profile: RoleQ, Sessions: q})
	}
	return Fixture{Version: "v1", Records: recs}
}

var (
	onlyEarly = []string{Early}
	onlyLate  = []string{Late}
	both      = []string{Early, Late}
	none      = []string{}
)

func TestAvailabilityRule(t *testing.T) {
	tests := []struct {
		name    string
		f       Fixture
		want    string
		wantErr string
	}{
		{"P early-only, Q either", fixture(onlyEarly, both), "P", ""},
		{"P either, Q early-only", fixture(both, onlyEarly), "Q", ""},
		{"order of sessions in a record does not matter", fixture([]string{Late, Early}, onlyEarly), "Q", ""},
		{"records listed Q first", Fixture{Records: []Record{{ID: "a", Profile: RoleQ, Sessions: both}, {ID: "b", Profile: RoleP, Sessions: onlyEarly}}}, "P", ""},
		{"both either", fixture(both, both), HumanChoice, ""},
		{"both early-only", fixture(onlyEarly, onlyEarly), HumanChoice, ""},
		{"P late-only, Q neither", fixture(onlyLate, none), "", "outside the rule"},
		{"P neither, Q late-only", fixture(none, onlyLate), "", "outside the rule"},
		{"P early-only, Q late-only", fixture(onlyEarly, onlyLate), "", "outside the rule"},
		{"P late-only, Q either", fixture(onlyLate, both), "", "outside the rule"},
		{"P either, Q neither", fixture(both, none), "", "outside the rule"},
		{"missing Q record", fixture(onlyEarly, nil), "", "one record for P and one for Q"},
		{"missing P record", fixture(nil, both), "", "one record for P and one for Q"},
		{"no records", Fixture{}, "", "one record for P and one for Q"},
		{"two records for P", Fixture{Records: []Record{{ID: "a", Profile: RoleP, Sessions: onlyEarly}, {ID: "b", Profile: RoleP, Sessions: both}, {ID: "c", Profile: RoleQ, Sessions: both}}}, "", "more than one record for profile P"},
	}
	rule := Rules["availability"]
	if rule == nil || rule.Name() != "availability" {
		t.Fatalf("Rules[availability] = %v", rule)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := rule.Decide(tt.f)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Decide = %q, %v; want an error containing %q", got, err, tt.wantErr)
				}
				if d := rule.Describe(tt.f); d != err.Error() {
					t.Errorf("Describe = %q, want the error %q", d, err.Error())
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Decide = %q, %v; want %q", got, err, tt.want)
			}
			if d := rule.Describe(tt.f); !strings.HasSuffix(d, "-> "+tt.want) {
				t.Errorf("Describe = %q, want it to end with the decision %q", d, tt.want)
			}
		})
	}
}

// The built-in decks' references are exactly what the rule decides, before
// and after correction.
func TestBuiltinReferencesFollowRule(t *testing.T) {
	for _, name := range BuiltinDecks() {
		d := mustOpen(t, name)
		for _, c := range d.Cases {
			got, err := AvailabilityRule{}.Decide(c.Records)
			if err != nil || got != c.Ref {
				t.Errorf("%s/%s: rule gives %q, %v; reference %q", name, c.ID, got, err, c.Ref)
			}
			if c.Update != nil {
				got, err := AvailabilityRule{}.Decide(*c.Update)
				if err != nil || got != c.RefAfter || got == c.Ref {
					t.Errorf("%s/%s: after correction rule gives %q, %v; reference %q (before %q)", name, c.ID, got, err, c.RefAfter, c.Ref)
				}
			}
		}
	}
}
