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
	"errors"
	"fmt"
	"strconv"
	"strings"

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

// Body writes the request body for an endpoint: the same JSON as the SDK's
// own encoding of Params(req, f) (a test holds them equal), written with
// encoding/json. The SDK's reflective encoder was the largest single CPU
// cost of a call in the loopback benchmark, four times encoding/json; the
// SDK still sends the body, with its authentication and base URL handling.
func Body(req *chat.Request, f Format) ([]byte, error) {
	w := wireRequest{Model: req.Model, Messages: make([]wireMessage, 0, len(req.Messages))}
	for i := range req.Messages {
		m := &req.Messages[i]
		wm := wireMessage{Role: string(m.Role)}
		switch m.Role {
		case chat.System, chat.User:
			wm.Content = &m.Content
		case chat.ToolRole:
			wm.Content, wm.ToolCallID = &m.Content, m.ToolCallID
		case chat.Assistant:
			if m.Content != "" || len(m.ToolCalls) == 0 {
				wm.Content = &m.Content
			}
			if m.Refusal != "" {
				wm.Refusal = &m.Refusal
			}
			for _, tc := range m.ToolCalls {
				args := string(tc.Arguments)
				if args == "" {
					args = "{}"
				}
				wm.ToolCalls = append(wm.ToolCalls, wireCall{ID: tc.ID, Type: "function", Function: wireFunction{Name: tc.Name, Arguments: args}})
			}
		default:
			return nil, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
		w.Messages = append(w.Messages, wm)
	}
	for _, t := range req.Tools {
		params := t.Parameters
		if len(params) == 0 {
			params = nil
		} else if !json.Valid(params) || bytes.TrimSpace(params)[0] != '{' {
			return nil, fmt.Errorf("tool %s: parameters are not a JSON object", t.Name)
		}
		w.Tools = append(w.Tools, wireTool{Type: "function", Function: wireToolDef{Name: t.Name, Description: t.Description, Parameters: params}})
	}
	if rf := req.ResponseFormat; rf != nil {
		switch f.Structured {
		case "", JSONSchema:
			w.ResponseFormat = &wireFormat{Type: "json_schema", JSONSchema: &wireSchema{Name: rf.Name, Schema: rf.Schema, Strict: rf.Strict}}
		case JSONObject:
			w.ResponseFormat = &wireFormat{Type: "json_object"}
		}
	}
	s := req.Settings
	w.Temperature = s.Temperature
	if s.Seed != nil && !f.NoSeed {
		w.Seed = s.Seed
	}
	if s.MaxTokens > 0 {
		n := s.MaxTokens
		if f.MaxTokensField == "max_completion_tokens" {
			w.MaxCompletionTokens = &n
		} else {
			w.MaxTokens = &n
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(w); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

type wireRequest struct {
	Messages            []wireMessage `json:"messages"`
	Model               string        `json:"model"`
	MaxCompletionTokens *int          `json:"max_completion_tokens,omitempty"`
	MaxTokens           *int          `json:"max_tokens,omitempty"`
	Seed                *int64        `json:"seed,omitempty"`
	Temperature         *float64      `json:"temperature,omitempty"`
	ResponseFormat      *wireFormat   `json:"response_format,omitempty"`
	Tools               []wireTool    `json:"tools,omitempty"`
}

type wireMessage struct {
	Content    *string    `json:"content,omitempty"`
	Refusal    *string    `json:"refusal,omitempty"`
	ToolCalls  []wireCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Role       string     `json:"role"`
}

type wireCall struct {
	ID       string       `json:"id"`
	Function wireFunction `json:"function"`
	Type     string       `json:"type"`
}

type wireFunction struct {
	Arguments string `json:"arguments"`
	Name      string `json:"name"`
}

type wireTool struct {
	Function wireToolDef `json:"function"`
	Type     string      `json:"type"`
}

type wireToolDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

type wireFormat struct {
	JSONSchema *wireSchema `json:"json_schema,omitempty"`
	Type       string      `json:"type"`
}

type wireSchema struct {
	Name   string          `json:"name"`
	Strict bool            `json:"strict,omitempty"`
	Schema json.RawMessage `json:"schema,omitempty"`
}

// Decode converts a chat completion body into a neutral response. A body
// that is not a well-formed completion is a Malformed error (a broken
// transport, retried); a body that carries an error object instead of a
// completion, as some routers send after a 200, is classified like an HTTP
// error. It reads the documented shape with encoding/json in one pass; a
// test holds its results equal to the SDK's ChatCompletion decoding, which
// cost five times as much per call.
func Decode(body []byte) (*chat.Response, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, &provider.Error{Kind: provider.Malformed, Status: 200, Msg: "empty response body"}
	}
	var cc wireResponse
	if err := json.Unmarshal(trimmed, &cc); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) || trimmed[0] != '{' {
			return nil, &provider.Error{Kind: provider.Malformed, Status: 200, Msg: "response body is not JSON: " + provider.Excerpt(trimmed, 80)}
		}
		return nil, &provider.Error{Kind: provider.Malformed, Status: 200, Msg: "response body is not a chat completion", Err: err}
	}
	if len(cc.Choices) == 0 && len(cc.Error) > 0 && string(cc.Error) != "null" {
		code, msg := ErrorBody(trimmed)
		status := 502
		if n, err := strconv.Atoi(code); err == nil && n >= 400 && n < 600 {
			status = n
		}
		e := provider.ClassifyHTTP(provider.HTTPFailure{Status: status, Body: trimmed, Code: code, Message: msg})
		e.Msg = "error in a 200 response: " + e.Msg
		return nil, e
	}
	if len(cc.Choices) == 0 {
		return nil, &provider.Error{Kind: provider.Malformed, Status: 200, Msg: "chat completion without choices"}
	}
	ch := cc.Choices[0]
	m := chat.Message{Role: chat.Assistant, Content: ch.Message.Content, Refusal: ch.Message.Refusal}
	if ch.FinishReason == ContentFilter && m.Refusal == "" {
		// The provider's filter stopped the reply: whatever content came is
		// not the model's answer, and every protocol reads it as a refusal.
		m.Refusal = ContentFilterRefusal
	}
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

// ContentFilter is the finish_reason of a reply the provider's content
// filter stopped; ContentFilterRefusal is the refusal it is carried as.
const (
	ContentFilter        = "content_filter"
	ContentFilterRefusal = "content filter: the provider stopped the reply (finish_reason content_filter)"
)

// wireResponse is the part of a chat completion budge reads. Strings that
// may be null decode to "".
type wireResponse struct {
	ID                string `json:"id"`
	Model             string `json:"model"`
	SystemFingerprint string `json:"system_fingerprint"`
	Choices           []struct {
		Message struct {
			Content   string     `json:"content"`
			Refusal   string     `json:"refusal"`
			ToolCalls []wireCall `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     float64 `json:"prompt_tokens"`
		CompletionTokens float64 `json:"completion_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
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
