package openai

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	oa "github.com/openai/openai-go/v3"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/testkit/providertest"
)

func body(t *testing.T, req *chat.Request, f Format) map[string]any {
	t.Helper()
	p, err := Params(req, f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	return m
}

func TestParamsFormats(t *testing.T) {
	req := providertest.Request()
	if rf := body(t, req, Format{}); rf["response_format"].(map[string]any)["type"] != "json_schema" || rf["max_tokens"] != 300.0 || rf["seed"] != 42.0 {
		t.Errorf("default format: %v", rf)
	}
	// The schema is sent as written: the order of properties steers
	// constrained decoding on some servers.
	p, _ := Params(req, Format{})
	b, _ := json.Marshal(p)
	if !strings.Contains(string(b), string(req.ResponseFormat.Schema)) {
		t.Errorf("schema not sent verbatim: %s", b)
	}
	if rf := body(t, req, Format{Structured: JSONObject}); rf["response_format"].(map[string]any)["type"] != "json_object" {
		t.Errorf("json_object fallback: %v", rf["response_format"])
	}
	if rf := body(t, req, Format{Structured: NoFormat, NoSeed: true, MaxTokensField: "max_completion_tokens"}); rf["response_format"] != nil || rf["seed"] != nil ||
		rf["max_tokens"] != nil || rf["max_completion_tokens"] != 300.0 {
		t.Errorf("none / no seed / max_completion_tokens: %v", rf)
	}
	req.Settings = chat.Settings{}
	if rf := body(t, req, Format{}); rf["temperature"] != nil || rf["seed"] != nil || rf["max_tokens"] != nil {
		t.Errorf("unset settings must not be sent: %v", rf)
	}
	if errs := (Format{Structured: "xml", MaxTokensField: "tokens"}).Validate(); len(errs) != 2 {
		t.Errorf("Validate: %v", errs)
	}
}

func TestParamsMessages(t *testing.T) {
	req := &chat.Request{Model: "m", Messages: []chat.Message{
		{Role: chat.User, Content: "hi"},
		{Role: chat.Assistant, Refusal: "no"},
		{Role: chat.Assistant, Content: "", ToolCalls: []chat.ToolCall{{ID: "a", Name: "f"}}},
	}}
	m := body(t, req, Format{})
	msgs := m["messages"].([]any)
	if r := msgs[1].(map[string]any); r["refusal"] != "no" {
		t.Errorf("refusal: %v", r)
	}
	tc := msgs[2].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)["function"].(map[string]any)
	if tc["arguments"] != "{}" {
		t.Errorf("empty arguments must be sent as {}: %v", tc)
	}
	if _, err := Params(&chat.Request{Messages: []chat.Message{{Role: "robot"}}}, Format{}); err == nil {
		t.Errorf("unknown role accepted")
	}
	if _, err := Params(&chat.Request{Tools: []chat.Tool{{Name: "x", Parameters: json.RawMessage(`[1]`)}}}, Format{}); err == nil {
		t.Errorf("non-object tool parameters accepted")
	}
}

func TestDecode(t *testing.T) {
	// Broken arguments are the model's answer: kept, as a JSON string.
	b := `{"id":"c","model":"m","choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"t","type":"function","function":{"name":"f","arguments":"{not json"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":4}}`
	r, err := Decode([]byte(b))
	if err != nil {
		t.Fatal(err)
	}
	if a := r.Message.ToolCalls[0].Arguments; !json.Valid(a) || string(a) != `"{not json"` {
		t.Errorf("arguments = %s", a)
	}
	// A reply the content filter stopped is a refusal, partial content or not;
	// a refusal the model gave itself is kept as it is.
	for body, want := range map[string]string{
		`{"id":"c","model":"m","choices":[{"message":{"role":"assistant","content":"{\"selec"},"finish_reason":"content_filter"}]}`: ContentFilterRefusal,
		`{"id":"c","model":"m","choices":[{"message":{"role":"assistant","content":null},"finish_reason":"content_filter"}]}`:       ContentFilterRefusal,
		`{"id":"c","model":"m","choices":[{"message":{"role":"assistant","refusal":"no"},"finish_reason":"content_filter"}]}`:       "no",
		`{"id":"c","model":"m","choices":[{"message":{"role":"assistant","content":"{\"selection\":1}"},"finish_reason":"stop"}]}`:  "",
	} {
		r, err := Decode([]byte(body))
		if err != nil || r.Message.Refusal != want {
			t.Errorf("Decode(%s): refusal %q (%v), want %q", body, r.Message.Refusal, err, want)
		}
	}
	for _, bad := range []string{"", "   ", `{"object":"chat.completion","choices":[]}`, `[1,2]`, `{"choices": [`} {
		_, err := Decode([]byte(bad))
		var pe *provider.Error
		if !errors.As(err, &pe) || pe.Kind != provider.Malformed {
			t.Errorf("Decode(%q) = %v, want malformed", bad, err)
		}
	}
}

func TestErrorBody(t *testing.T) {
	for body, want := range map[string][2]string{
		`{"error":{"message":"m1","type":"invalid_request_error","code":"context_length_exceeded"}}`: {"context_length_exceeded", "m1"},
		`{"error":{"message":"m2","type":"server_error","code":null}}`:                               {"server_error", "m2"},
		`{"error":"model 'x' not found"}`:                                                            {"", "model 'x' not found"},
		`{"object":"error","message":"too long","type":"BadRequestError","code":400}`:                {"400", "too long"},
		`{"detail":"Not Found"}`: {"", "Not Found"},
		`<html>`:                 {"", ""},
	} {
		code, msg := ErrorBody([]byte(body))
		if code != want[0] || msg != want[1] {
			t.Errorf("ErrorBody(%s) = %q, %q; want %q", body, code, msg, want)
		}
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, c := range []Config{{Model: "", BaseURL: "http://x"}, {Model: "m", BaseURL: "ftp://x"}, {Model: "m", BaseURL: "http://x", Format: Format{Structured: "yaml"}}} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) accepted", c)
		}
	}
	p, err := New(Config{Model: "m", BaseURL: "https://user:pass@example.test/v1?key=SECRET"})
	if err != nil {
		t.Fatal(err)
	}
	if d := p.Info().Detail; strings.Contains(d, "SECRET") || strings.Contains(d, "pass") {
		t.Errorf("Info leaks URL secrets: %s", d)
	}
}

// TestBodyMatchesSDK: the body budge writes is, as JSON, what the SDK
// writes for the same request, in every format mode.
func TestBodyMatchesSDK(t *testing.T) {
	temp := 0.7
	reqs := []*chat.Request{providertest.Request(), {Model: "m", Messages: []chat.Message{
		{Role: chat.User, Content: "<b>&</b>"},
		{Role: chat.Assistant, Refusal: "no"},
		{Role: chat.Assistant, Content: "text", ToolCalls: []chat.ToolCall{{ID: "a", Name: "f"}, {ID: "b", Name: "g", Arguments: json.RawMessage(`{"x":[1,2]}`)}}},
		{Role: chat.ToolRole, ToolCallID: "a", Content: ""},
	}, Settings: chat.Settings{Temperature: &temp}}}
	for i, req := range reqs {
		for _, f := range []Format{{}, {Structured: JSONObject, MaxTokensField: "max_completion_tokens"}, {Structured: NoFormat, NoSeed: true}} {
			p, err := Params(req, f)
			if err != nil {
				t.Fatal(err)
			}
			sdk, _ := json.Marshal(p)
			ours, err := Body(req, f)
			if err != nil {
				t.Fatal(err)
			}
			var a, b any
			json.Unmarshal(sdk, &a)
			json.Unmarshal(ours, &b)
			if !reflect.DeepEqual(a, b) {
				t.Errorf("request %d, format %+v:\n sdk  %s\n ours %s", i, f, sdk, ours)
			}
		}
	}
	if _, err := Body(&chat.Request{Tools: []chat.Tool{{Name: "x", Parameters: json.RawMessage(`[1]`)}}}, Format{}); err == nil {
		t.Errorf("non-object tool parameters accepted")
	}
}

// sdkDecode is Decode as the SDK's own types read a completion: the
// reference Decode is held to.
func sdkDecode(body []byte) (*chat.Response, bool) {
	var cc oa.ChatCompletion
	if err := json.Unmarshal(body, &cc); err != nil || len(cc.Choices) == 0 {
		return nil, false
	}
	ch := cc.Choices[0]
	m := chat.Message{Role: chat.Assistant, Content: ch.Message.Content, Refusal: ch.Message.Refusal}
	for _, tc := range ch.Message.ToolCalls {
		m.ToolCalls = append(m.ToolCalls, chat.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: json.RawMessage(tc.Function.Arguments)})
	}
	return &chat.Response{Message: m, FinishReason: ch.FinishReason,
		Usage: chat.Usage{InputTokens: int(cc.Usage.PromptTokens), OutputTokens: int(cc.Usage.CompletionTokens)},
		Meta:  chat.Meta{Provider: "openai", ModelID: cc.Model, Fingerprint: cc.SystemFingerprint, RequestID: cc.ID}}, true
}

func TestDecodeMatchesSDK(t *testing.T) {
	d := providertest.OpenAI
	for _, body := range []string{
		d.Answer("m-1", `{"selection":"P-1"}`, "stop", 120, 9),
		d.Answer("m-1", "", "length", 1, 0),
		d.ToolCall("m-2", "call_1", "get_availability", `{"week":"next"}`),
		d.Refusal("m-3", "I can't."),
		`{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null},"finish_reason":null}],"usage":null}`,
		`{"id":"y","model":"m","choices":[{"message":{"content":"a \u00e9 \"q\""},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`,
	} {
		want, ok := sdkDecode([]byte(body))
		if !ok {
			t.Fatalf("the SDK does not read %s", body)
		}
		got, err := Decode([]byte(body))
		if err != nil {
			t.Fatalf("Decode(%s): %v", body, err)
		}
		got.Raw = nil
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Decode(%s)\n got %+v\nwant %+v", body, got, want)
		}
	}
}
