// Package openai talks to OpenAI-compatible chat completion endpoints
// (OpenAI, OpenRouter, vLLM, Ollama, llama.cpp's server, LM Studio, budge's
// own simulator server) through the official Go SDK.
//
// format.go converts between budge's neutral chat types and the wire format
// and does no I/O; client.go sends requests. Neither keeps an API key
// anywhere but in the SDK client's headers.
package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider"
)

// Structured output modes: how the answer schema of a request is sent.
const (
	// JSONSchema sends response_format {type: json_schema} with the schema
	// (OpenAI, vLLM, Ollama, llama.cpp, LM Studio).
	JSONSchema = "json_schema"
	// JSONObject asks only for some JSON object: the declared fallback for
	// endpoints without schema support. The prompt still describes the answer.
	JSONObject = "json_object"
	// NoFormat sends no response_format: the prompt alone asks for JSON.
	NoFormat = "none"
)

// Format is how requests are written for one endpoint.
type Format struct {
	Structured string `json:"structured_output"` // JSONSchema (default), JSONObject or NoFormat
	// MaxTokensField is "max_tokens" (default; every compatible server) or
	// "max_completion_tokens" (OpenAI's newer models require it).
	MaxTokensField string `json:"max_tokens_field"`
	// NoSeed leaves the seed out, for servers that reject it.
	NoSeed bool `json:"no_seed,omitempty"`
}

// Validate reports every problem with the format.
func (f Format) Validate() []error {
	var errs []error
	switch f.Structured {
	case "", JSONSchema, JSONObject, NoFormat:
	default:
		errs = append(errs, fmt.Errorf("structured_output must be %s, %s or %s, got %q", JSONSchema, JSONObject, NoFormat, f.Structured))
	}
	switch f.MaxTokensField {
	case "", "max_tokens", "max_completion_tokens":
	default:
		errs = append(errs, fmt.Errorf("max_tokens_field must be max_tokens or max_completion_tokens, got %q", f.MaxTokensField))
	}
	return errs
}

// Params converts a neutral request into the SDK's request parameters.
func Params(req *chat.Request, f Format) (oa.ChatCompletionNewParams, error) {
	p := oa.ChatCompletionNewParams{Model: shared.ChatModel(req.Model)}
	for i, m := range req.Messages {
		switch m.Role {
		case chat.System:
			p.Messages = append(p.Messages, oa.SystemMessage(m.Content))
		case chat.User:
			p.Messages = append(p.Messages, oa.UserMessage(m.Content))
		case chat.ToolRole:
			p.Messages = append(p.Messages, oa.ToolMessage(m.Content, m.ToolCallID))
		case chat.Assistant:
			a := oa.ChatCompletionAssistantMessageParam{}
			if m.Content != "" || len(m.ToolCalls) == 0 {
				a.Content.OfString = oa.String(m.Content)
			}
			if m.Refusal != "" {
				a.Refusal = oa.String(m.Refusal)
			}
			for _, tc := range m.ToolCalls {
				args := string(tc.Arguments)
				if args == "" {
					args = "{}"
				}
				a.ToolCalls = append(a.ToolCalls, oa.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &oa.ChatCompletionMessageFunctionToolCallParam{ID: tc.ID,
						Function: oa.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: args}}})
			}
			p.Messages = append(p.Messages, oa.ChatCompletionMessageParamUnion{OfAssistant: &a})
		default:
			return p, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
	}
	for _, t := range req.Tools {
		tool, err := convertTool(t)
		if err != nil {
			return p, err
		}
		p.Tools = append(p.Tools, tool)
	}
	if rf := req.ResponseFormat; rf != nil {
		switch f.Structured {
		case "", JSONSchema:
			js := shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: rf.Name, Schema: rf.Schema}
			if rf.Strict {
				js.Strict = oa.Bool(true)
			}
			p.ResponseFormat.OfJSONSchema = &shared.ResponseFormatJSONSchemaParam{JSONSchema: js}
		case JSONObject:
			p.ResponseFormat.OfJSONObject = &shared.ResponseFormatJSONObjectParam{}
		}
	}
	s := req.Settings
	if s.Temperature != nil {
		p.Temperature = oa.Float(*s.Temperature)
	}
	if s.Seed != nil && !f.NoSeed {
		p.Seed = oa.Int(*s.Seed)
	}
	if s.MaxTokens > 0 {
		if f.MaxTokensField == "max_completion_tokens" {
			p.MaxCompletionTokens = oa.Int(int64(s.MaxTokens))
		} else {
			p.MaxTokens = oa.Int(int64(s.MaxTokens))
		}
	}
	return p, nil
}

// tools memoizes tool conversions: a run sends the same few tools with
// every request, and parsing their schemas again each time showed up in
// profiles of the loopback benchmark. The cached value is never modified.
var (
	tools     sync.Map // tool JSON -> oa.ChatCompletionToolUnionParam
	toolCount atomic.Int64
)

// maxCachedTools bounds the memo: a caller with ever-new tools gets no
// caching rather than unbounded memory.
const maxCachedTools = 1024

func convertTool(t chat.Tool) (oa.ChatCompletionToolUnionParam, error) {
	key := t.Name + "\x00" + t.Description + "\x00" + string(t.Parameters)
	if v, ok := tools.Load(key); ok {
		return v.(oa.ChatCompletionToolUnionParam), nil
	}
	var params map[string]any
	if len(t.Parameters) > 0 {
		if err := json.Unmarshal(t.Parameters, &params); err != nil {
			return oa.ChatCompletionToolUnionParam{}, fmt.Errorf("tool %s: parameters are not a JSON object: %w", t.Name, err)
		}
	}
	def := shared.FunctionDefinitionParam{Name: t.Name, Parameters: params}
	if t.Description != "" {
		def.Description = oa.String(t.Description)
	}
	tool := oa.ChatCompletionFunctionTool(def)
	if toolCount.Add(1) <= maxCachedTools {
		tools.Store(key, tool)
	}
	return tool, nil
}

// Decode converts a chat completion body into a neutral response. A body
// that is not a well-formed completion is a Malformed error (a broken
// transport, retried); a body that carries an error object instead of a
// completion, as some routers send after a 200, is classified like an HTTP
// error.
func Decode(body []byte) (*chat.Response, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, &provider.Error{Kind: provider.Malformed, Status: 200, Msg: "empty response body"}
	}
	if !json.Valid(trimmed) {
		return nil, &provider.Error{Kind: provider.Malformed, Status: 200, Msg: "response body is not JSON: " + provider.Excerpt(trimmed, 80)}
	}
	var probe struct {
		Error   json.RawMessage `json:"error"`
		Choices json.RawMessage `json:"choices"`
	}
	if bytes.Contains(trimmed, []byte(`"error"`)) {
		_ = json.Unmarshal(trimmed, &probe)
	}
	if len(probe.Choices) == 0 && len(probe.Error) > 0 && string(probe.Error) != "null" {
		code, msg := ErrorBody(trimmed)
		status := 502
		if n, err := strconv.Atoi(code); err == nil && n >= 400 && n < 600 {
			status = n
		}
		e := provider.ClassifyHTTP(provider.HTTPFailure{Status: status, Body: trimmed, Code: code, Message: msg})
		e.Msg = "error in a 200 response: " + e.Msg
		return nil, e
	}
	var cc oa.ChatCompletion
	if err := json.Unmarshal(trimmed, &cc); err != nil {
		return nil, &provider.Error{Kind: provider.Malformed, Status: 200, Msg: "response body is not a chat completion", Err: err}
	}
	if len(cc.Choices) == 0 {
		return nil, &provider.Error{Kind: provider.Malformed, Status: 200, Msg: "chat completion without choices"}
	}
	ch := cc.Choices[0]
	m := chat.Message{Role: chat.Assistant, Content: ch.Message.Content, Refusal: ch.Message.Refusal}
	for _, tc := range ch.Message.ToolCalls {
		args := json.RawMessage(tc.Function.Arguments)
		if tc.Function.Arguments == "" {
			args = json.RawMessage("{}")
		} else if !json.Valid(args) {
			// A model's broken arguments are its answer: keep them as a
			// JSON string so the transcript stays valid JSON.
			b, _ := json.Marshal(tc.Function.Arguments)
			args = b
		}
		m.ToolCalls = append(m.ToolCalls, chat.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: args})
	}
	return &chat.Response{Message: m, FinishReason: ch.FinishReason,
		Usage: chat.Usage{InputTokens: int(cc.Usage.PromptTokens), OutputTokens: int(cc.Usage.CompletionTokens)},
		Meta:  chat.Meta{Provider: "openai", ModelID: cc.Model, Fingerprint: cc.SystemFingerprint, RequestID: cc.ID},
		Raw:   body}, nil
}

// ErrorBody reads the error code and message out of an error body in any of
// the shapes OpenAI-compatible servers use:
// {"error": {"message", "type", "code"}}, {"error": "text"},
// {"object": "error", "message", "code"} (vLLM), {"detail": "..."}.
func ErrorBody(body []byte) (code, msg string) {
	var b struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(bytes.TrimSpace(body), &b) != nil {
		return "", ""
	}
	if len(b.Error) > 0 && b.Error[0] == '{' {
		var e struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Code    json.RawMessage `json:"code"`
		}
		if json.Unmarshal(b.Error, &e) == nil {
			return firstOf(rawString(e.Code), e.Type), e.Message
		}
	}
	if len(b.Error) > 0 && b.Error[0] == '"' {
		var s string
		_ = json.Unmarshal(b.Error, &s)
		return firstOf(rawString(b.Code), b.Type), s
	}
	if b.Message != "" {
		return firstOf(rawString(b.Code), b.Type), b.Message
	}
	if len(b.Detail) > 0 {
		return "", strings.Trim(string(b.Detail), `"`)
	}
	return "", ""
}

func rawString(r json.RawMessage) string {
	s := strings.TrimSpace(string(r))
	if s == "" || s == "null" {
		return ""
	}
	return strings.Trim(s, `"`)
}

func firstOf(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
