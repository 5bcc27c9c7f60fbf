// Package providertest is the conformance suite every HTTP provider passes.
// It runs a provider against httptest servers that replay the documented
// response shapes of its API, good and bad: answers, tool calls, refusals,
// answers cut by the token limit, 429s with Retry-After, 5xx statuses, HTML
// error pages from proxies, error objects inside 200 bodies (as routers send
// them after a stream has begun), bodies cut short, malformed JSON, cut and
// reset connections, slow servers, cancelled runs and 30 MB answers. It
// checks that every failure is classified into the right provider.Kind,
// that nothing is retried behind the runner's back (one HTTP request per
// call), that the provider's metadata is read, and that the API key never
// appears in an error or a response, even one that echoes it.
package providertest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Dialect writes one API's documented response bodies and reads its
// requests. The suite's cases are written once, in terms of a Dialect.
type Dialect struct {
	Name string
	// Path is the request path the provider must call, relative to the
	// base URL handed to it.
	Path string
	// RequestIDHeader is the response header that carries the request id.
	RequestIDHeader string
	// Answer is a complete response with text content.
	Answer func(model, text, finish string, in, out int) string
	// ToolCall is a complete response asking for one tool call.
	ToolCall func(model, id, name, args string) string
	// Refusal is a response in which the provider flags a refusal.
	Refusal func(model, text string) string
	// Length is finish reason text for an answer cut by max tokens, as the
	// API writes it, and Stop for a normal end.
	Length, Stop string
	// Error is an error body of the API, for a status.
	Error func(status int, code, msg string) string
	// ErrorIn200 is an error object inside a 200 body.
	ErrorIn200 string
	// Codes of the API for some errors.
	ContextTooLong, QuotaCode string
	// Fingerprint is written into answers by Answer, when the API has one.
	Fingerprint string
	// CheckRequest checks the request body the provider sent for the
	// suite's standard request.
	CheckRequest func(body []byte) error
}

// OpenAI is the chat completions API.
var OpenAI = Dialect{
	Name: "openai", Path: "/chat/completions", RequestIDHeader: "X-Request-Id",
	Answer: func(model, text, finish string, in, out int) string {
		c, _ := json.Marshal(text)
		return fmt.Sprintf(`{"id":"chatcmpl-abc123","object":"chat.completion","created":1733000000,"model":%q,"system_fingerprint":"fp_44709d6fcb",`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":%s,"refusal":null,"annotations":[]},"logprobs":null,"finish_reason":%q}],`+
			`"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}},"service_tier":"default"}`,
			model, c, finish, in, out, in+out)
	},
	ToolCall: func(model, id, name, args string) string {
		a, _ := json.Marshal(args)
		return fmt.Sprintf(`{"id":"chatcmpl-tool1","object":"chat.completion","created":1733000000,"model":%q,"system_fingerprint":"fp_44709d6fcb",`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":%q,"type":"function","function":{"name":%q,"arguments":%s}}],"refusal":null},"logprobs":null,"finish_reason":"tool_calls"}],`+
			`"usage":{"prompt_tokens":82,"completion_tokens":17,"total_tokens":99}}`, model, id, name, a)
	},
	Refusal: func(model, text string) string {
		r, _ := json.Marshal(text)
		return fmt.Sprintf(`{"id":"chatcmpl-ref","object":"chat.completion","created":1733000000,"model":%q,`+
			`"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":%s},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`, model, r)
	},
	Length: "length", Stop: "stop",
	Error: func(status int, code, msg string) string {
		typ := "invalid_request_error"
		switch {
		case status == 429:
			typ = "requests"
		case status >= 500:
			typ = "server_error"
		}
		if code == "insufficient_quota" {
			typ = "insufficient_quota"
		}
		c := "null"
		if code != "" {
			c = fmt.Sprintf("%q", code)
		}
		m, _ := json.Marshal(msg)
		return fmt.Sprintf(`{"error":{"message":%s,"type":%q,"param":null,"code":%s}}`, m, typ, c)
	},
	// OpenRouter sends an error object with a numeric code after a 200.
	ErrorIn200:     `{"id":"gen-123","object":"chat.completion","error":{"message":"Upstream provider overloaded","code":502,"metadata":{"provider_name":"x"}}}`,
	ContextTooLong: "context_length_exceeded", QuotaCode: "insufficient_quota",
	Fingerprint: "fp_44709d6fcb",
	CheckRequest: func(body []byte) error {
		var r struct {
			Model    string   `json:"model"`
			Seed     *int64   `json:"seed"`
			Temp     *float64 `json:"temperature"`
			MaxTok   *int     `json:"max_tokens"`
			Messages []struct {
				ToolCallID string `json:"tool_call_id"`
				ToolCalls  []struct {
					ID       string `json:"id"`
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			} `json:"messages"`
			Tools          []struct{ Type string } `json:"tools"`
			ResponseFormat struct {
				Type       string `json:"type"`
				JSONSchema struct {
					Name   string          `json:"name"`
					Schema json.RawMessage `json:"schema"`
				} `json:"json_schema"`
			} `json:"response_format"`
		}
		return checkRequest(body, &r, "system,user,assistant,tool,user", func(want func(bool, string), rolesOK bool) {
			want(r.Model == "test-model", "model "+r.Model)
			want(r.Seed != nil && *r.Seed == 42, "seed not sent as 42")
			want(r.Temp != nil && *r.Temp == 0, "temperature 0 not sent")
			want(r.MaxTok != nil && *r.MaxTok == 300, "max_tokens not 300")
			if rolesOK {
				tc := r.Messages[2].ToolCalls
				want(len(tc) == 1 && tc[0].ID == "call_1" && tc[0].Function.Name == "get_availability" && tc[0].Function.Arguments == "{}" && r.Messages[3].ToolCallID == "call_1",
					"tool call round trip lost")
			}
			want(len(r.Tools) == 1 && r.Tools[0].Type == "function", "tools")
			want(r.ResponseFormat.Type == "json_schema" && r.ResponseFormat.JSONSchema.Name == "answer" && strings.Contains(string(r.ResponseFormat.JSONSchema.Schema), `"selection"`),
				"response_format json_schema")
		})
	},
}

// Anthropic is the Messages API.
var Anthropic = Dialect{
	Name: "anthropic", Path: "/v1/messages", RequestIDHeader: "Request-Id",
	Answer: func(model, text, finish string, in, out int) string {
		t, _ := json.Marshal(text)
		return fmt.Sprintf(`{"id":"msg_013Zva2CMHLNnXjNJJKqJ2EF","type":"message","role":"assistant","model":%q,`+
			`"content":[{"type":"text","text":%s}],"stop_reason":%q,"stop_sequence":null,`+
			`"usage":{"input_tokens":%d,"output_tokens":%d,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}`, model, t, finish, in, out)
	},
	ToolCall: func(model, id, name, args string) string {
		return fmt.Sprintf(`{"id":"msg_01Aq9w938a90dw8q","type":"message","role":"assistant","model":%q,`+
			`"content":[{"type":"text","text":"Let me check the registry."},{"type":"tool_use","id":%q,"name":%q,"input":%s}],`+
			`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":82,"output_tokens":17}}`, model, id, name, args)
	},
	Refusal: func(model, text string) string {
		t, _ := json.Marshal(text)
		return fmt.Sprintf(`{"id":"msg_ref","type":"message","role":"assistant","model":%q,"content":[{"type":"text","text":%s}],"stop_reason":"refusal","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`, model, t)
	},
	Length: "max_tokens", Stop: "end_turn",
	Error: func(status int, code, msg string) string {
		if code == "" {
			code = map[int]string{400: "invalid_request_error", 401: "authentication_error", 403: "permission_error", 404: "not_found_error",
				413: "request_too_large", 429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}[status]
			if code == "" {
				code = "api_error"
			}
		}
		m, _ := json.Marshal(msg)
		return fmt.Sprintf(`{"type":"error","error":{"type":%q,"message":%s},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}`, code, m)
	},
	// A streamed request can fail after its 200: the error arrives as an
	// event; a non-streamed body of that shape must still be classified.
	ErrorIn200:     `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
	ContextTooLong: "invalid_request_error", QuotaCode: "billing_error",
	CheckRequest: func(body []byte) error {
		var r struct {
			Model     string   `json:"model"`
			MaxTokens int      `json:"max_tokens"`
			Temp      *float64 `json:"temperature"`
			System    []struct{ Text string }
			Messages  []struct {
				Content []struct {
					Type      string          `json:"type"`
					ID        string          `json:"id"`
					ToolUseID string          `json:"tool_use_id"`
					Input     json.RawMessage `json:"input"`
				} `json:"content"`
			} `json:"messages"`
			Tools []struct {
				Name        string `json:"name"`
				InputSchema struct {
					Type       string          `json:"type"`
					Properties json.RawMessage `json:"properties"`
				} `json:"input_schema"`
			} `json:"tools"`
		}
		// user, assistant(tool_use), user(tool_result + the next user text)
		return checkRequest(body, &r, "user,assistant,user", func(want func(bool, string), rolesOK bool) {
			want(r.Model == "test-model" && r.MaxTokens == 300, fmt.Sprintf("model %q max_tokens %d", r.Model, r.MaxTokens))
			// anthropic-version 2026-10-21 refuses any temperature.
			want(r.Temp == nil, "temperature sent to an API version that refuses it")
			want(len(r.System) == 1, "system")
			if rolesOK {
				a, u := r.Messages[1].Content, r.Messages[2].Content
				want(len(a) == 1 && a[0].Type == "tool_use" && a[0].ID == "call_1" && len(u) == 2 && u[0].Type == "tool_result" && u[0].ToolUseID == "call_1" && u[1].Type == "text",
					"tool use round trip lost")
			}
			want(len(r.Tools) == 1 && r.Tools[0].InputSchema.Type == "object", "tools")
		})
	},
}

// checkRequest decodes a request body into r and checks it: check reports
// each problem through want, and is told whether the messages have the
// roles wanted (joined by commas); no request may ask for a stream.
func checkRequest(body []byte, r any, roles string, check func(want func(ok bool, problem string), rolesOK bool)) error {
	var common struct {
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
		Stream bool `json:"stream"`
	}
	if err := json.Unmarshal(body, r); err != nil {
		return err
	}
	if err := json.Unmarshal(body, &common); err != nil {
		return err
	}
	var problems []string
	want := func(ok bool, problem string) {
		if !ok {
			problems = append(problems, problem)
		}
	}
	got := []string{}
	for _, m := range common.Messages {
		got = append(got, m.Role)
	}
	rolesOK := strings.Join(got, ",") == roles
	want(rolesOK, "roles "+strings.Join(got, ","))
	check(want, rolesOK)
	want(!common.Stream, "stream")
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}
