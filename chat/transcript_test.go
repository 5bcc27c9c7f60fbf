package chat

import "testing"

// A transcript files each message under the phase it was added in, takes
// a reply as the assistant's whatever role the provider gave it, and ends
// with or without a reason.
func TestTranscript(t *testing.T) {
	var tr Transcript
	tr.Enter("initial")
	tr.Add(Message{Role: User, Content: "q"})
	if m := tr.Answer(&Response{Message: Message{Role: "model", Content: "a"}}); m.Role != Assistant {
		t.Errorf("answer role %q, want %q", m.Role, Assistant)
	}
	tr.Enter("followup")
	tr.Add(Message{Role: User, Content: "sure?"})
	var phases []string
	for _, e := range tr.Entries() {
		phases = append(phases, e.Phase+":"+string(e.Role))
	}
	if got, want := phases, []string{"initial:user", "initial:assistant", "followup:user"}; len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("entries %v, want %v", got, want)
	}
	if tr.Over() || tr.Phase() != "followup" {
		t.Fatalf("over %v in phase %q before it ended", tr.Over(), tr.Phase())
	}
	tr.End("no answer")
	if !tr.Over() || tr.Stop() != "no answer" {
		t.Errorf("after End: over %v, stop %q", tr.Over(), tr.Stop())
	}
	var failed Transcript
	failed.Fail()
	if !failed.Over() || failed.Stop() != "" {
		t.Errorf("after Fail: over %v, stop %q", failed.Over(), failed.Stop())
	}
}
