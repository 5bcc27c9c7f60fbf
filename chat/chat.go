// Package chat holds the neutral conversation types that every protocol,
// provider and store speaks: messages with roles, tool calls and tool
// results, a request with generation settings, and a response with usage and
// the provider's own metadata.
//
// It does no I/O and knows no provider. Providers convert to and from these
// types; protocols build them; the store persists them.
package chat

import (
	"encoding/json"
)

// Role says who produced a message.
type Role string

const (
	System    Role = "system"
	User      Role = "user"
	Assistant Role = "assistant"
	ToolRole  Role = "tool"
)

// ToolCall is a model's request to run a tool.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// Message is one turn of a conversation.
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content,omitempty"`
	// ToolCalls is set on assistant messages that ask for tools.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID and Name are set on tool messages: which call this answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
	Name       string `json:"name,omitempty"`
	// Refusal carries a provider-flagged refusal (OpenAI's message.refusal,
	// Anthropic's stop_reason "refusal"), kept apart from ordinary content.
	Refusal string `json:"refusal,omitempty"`
}

// Tool describes a function the model may call. Parameters is a JSON Schema.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Settings are the generation settings declared for a run. Pointers
// distinguish "not sent" from a zero value.
type Settings struct {
	Temperature *float64 `json:"temperature,omitempty"`
	MaxTokens   int      `json:"max_tokens,omitempty"`
	Seed        *int64   `json:"seed,omitempty"`
}

// ResponseFormat asks for structured output that follows a JSON Schema.
type ResponseFormat struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict bool            `json:"strict,omitempty"`
}

// Request is one call to a model.
type Request struct {
	Model          string          `json:"model"`
	Messages       []Message       `json:"messages"`
	Tools          []Tool          `json:"tools,omitempty"`
	Settings       Settings        `json:"settings"`
	ResponseFormat *ResponseFormat `json:"response_format,omitempty"`
}

// Usage counts tokens as the provider reports them.
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// Meta is what the provider says about the call itself.
type Meta struct {
	Provider    string `json:"provider"`
	ModelID     string `json:"model_id,omitempty"` // as the provider reports it
	Fingerprint string `json:"fingerprint,omitempty"`
	RequestID   string `json:"request_id,omitempty"`
}

// Response is a model's answer to a Request.
type Response struct {
	Message      Message `json:"message"`
	FinishReason string  `json:"finish_reason,omitempty"`
	Usage        Usage   `json:"usage"`
	Meta         Meta    `json:"meta"`
	// Raw is the exact body received, when the provider has one; it is stored
	// as an artifact and never parsed again by the protocol.
	Raw []byte `json:"-"`
}

// Clone returns a deep copy of msgs so a conversation can hand its history to
// a provider without the provider aliasing it.
func Clone(msgs []Message) []Message {
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		out[i] = m
		if m.ToolCalls != nil {
			out[i].ToolCalls = append([]ToolCall(nil), m.ToolCalls...)
		}
	}
	return out
}

// Entry is one message of a transcript together with the protocol phase it
// belongs to ("initial", "followup", ...).
type Entry struct {
	Phase string `json:"phase"`
	Message
}

// Messages are the messages of entries, in order: a conversation as sent.
func Messages(entries []Entry) []Message {
	msgs := make([]Message, len(entries))
	for i, e := range entries {
		msgs[i] = e.Message
	}
	return msgs
}
