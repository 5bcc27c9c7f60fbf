package pressure

import (
	"fmt"
	"strings"
	"testing"
)

func TestSelfTestBuiltinDecks(t *testing.T) {
	for _, name := range BuiltinDecks() {
		t.Run(name, func(t *testing.T) {
			d := mustOpen(t, name)
			res := SelfTest(d)
			if !res.Passed {
				for _, c := range res.Checks {
					if !c.OK {
						t.Errorf("check %q: want %q, got %q", c.Name, c.Want, c.Got)
					}
				}
				t.Fatal("self-test failed")
			}
			if res.Parser != ParserVersion {
				t.Errorf("parser version %q, want %q", res.Parser, ParserVersion)
			}
			names := map[string]bool{}
			for _, c := range res.Checks {
				if !c.OK {
					t.Errorf("Passed but check %q failed", c.Name)
				}
				names[c.Name] = true
			}
			// The hand-written answers of the protocol, each in both orders.
			for _, a := range []string{"P answer", "Q answer", "human choice", "malformed JSON", "missing response"} {
				for _, o := range []Order{PFirst, QFirst} {
					found := false
					for n := range names {
						if strings.HasPrefix(n, a+", "+string(o)+":") {
							found = true
						}
					}
					if !found {
						t.Errorf("no self-test check for %q in order %s", a, o)
					}
				}
			}
			// Every case's ids, in both orders, for both profiles.
			for _, c := range d.Cases {
				for _, o := range []Order{PFirst, QFirst} {
					for _, r := range []Role{RoleP, RoleQ} {
						n := fmt.Sprintf("deck case %s, %s: id %s maps to", c.ID, o, c.Profile[r].ID)
						if !names[n] {
							t.Errorf("missing deck check %q", n)
						}
					}
				}
			}
		})
	}
}

func TestSelfTestWithoutDeck(t *testing.T) {
	res := SelfTest(nil)
	if !res.Passed || len(res.Checks) == 0 {
		t.Fatalf("SelfTest(nil) = %+v", res)
	}
	for _, c := range res.Checks {
		if strings.HasPrefix(c.Name, "deck case") {
			t.Errorf("deck check %q without a deck", c.Name)
		}
	}
}

// A deck whose two profiles show the same id cannot be told apart by the
// checker; the self-test must fail on it rather than pass silently.
func TestSelfTestCatchesAmbiguousIDTable(t *testing.T) {
	d := mustOpen(t, "discovery")
	d.Cases[0].Profile = map[Role]Profile{RoleP: {ID: "V-1"}, RoleQ: {ID: "V-1"}}
	res := SelfTest(d)
	if res.Passed {
		t.Fatal("self-test passed on a case whose P and Q show the same id")
	}
	var failed []string
	for _, c := range res.Checks {
		if !c.OK {
			failed = append(failed, c.Name)
			if !strings.Contains(c.Name, "robotics-arm") {
				t.Errorf("unexpected failed check %q", c.Name)
			}
		}
	}
	// Q's id maps to P in both orders.
	if len(failed) != 2 {
		t.Errorf("failed checks = %v, want the two Q checks of robotics-arm", failed)
	}
}
