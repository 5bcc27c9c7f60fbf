package anthropic

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider"
)

func marshal(t *testing.T, req *chat.Request, f Format) (map[string]any, map[string]any) {
	t.Helper()
	p, extra, err := Params(req, f)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(p)
	var m map[string]any
	json.Unmarshal(b, &m)
	return m, extra
}

func TestParamsMergesTurns(t *testing.T) {
	temp := 0.5
	req := &chat.Request{Model: "claude", Settings: chat.Settings{Temperature: &temp}, Messages: []chat.Message{
		{Role: chat.System, Content: "sys"},
		{Role: chat.User, Content: "case"},
		{Role: chat.User, Content: "evidence"},
		{Role: chat.Assistant, Content: ""},
		{Role: chat.User, Content: "update"},
		{Role: chat.Assistant, Content: "reading", ToolCalls: []chat.ToolCall{{ID: "t1", Name: "get", Arguments: json.RawMessage(`not json`)}}},
		{Role: chat.ToolRole, ToolCallID: "t1", Content: "{}"},
		{Role: chat.User, Content: "notice"},
	}}
	m, extra := marshal(t, req, Format{})
	msgs := m["messages"].([]any)
	if len(msgs) != 5 {
		t.Fatalf("want 5 alternating turns, got %d: %v", len(msgs), msgs)
	}
	if c := msgs[0].(map[string]any)["content"].([]any); len(c) != 2 {
		t.Errorf("consecutive user messages must merge: %v", c)
	}
	if c := msgs[1].(map[string]any)["content"].([]any)[0].(map[string]any); c["text"] != emptyText {
		t.Errorf("an empty answer is sent as %q, got %v", emptyText, c)
	}
	a := msgs[3].(map[string]any)["content"].([]any)
	if len(a) != 2 || a[1].(map[string]any)["type"] != "tool_use" {
		t.Errorf("assistant text + tool_use: %v", a)
	}
	if in := a[1].(map[string]any)["input"]; in == nil {
		t.Errorf("broken arguments must be sent as an empty object")
	}
	if u := msgs[4].(map[string]any)["content"].([]any); len(u) != 2 || u[0].(map[string]any)["type"] != "tool_result" {
		t.Errorf("tool result then notice in one user turn: %v", u)
	}
	if m["max_tokens"] != float64(DefaultMaxTokens) || m["system"] == nil || m["seed"] != nil {
		t.Errorf("max_tokens/system/seed: %v", m)
	}
	// anthropic-version 2026-10-21 (the pinned SDK's) answers 400 to any
	// temperature: it is never sent.
	if _, ok := extra["temperature"]; ok || m["temperature"] != nil {
		t.Errorf("temperature sent to an API version that refuses it: %v %v", extra, m["temperature"])
	}
}

func TestParamsToolsAndSchema(t *testing.T) {
	req := &chat.Request{Model: "c", Messages: []chat.Message{{Role: chat.User, Content: "x"}},
		Tools:          []chat.Tool{{Name: "f", Description: "d", Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}`)}},
		ResponseFormat: &chat.ResponseFormat{Name: "answer", Schema: json.RawMessage(`{"type":"object"}`)}}
	m, _ := marshal(t, req, Format{})
	tool := m["tools"].([]any)[0].(map[string]any)["input_schema"].(map[string]any)
	if tool["type"] != "object" || tool["additionalProperties"] != false || tool["required"].([]any)[0] != "a" {
		t.Errorf("input schema: %v", tool)
	}
	if m["output_config"] != nil {
		t.Errorf("no output format unless declared: %v", m["output_config"])
	}
	m, _ = marshal(t, req, Format{Structured: JSONSchema})
	if oc, _ := m["output_config"].(map[string]any); oc == nil || oc["format"].(map[string]any)["type"] != "json_schema" {
		t.Errorf("output_config: %v", m["output_config"])
	}
	if (Format{Structured: "json_object"}).Validate() == nil {
		t.Errorf("json_object is not an Anthropic mode")
	}
}

func TestDecodeStopReasons(t *testing.T) {
	for stop, want := range map[string]string{"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls", "max_tokens": "length", "pause_turn": "pause_turn"} {
		b := `{"id":"m","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"hi"}],"stop_reason":"` + stop + `","usage":{"input_tokens":1,"output_tokens":2,"cache_read_input_tokens":5}}`
		r, err := Decode([]byte(b))
		if err != nil {
			t.Fatal(err)
		}
		if r.FinishReason != want || r.Usage.InputTokens != 6 {
			t.Errorf("%s: finish %q usage %+v", stop, r.FinishReason, r.Usage)
		}
	}
	for _, bad := range []string{"", `{"type":"message"}`, `{"type":"ping"}`, `{"content":[`} {
		_, err := Decode([]byte(bad))
		var pe *provider.Error
		if !errors.As(err, &pe) || pe.Kind != provider.Malformed {
			t.Errorf("Decode(%q) = %v", bad, err)
		}
	}
	_, err := Decode([]byte(`{"type":"error","error":{"type":"rate_limit_error","message":"slow"}}`))
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Kind != provider.RateLimited || !strings.Contains(pe.Msg, "slow") {
		t.Errorf("error in 200: %v", err)
	}
}
