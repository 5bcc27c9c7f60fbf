package openai

import (
	"encoding/json"
	"fmt"

	oa "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/buildlab/budge/chat"
)

// Helpers only the tests use, kept out of the production code.

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

func convertTool(t chat.Tool) (oa.ChatCompletionToolUnionParam, error) {
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
	return oa.ChatCompletionFunctionTool(def), nil
}
