package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/buildlab/budge/chat"
)

// The Anthropic Messages wire format, as much of it as the simulator
// reads, decoded with the server's own types (not the SDK's): the
// client and the server stay two implementations of the format.
type anthropicRequest struct {
	Model       string          `json:"model"`
	MaxTokens   int             `json:"max_tokens"`
	System      json.RawMessage `json:"system"` // a string or text blocks
	Messages    []anthropicMsg  `json:"messages"`
	Temperature *float64        `json:"temperature"`
	Tools       []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
	Stream       bool `json:"stream"`
	OutputConfig *struct {
		Format *struct {
			Type   string          `json:"type"`
			Schema json.RawMessage `json:"schema"`
		} `json:"format"`
	} `json:"output_config"`
}

type anthropicMsg struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // a string or blocks
}

type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"` // tool_result: a string or text blocks
}

// blocks reads a content that is a string or an array of blocks.
func blocks(raw json.RawMessage) ([]anthropicBlock, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []anthropicBlock{{Type: "text", Text: s}}, nil
	}
	var bs []anthropicBlock
	if err := json.Unmarshal(raw, &bs); err != nil {
		return nil, fmt.Errorf("must be a string or an array of content blocks")
	}
	return bs, nil
}

func blockText(raw json.RawMessage) (string, error) {
	bs, err := blocks(raw)
	var b strings.Builder
	for _, x := range bs {
		b.WriteString(x.Text)
	}
	return b.String(), err
}

// decodeAnthropicRequest reads a Messages request. The simulator answers
// by the request's content; the Messages API has no seed, so none is set.
func decodeAnthropicRequest(body []byte) (*chat.Request, error) {
	var w anthropicRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, fmt.Errorf("request body is not valid JSON: %v", err)
	}
	if w.Stream {
		return nil, fmt.Errorf("stream: streaming is not supported by budge sim serve")
	}
	if w.Model == "" || len(w.Messages) == 0 || w.MaxTokens <= 0 {
		return nil, fmt.Errorf("model, max_tokens and messages are required")
	}
	req := &chat.Request{Model: w.Model, Settings: chat.Settings{Temperature: w.Temperature, MaxTokens: w.MaxTokens}}
	if sys, err := blockText(w.System); err != nil {
		return nil, fmt.Errorf("system: %v", err)
	} else if sys != "" {
		req.Messages = append(req.Messages, chat.Message{Role: chat.System, Content: sys})
	}
	names := map[string]string{} // tool_use id → tool name, for its result
	for i, m := range w.Messages {
		bs, err := blocks(m.Content)
		if err != nil {
			return nil, fmt.Errorf("messages[%d].content: %v", i, err)
		}
		switch m.Role {
		case "user":
			for _, b := range bs {
				switch b.Type {
				case "text":
					req.Messages = append(req.Messages, chat.Message{Role: chat.User, Content: b.Text})
				case "tool_result":
					text, err := blockText(b.Content)
					if err != nil {
						return nil, fmt.Errorf("messages[%d] tool_result content: %v", i, err)
					}
					req.Messages = append(req.Messages, chat.Message{Role: chat.ToolRole, ToolCallID: b.ToolUseID, Name: names[b.ToolUseID], Content: text})
				default:
					return nil, fmt.Errorf("messages[%d]: block type %q is not served", i, b.Type)
				}
			}
		case "assistant":
			am := chat.Message{Role: chat.Assistant}
			for _, b := range bs {
				switch b.Type {
				case "text":
					am.Content += b.Text
				case "tool_use":
					am.ToolCalls = append(am.ToolCalls, chat.ToolCall{ID: b.ID, Name: b.Name, Arguments: b.Input})
					names[b.ID] = b.Name
				default:
					return nil, fmt.Errorf("messages[%d]: block type %q is not served", i, b.Type)
				}
			}
			if am.Content == "(no content)" && len(am.ToolCalls) > 0 {
				am.Content = ""
			}
			req.Messages = append(req.Messages, am)
		default:
			return nil, fmt.Errorf("messages[%d].role: unknown role %q", i, m.Role)
		}
	}
	for _, t := range w.Tools {
		req.Tools = append(req.Tools, chat.Tool{Name: t.Name, Description: t.Description, Parameters: t.InputSchema})
	}
	if oc := w.OutputConfig; oc != nil && oc.Format != nil && oc.Format.Type == "json_schema" {
		req.ResponseFormat = &chat.ResponseFormat{Name: "answer", Schema: oc.Format.Schema}
	}
	return req, nil
}

// encodeAnthropicResponse writes an answer as a Messages API message.
func encodeAnthropicResponse(r *chat.Response) []byte {
	var content []map[string]any
	text := r.Message.Content
	if text == "" {
		text = r.Message.Refusal
	}
	if text != "" || len(r.Message.ToolCalls) == 0 {
		content = append(content, map[string]any{"type": "text", "text": text})
	}
	for _, tc := range r.Message.ToolCalls {
		input := tc.Arguments
		if len(input) == 0 {
			input = json.RawMessage("{}")
		}
		content = append(content, map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": input})
	}
	stop := "end_turn"
	switch {
	case len(r.Message.ToolCalls) > 0:
		stop = "tool_use"
	case r.FinishReason == "length":
		stop = "max_tokens"
	case r.Message.Refusal != "":
		stop = "refusal"
	}
	id := "msg_" + strings.TrimPrefix(r.Meta.RequestID, "sim-")
	b, _ := json.Marshal(map[string]any{"id": id, "type": "message", "role": "assistant", "model": r.Meta.ModelID,
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]int{"input_tokens": r.Usage.InputTokens, "output_tokens": r.Usage.OutputTokens}})
	return b
}

func writeAnthropicError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}, nil)
}

func contextBackground() context.Context { return context.Background() }

// messages answers one Messages API request (POST /v1/messages).
func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		writeAnthropicError(w, 400, "invalid_request_error", "could not read the request body")
		return
	}
	seq, _, _, _ := s.draw()
	entry := LogEntry{Seq: seq, Time: start.UTC()}
	status, out := s.answer("anthropic", body, &entry)
	entry.Status = status
	entry.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	s.record(entry)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", fmt.Sprintf("req_sim%08d", seq))
	w.WriteHeader(status)
	w.Write(out)
}

func (s *Server) createMessageBatch(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Requests []struct {
			CustomID string          `json:"custom_id"`
			Params   json.RawMessage `json:"params"`
		} `json:"requests"`
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 256<<20+1))
	if err == nil && (len(body) > 256<<20 || s.o.Batch.MaxBytes > 0 && int64(len(body)) > s.o.Batch.MaxBytes) {
		writeAnthropicError(w, 413, "request_too_large", "Request exceeds the maximum allowed number of bytes.")
		return
	}
	if err != nil || json.Unmarshal(body, &req) != nil {
		writeAnthropicError(w, 400, "invalid_request_error", "body is not a message batch request")
		return
	}
	if len(req.Requests) == 0 || len(req.Requests) > 100_000 {
		writeAnthropicError(w, 400, "invalid_request_error", fmt.Sprintf("a batch holds 1 to 100000 requests, got %d", len(req.Requests)))
		return
	}
	ids := map[string]bool{}
	var lines []batchRequest
	for i, q := range req.Requests {
		if !validCustomID(q.CustomID) || ids[q.CustomID] {
			writeAnthropicError(w, 400, "invalid_request_error", fmt.Sprintf("requests[%d].custom_id %q is invalid or repeated", i, q.CustomID))
			return
		}
		ids[q.CustomID] = true
		// The params as they were kept within a line of the batch, compact
		// and with HTML escapes (json.Marshal of them).
		params, _ := json.Marshal(q.Params)
		lines = append(lines, batchRequest{q.CustomID, params})
	}
	sb := s.newBatch("anthropic", lines, nil)
	if s.loseAnswer(w, sb.nth) {
		return
	}
	writeJSON(w, 200, s.anthropicBatch(sb, r), nil)
}

// validCustomID is the Message Batches rule: 1 to 64 of letters, digits,
// - and _.
func validCustomID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func (s *Server) getMessageBatch(w http.ResponseWriter, r *http.Request) {
	if sb := s.lookupBatch(w, r.PathValue("id"), "anthropic"); sb != nil {
		s.advance(sb)
		writeJSON(w, 200, s.anthropicBatch(sb, r), nil)
	}
}

func (s *Server) cancelMessageBatch(w http.ResponseWriter, r *http.Request) {
	if sb := s.lookupBatch(w, r.PathValue("id"), "anthropic"); sb != nil {
		s.cancel(sb)
		writeJSON(w, 200, s.anthropicBatch(sb, r), nil)
	}
}

func (s *Server) messageBatchResults(w http.ResponseWriter, r *http.Request) {
	sb := s.lookupBatch(w, r.PathValue("id"), "anthropic")
	if sb == nil {
		return
	}
	if moved := strings.HasSuffix(r.URL.Path, "/moved-results"); moved != s.o.Batch.MoveResults {
		writeAnthropicError(w, 404, "not_found_error", "Not found")
		return
	}
	sb.mu.Lock()
	ended, results := sb.status == "ended", sb.results
	sb.mu.Unlock()
	if !ended {
		writeAnthropicError(w, 400, "invalid_request_error", "the batch has not ended")
		return
	}
	s.download(w, "application/x-jsonl", sb.id, results)
}

// listMessageBatches lists message batches, newest first, by pages of
// limit after after_id.
func (s *Server) listMessageBatches(w http.ResponseWriter, r *http.Request) {
	b := s.bt()
	limit := pageLimit(r, 1000)
	after := r.URL.Query().Get("after_id")
	b.mu.Lock()
	var all []*simBatch
	for i := len(b.order) - 1; i >= 0; i-- {
		if sb := b.batches[b.order[i]]; sb != nil && sb.style == "anthropic" && !sb.gone {
			all = append(all, sb)
		}
	}
	b.mu.Unlock()
	start := 0
	if after != "" {
		start = len(all)
		for i, sb := range all {
			if sb.id == after {
				start = i + 1
			}
		}
	}
	data := []any{}
	more := false
	first, last := "", ""
	for _, sb := range all[start:] {
		if len(data) == limit {
			more = true
			break
		}
		s.advance(sb)
		data = append(data, s.anthropicBatch(sb, r))
		if first == "" {
			first = sb.id
		}
		last = sb.id
	}
	writeJSON(w, 200, map[string]any{"data": data, "has_more": more, "first_id": first, "last_id": last}, nil)
}

func (s *Server) deleteMessageBatch(w http.ResponseWriter, r *http.Request) {
	sb := s.lookupBatch(w, r.PathValue("id"), "anthropic")
	if sb == nil {
		return
	}
	b := s.bt()
	b.mu.Lock()
	sb.gone = true
	b.deleted++
	b.mu.Unlock()
	sb.mu.Lock()
	sb.results = nil // deleted with it
	sb.mu.Unlock()
	writeJSON(w, 200, map[string]any{"id": sb.id, "type": "message_batch_deleted"}, nil)
}

func (s *Server) anthropicBatch(sb *simBatch, r *http.Request) map[string]any {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	processing := 0
	if sb.status == "in_progress" {
		processing = len(sb.lines)
	}
	m := map[string]any{"id": sb.id, "type": "message_batch", "processing_status": sb.status,
		"created_at": sb.created.UTC().Format(time.RFC3339), "expires_at": sb.created.Add(24 * time.Hour).UTC().Format(time.RFC3339),
		"request_counts": map[string]int{"processing": processing, "succeeded": sb.completed, "errored": sb.failed,
			"canceled": sb.cancelled, "expired": sb.expired},
		"results_url": nil, "ended_at": nil, "cancel_initiated_at": nil, "archived_at": nil}
	if sb.status == "ended" {
		m["ended_at"] = sb.ended.UTC().Format(time.RFC3339)
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		prefix := ""
		if strings.HasPrefix(r.URL.Path, "/v1/") {
			prefix = "/v1"
		}
		path := "results"
		if s.o.Batch.MoveResults {
			path = "moved-results"
		}
		m["results_url"] = fmt.Sprintf("%s://%s%s/messages/batches/%s/%s", scheme, r.Host, prefix, sb.id, path)
	}
	return m
}
