package pressure

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/buildlab/budge/chat"
)

// A tool result is valid JSON whatever name the model invents.
func TestUnknownToolResultIsJSON(t *testing.T) {
	var s Session
	for _, name := range []string{"x", `say "hi"`, `back\slash`, "new\nline", "<script>"} {
		out := s.runTool(chat.ToolCall{Name: name})
		var v map[string]string
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("tool %q: result %s is not JSON: %v", name, out, err)
		}
		if !strings.HasPrefix(v["error"], "unknown tool "+name+":") {
			t.Errorf("tool %q: error %q", name, v["error"])
		}
	}
}

// The message channel offers no tools: a tool call there gets an error, not
// the registry, and the outcome lists it as a call to an undeclared tool.
func TestMessageChannelToolCallsAreUndeclared(t *testing.T) {
	d := mustOpen(t, "discovery")
	spec := Plan(d)[0]
	s, err := NewSession(d, spec, MessageChannel, "m", chat.Settings{}, "")
	if err != nil {
		t.Fatal(err)
	}
	s.Observe(&chat.Response{Message: chat.Message{ToolCalls: []chat.ToolCall{{ID: "1", Name: ToolAvailability}, {ID: "2", Name: `made "up"`}}}})
	for _, e := range s.Entries() {
		if e.Role != chat.ToolRole {
			continue
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(e.Content), &v); err != nil || v["records"] != nil || v["error"] == nil {
			t.Errorf("message channel tool result %s: want a JSON error and no registry (%v)", e.Content, err)
		}
	}
	o := Score(d, spec, Transcript{Ran: true, Entries: s.Entries(), Channel: MessageChannel})
	if want := []string{"initial:" + ToolAvailability, `initial:made "up"`}; !slices.Equal(o.UndeclaredTools, want) {
		t.Errorf("undeclared calls %v, want %v", o.UndeclaredTools, want)
	}
	if o := Score(d, spec, Transcript{Ran: true, Entries: s.Entries(), Channel: ToolChannel}); !slices.Equal(o.UndeclaredTools, []string{`initial:made "up"`}) {
		t.Errorf("tool channel: undeclared calls %v", o.UndeclaredTools)
	}
}
