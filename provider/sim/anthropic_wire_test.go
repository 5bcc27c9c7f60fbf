package sim

import (
	"encoding/json"
	"testing"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider/anthropic"
)

// A Messages request as budge's Anthropic client writes it decodes to the
// conversation it came from: system, user, tool call and its result.
func TestAnthropicRequestRoundTrip(t *testing.T) {
	req := &chat.Request{Model: "sim", Messages: []chat.Message{
		{Role: chat.System, Content: "rules"},
		{Role: chat.User, Content: "who?"},
		{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: "t1", Name: "get_availability", Arguments: json.RawMessage(`{}`)}}},
		{Role: chat.ToolRole, ToolCallID: "t1", Name: "get_availability", Content: `{"records":[1]}`},
	}, Tools: []chat.Tool{{Name: "get_availability", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}}}
	p, _, err := anthropic.Params(req, anthropic.Format{})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(p)
	got, err := decodeAnthropicRequest(body)
	if err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	if len(got.Messages) != 4 || got.Messages[3].Content != `{"records":[1]}` || got.Messages[3].Name != "get_availability" || got.Messages[0].Content != "rules" {
		t.Fatalf("decoded %+v\nfrom %s", got.Messages, body)
	}
}
