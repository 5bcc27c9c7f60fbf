package sim

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/buildlab/budge/chat"
)

// encodeResponseMap is how the server encoded an answer before
// encodeResponse: json.Marshal of a map.
func encodeResponseMap(r *chat.Response, now time.Time) []byte {
	type fn struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type call struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	msg := struct {
		Role      string  `json:"role"`
		Content   *string `json:"content"`
		Refusal   *string `json:"refusal"`
		ToolCalls []call  `json:"tool_calls,omitempty"`
	}{Role: "assistant"}
	if r.Message.Content != "" || len(r.Message.ToolCalls) == 0 {
		c := r.Message.Content
		msg.Content = &c
	}
	if r.Message.Refusal != "" {
		msg.Refusal = &r.Message.Refusal
	}
	for _, tc := range r.Message.ToolCalls {
		msg.ToolCalls = append(msg.ToolCalls, call{ID: tc.ID, Type: "function", Function: fn{Name: tc.Name, Arguments: string(tc.Arguments)}})
	}
	finish := r.FinishReason
	if finish == "" {
		finish = "stop"
	}
	id := "chatcmpl-" + strings.TrimPrefix(r.Meta.RequestID, "sim-")
	b, _ := json.Marshal(map[string]any{
		"id": id, "object": "chat.completion", "created": now.Unix(), "model": r.Meta.ModelID,
		"system_fingerprint": r.Meta.Fingerprint,
		"choices":            []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish}},
		"usage": map[string]int{"prompt_tokens": r.Usage.InputTokens, "completion_tokens": r.Usage.OutputTokens,
			"total_tokens": r.Usage.InputTokens + r.Usage.OutputTokens},
	})
	return b
}

func TestEncodeResponseAsBefore(t *testing.T) {
	now := time.Unix(1765000000, 0)
	var all []byte
	for c := range 256 {
		all = append(all, byte(c))
	}
	odd := []string{"", `{"selection": "VOL-1", "record_ids": ["AV-1"], "explanation": "<b>a & b</b>"}`, "tab\t\"q\" \\ \x00 é 中 \u2028 \xff", string(all)}
	check := func(r *chat.Response) {
		t.Helper()
		if got, want := encodeResponse(r, now), encodeResponseMap(r, now); !bytes.Equal(got, want) {
			t.Fatalf("encodeResponse\n%s\nbefore\n%s", got, want)
		}
		if !json.Valid(encodeResponse(r, now)) {
			t.Fatal("not JSON")
		}
	}
	for _, s := range odd {
		for _, calls := range [][]chat.ToolCall{nil, {{ID: s, Name: s, Arguments: json.RawMessage(s)}},
			{{ID: "call_1", Name: "get_availability", Arguments: json.RawMessage("{}")}, {ID: "c2", Name: "send_invitation", Arguments: json.RawMessage(`{"profile":"VOL-1"}`)}}} {
			for _, refusal := range []string{"", s, "I can't"} {
				check(&chat.Response{Message: chat.Message{Role: chat.Assistant, Content: s, Refusal: refusal, ToolCalls: calls},
					FinishReason: s, Usage: chat.Usage{InputTokens: len(s), OutputTokens: 7},
					Meta: chat.Meta{Provider: "sim", ModelID: "budge-sim-" + s, Fingerprint: s, RequestID: "sim-" + s}})
			}
		}
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 2000 {
		b := make([]byte, rng.IntN(30))
		for i := range b {
			b[i] = all[rng.IntN(len(all))]
		}
		s := string(b)
		check(&chat.Response{Message: chat.Message{Content: s}, FinishReason: strings.ToUpper(s), Usage: chat.Usage{InputTokens: -rng.IntN(5)},
			Meta: chat.Meta{RequestID: s, ModelID: s, Fingerprint: s}})
	}
	// The answers a run gets.
	local, _ := LookupProfile("default")
	for _, body := range runBodies(t, "") {
		req, err := decodeRequest(body)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := New(local).Chat(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		check(resp)
	}
}

// A result line is json.Marshal's of the line as a map, byte for byte,
// for the bodies the server writes: answers (encodeResponse's, with what
// json.Marshal escapes) and error bodies (json.Marshal's).
func TestResultLineAsMarshal(t *testing.T) {
	now := time.Unix(1700000000, 0)
	errBody, _ := json.Marshal(map[string]any{"error": map[string]any{"message": "a <b> & c", "type": "t", "code": "c"}})
	bodies := [][]byte{errBody, nil}
	for _, content := range []string{"plain", "a <b> & c", "line\u2028sep\u2029", `quote " and \ back`, "é 中"} {
		bodies = append(bodies, encodeResponse(&chat.Response{Message: chat.Message{Role: chat.Assistant, Content: content}}, now))
	}
	for _, body := range bodies {
		for _, id := range []string{"r1-s2-t1-a0-i0", "id<&>\"x"} {
			want, _ := json.Marshal(map[string]any{"id": "batch_req_" + id, "custom_id": id,
				"response": map[string]any{"status_code": 200, "request_id": "req_<1>", "body": json.RawMessage(body)}, "error": nil})
			if got := appendResultLine(nil, id, "req_<1>", 200, body); !bytes.Equal(got, append(want, '\n')) {
				t.Errorf("result line of %q, %s:\n got %s\nwant %s", id, body, got, want)
			}
		}
	}
}
