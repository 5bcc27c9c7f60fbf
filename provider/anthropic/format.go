// Package anthropic talks to Anthropic's Messages API through the official
// Go SDK, tool use included.
//
// format.go converts between budge's neutral chat types and the Messages
// wire format and does no I/O; client.go sends requests. The API key lives
// only in the SDK client's headers.
package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	an "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider"
)

// Structured output modes.
const (
	// NoFormat (the default) sends no output format: the prompt asks for the
	// JSON answer, which every model understands.
	NoFormat = "none"
	// JSONSchema sends output_config.format with the answer schema, for
	// models that support structured outputs.
	JSONSchema = "json_schema"
)

// DefaultMaxTokens is sent when a request sets none: the API requires it.
const DefaultMaxTokens = 1024

// emptyText stands in for an empty assistant answer when it is sent back in
// a later turn: the API rejects empty text blocks.
const emptyText = "(no content)"

// Format is how requests are written.
type Format struct {
	Structured string `json:"structured_output"` // NoFormat (default) or JSONSchema
}

// Validate reports every problem with the format.
func (f Format) Validate() []error {
	switch f.Structured {
	case "", NoFormat, JSONSchema:
		return nil
	}
	return []error{fmt.Errorf("structured_output must be %s or %s for anthropic, got %q", NoFormat, JSONSchema, f.Structured)}
}

// Params converts a neutral request into the SDK's parameters. Extra holds
// body fields the SDK's parameter type lacks, to be set with
// option.WithJSONSet (none today: the sampling parameters it lacks are
// the ones the pinned API version refuses).
func Params(req *chat.Request, f Format) (p an.MessageNewParams, extra map[string]any, err error) {
	p = an.MessageNewParams{Model: an.Model(req.Model), MaxTokens: DefaultMaxTokens}
	if req.Settings.MaxTokens > 0 {
		p.MaxTokens = int64(req.Settings.MaxTokens)
	}
	add := func(role chat.Role, b an.ContentBlockParamUnion) {
		n := len(p.Messages)
		if n > 0 {
			last := &p.Messages[n-1]
			// The API wants user and assistant turns to alternate: merge
			// consecutive messages of one role (tool results and a notice).
			if role == chat.Assistant && last.OfAssistant != nil {
				last.OfAssistant.Content = append(last.OfAssistant.Content, b)
				return
			}
			if role != chat.Assistant && last.OfUser != nil {
				last.OfUser.Content = append(last.OfUser.Content, b)
				return
			}
		}
		if role == chat.Assistant {
			p.Messages = append(p.Messages, an.NewAssistantMessage(b))
		} else {
			p.Messages = append(p.Messages, an.NewUserMessage(b))
		}
	}
	for i, m := range req.Messages {
		switch m.Role {
		case chat.System:
			p.System = append(p.System, an.TextBlockParam{Text: m.Content})
		case chat.User:
			add(chat.User, an.NewTextBlock(m.Content))
		case chat.ToolRole:
			add(chat.User, an.NewToolResultBlock(m.ToolCallID, m.Content, false))
		case chat.Assistant:
			text := m.Content
			if text == "" && m.Refusal != "" {
				text = m.Refusal
			}
			if text != "" || len(m.ToolCalls) == 0 {
				if strings.TrimSpace(text) == "" {
					text = emptyText
				}
				add(chat.Assistant, an.NewTextBlock(text))
			}
			for _, tc := range m.ToolCalls {
				input := tc.Arguments
				if len(input) == 0 || !json.Valid(input) || bytes.TrimSpace(input)[0] != '{' {
					input = json.RawMessage("{}")
				}
				add(chat.Assistant, an.NewToolUseBlock(tc.ID, input, tc.Name))
			}
		default:
			return p, nil, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
	}
	for _, t := range req.Tools {
		schema, err := inputSchema(t.Parameters)
		if err != nil {
			return p, nil, fmt.Errorf("tool %s: %w", t.Name, err)
		}
		tp := an.ToolParam{Name: t.Name, InputSchema: schema}
		if t.Description != "" {
			tp.Description = an.String(t.Description)
		}
		p.Tools = append(p.Tools, an.ToolUnionParam{OfTool: &tp})
	}
	if rf := req.ResponseFormat; rf != nil && f.Structured == JSONSchema {
		var schema map[string]any
		if err := json.Unmarshal(rf.Schema, &schema); err != nil {
			return p, nil, fmt.Errorf("answer schema is not a JSON object: %w", err)
		}
		p.OutputConfig.Format = an.JSONOutputFormatParam{Schema: schema}
	}
	// The pinned SDK sends anthropic-version 2026-10-21, which refuses
	// temperature, top_p and top_k at any value (a 400): the request's
	// temperature is recorded in the store but not sent.
	// Anthropic has no seed: the request's seed is recorded in the store
	// but not sent.
	return p, extra, nil
}

func inputSchema(raw json.RawMessage) (an.ToolInputSchemaParam, error) {
	var s an.ToolInputSchemaParam
	if len(raw) == 0 {
		return s, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return s, fmt.Errorf("parameters are not a JSON object: %w", err)
	}
	for k, v := range fields {
		switch k {
		case "type":
		case "properties":
			s.Properties = v
		case "required":
			if err := json.Unmarshal(v, &s.Required); err != nil {
				return s, fmt.Errorf("required: %w", err)
			}
		default:
			if s.ExtraFields == nil {
				s.ExtraFields = map[string]any{}
			}
			s.ExtraFields[k] = v
		}
	}
	return s, nil
}

// Decode converts a Messages API body into a neutral response. A body that
// is not a message is Malformed (retried); an error object in a 200 body
// is classified like an HTTP error.
func Decode(body []byte) (*chat.Response, error) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return nil, &provider.Error{Kind: provider.Malformed, Status: 200, Msg: "empty response body"}
	}
	if !json.Valid(trimmed) {
		return nil, &provider.Error{Kind: provider.Malformed, Status: 200, Msg: "response body is not JSON: " + provider.Excerpt(trimmed, 80)}
	}
	var probe struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(trimmed, &probe)
	if probe.Type == "error" {
		code, msg := ErrorBody(trimmed)
		e := provider.ClassifyHTTP(provider.HTTPFailure{Status: statusOf(code), Body: trimmed, Code: code, Message: msg})
		e.Msg = "error in a 200 response: " + e.Msg
		return nil, e
	}
	var m an.Message
	if err := json.Unmarshal(trimmed, &m); err != nil {
		return nil, &provider.Error{Kind: provider.Malformed, Status: 200, Msg: "response body is not a message", Err: err}
	}
	if probe.Type != "message" || m.StopReason == "" && len(m.Content) == 0 {
		return nil, &provider.Error{Kind: provider.Malformed, Status: 200, Msg: "response body is not a complete message"}
	}
	msg := chat.Message{Role: chat.Assistant}
	var text strings.Builder
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			args := b.Input
			if len(args) == 0 {
				args = json.RawMessage("{}")
			}
			msg.ToolCalls = append(msg.ToolCalls, chat.ToolCall{ID: b.ID, Name: b.Name, Arguments: append(json.RawMessage(nil), args...)})
		}
	}
	msg.Content = text.String()
	finish := string(m.StopReason)
	switch m.StopReason {
	case an.StopReasonEndTurn, an.StopReasonStopSequence:
		finish = "stop"
	case an.StopReasonToolUse:
		finish = "tool_calls"
	case an.StopReasonMaxTokens, an.StopReasonModelContextWindowExceeded:
		finish = "length"
	case an.StopReasonRefusal:
		// A refusal flagged by the provider is kept apart from content.
		msg.Refusal = msg.Content
		if msg.Refusal == "" {
			msg.Refusal = "refused (stop_reason refusal)"
		}
		msg.Content = ""
	}
	return &chat.Response{Message: msg, FinishReason: finish,
		Usage: chat.Usage{InputTokens: int(m.Usage.InputTokens + m.Usage.CacheReadInputTokens + m.Usage.CacheCreationInputTokens), OutputTokens: int(m.Usage.OutputTokens)},
		Meta:  chat.Meta{Provider: "anthropic", ModelID: string(m.Model), RequestID: m.ID},
		Raw:   body}, nil
}

// ErrorBody reads {"type": "error", "error": {"type", "message"}}.
func ErrorBody(body []byte) (code, msg string) {
	var b struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(bytes.TrimSpace(body), &b) != nil {
		return "", ""
	}
	return b.Error.Type, b.Error.Message
}

// statusOf maps an error type met in a 200 body to its documented status.
func statusOf(code string) int {
	switch code {
	case "invalid_request_error":
		return 400
	case "authentication_error":
		return 401
	case "permission_error":
		return 403
	case "not_found_error":
		return 404
	case "request_too_large":
		return 413
	case "rate_limit_error":
		return 429
	case "overloaded_error":
		return 529
	}
	return 500
}
