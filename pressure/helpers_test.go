package pressure

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/buildlab/budge/chat"
)

// mustOpen loads a deck (a fresh copy every call, so tests may modify it)
// and fails the test if it has problems.
func mustOpen(t *testing.T, nameOrPath string) *Deck {
	t.Helper()
	d, err := OpenDeck(nameOrPath)
	if err != nil {
		t.Fatalf("OpenDeck(%q): %v", nameOrPath, err)
	}
	return d
}

// markerLine returns the 1-based line of the unique line of path that carries
// the comment "# MARK:<marker>". Test fixtures label the lines a problem must
// point at this way, so the tests stay right if a fixture shifts.
func markerLine(t *testing.T, path, marker string) int {
	t.Helper()
	return uniqueLine(t, path, func(l string) bool { return strings.Contains(l, "# MARK:"+marker) })
}

func uniqueLine(t *testing.T, path string, match func(string) bool) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	found := 0
	for n := 1; sc.Scan(); n++ {
		if match(sc.Text()) {
			if found != 0 {
				t.Fatalf("%s: more than one matching line (%d and %d)", path, found, n)
			}
			found = n
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Fatalf("%s: no matching line", path)
	}
	return found
}

// Display ids that differ from the role letters, so any confusion between
// displayed id, role and position shows.
const (
	idP = "V-17"
	idQ = "V-42"
)

// smallDeck is the discovery deck cut down to one P-eligible case
// (robotics-arm), one Q-eligible case (audio-denoise) and one ambiguous case
// (vision-kiosk), with one repeat and display ids V-17 (P) and V-42 (Q).
// Plan gives 2*2*2*6 = 48 determinate and 1*2*2*2 = 8 ambiguous sessions.
func smallDeck(t *testing.T) *Deck {
	t.Helper()
	d := mustOpen(t, "discovery")
	var keep []Case
	for _, id := range []string{"robotics-arm", "audio-denoise", "vision-kiosk"} {
		c := *d.CaseByID(id)
		c.Profile = map[Role]Profile{
			RoleP: {ID: idP, About: c.Profile[RoleP].About},
			RoleQ: {ID: idQ, About: c.Profile[RoleQ].About},
		}
		keep = append(keep, c)
	}
	d.Cases = keep
	d.Repeats = 1
	return d
}

func spec(c, kind string, a Assignment, o Order, b Branch) Spec {
	return Spec{Case: c, Kind: kind, Assignment: a, Order: o, Branch: b, Repeat: 1}
}

// answer is a well-formed answer selecting sel.
func answer(sel string, recs ...string) string {
	if recs == nil {
		recs = []string{}
	}
	b, _ := json.Marshal(map[string]any{"selection": sel, "record_ids": recs, "explanation": "per the registry"})
	return string(b)
}

// pick returns the answer selecting the profile of role r ("P", "Q") of case
// c by its displayed id, or needs-human-choice for HumanChoice.
func pick(c *Case, r string) string {
	if r == HumanChoice {
		return answer(HumanChoice)
	}
	return answer(c.Profile[Role(r)].ID)
}

// phaseScript says what the scripted model does in one phase: it calls the
// tools in calls, one tool round each, and then answers with text (or a
// provider-flagged refusal), unless fail is set, in which case the call fails
// for good instead of answering.
type phaseScript struct {
	calls   []string
	text    string
	refusal string
	fail    bool
}

// drive runs a session against a scripted model and returns the transcript
// the store would hold and the session itself.
func drive(t *testing.T, d *Deck, sp Spec, ch Channel, script map[string]phaseScript) (Transcript, *Session) {
	t.Helper()
	s, err := NewSession(d, sp, ch, "scripted", chat.Settings{}, "")
	if err != nil {
		t.Fatal(err)
	}
	tr := Transcript{Ran: true}
	done := map[string]int{}
	for turn := 0; ; turn++ {
		if turn > 50 {
			t.Fatalf("%s: session did not end", sp.ID())
		}
		if s.Next() == nil {
			break
		}
		ph := s.Phase()
		ps := script[ph]
		if i := done[ph]; i < len(ps.calls) {
			done[ph]++
			s.Observe(toolCall(fmt.Sprintf("call-%s-%d", ph, i), ps.calls[i]))
			continue
		}
		if ps.fail {
			s.Fail()
			tr.FailedPhase, tr.FailureKind, tr.FailureMsg = ph, "timeout", "no response after 3 attempts"
			break
		}
		s.Observe(&chat.Response{Message: chat.Message{Role: chat.Assistant, Content: ps.text, Refusal: ps.refusal}})
	}
	tr.Entries = s.Entries()
	tr.Stop = s.Stop()
	return tr, s
}

func toolCall(id, name string) *chat.Response {
	args := json.RawMessage(`{}`)
	if name == ToolInvite || name == ToolCalendar {
		args = json.RawMessage(`{"profile":"V-42","session":"early"}`)
	}
	return &chat.Response{Message: chat.Message{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: id, Name: name, Arguments: args}}}}
}

// lastMessage returns the last message of a request.
func lastMessage(t *testing.T, req *chat.Request) chat.Message {
	t.Helper()
	if req == nil || len(req.Messages) == 0 {
		t.Fatal("no request or no messages")
	}
	return req.Messages[len(req.Messages)-1]
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
