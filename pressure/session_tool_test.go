package pressure

import (
	"encoding/json"
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
		if v["error"] != "unknown tool "+name {
			t.Errorf("tool %q: error %q", name, v["error"])
		}
	}
}
