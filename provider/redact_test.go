package provider

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/buildlab/budge/chat"
)

const testKey = "fakekey-AbCdEfGhIjKlMnOpQrStUvWx"

func TestRedactorValues(t *testing.T) {
	r := NewRedactor(testKey, "")
	for _, c := range []struct{ in, want string }{
		{"Incorrect API key provided: " + testKey + ".", "Incorrect API key provided: [redacted]."},
		// A key masked in the middle: a run of 12 or more of its characters
		// goes; the last four, which servers show on purpose, stay.
		{"Incorrect API key provided: fakekey-AbCd****UvWx", "Incorrect API key provided: [redacted]****UvWx"},
		{"masked fakekey-****IjKlMnOpQrStUvWx", "masked fakekey-****[redacted]"},
		{"fragment " + testKey[8:20] + " end", "fragment [redacted] end"},
		{"two " + testKey + testKey + " keys", "two [redacted] keys"},
		{`{"key":"` + testKey + `"}`, `{"key":"[redacted]"}`},
		// Key shapes, known or not.
		{"Authorization: Bearer abcdefghijklmnop1234", "Authorization: Bearer [redacted]"},
		{"OPENAI_API_KEY=" + "sk-" + "proj-abcDEF123456ghiJKL789_x", "OPENAI_API_KEY=[redacted]"},
		{`{"k":"` + "sk-" + `ant-api03-abcdefghijklmnopqrstu-vw"}`, `{"k":"[redacted]"}`},
		{"google AIzaSyA1234567890abcdefghijklmnopqrstu", "google [redacted]"},
		// Words stay words.
		{"Incorrect API key provided: check the key you provided.", "Incorrect API key provided: check the key you provided."},
		{`{"x-api-key": "zzzzzzzzzzzz"} api_key=provided`, `{"x-api-key": "zzzzzzzzzzzz"} api_key=provided`},
		{"Bearer of bad news; the task-force decided", "Bearer of bad news; the task-force decided"},
		{"authentication_error: invalid x-api-key", "authentication_error: invalid x-api-key"},
	} {
		if got := r.String(c.in); got != c.want {
			t.Errorf("%q\n  got  %q\n  want %q", c.in, got, c.want)
		}
	}
	e := r.Error(&Error{Kind: Auth, Msg: "Incorrect API key provided: " + testKey, Err: errors.New("key=" + testKey)})
	if s := e.Error(); strings.Contains(s, testKey[8:20]) || !strings.Contains(s, "Incorrect API key provided") {
		t.Errorf("error: %v", s)
	}
	in := []byte("keep " + testKey)
	if out := r.Redact(in); string(in) != "keep "+testKey || string(out) != "keep [redacted]" {
		t.Errorf("Redact must copy, not change its argument: %q -> %q", in, out)
	}
	if clean := []byte("nothing here"); &r.Redact(clean)[0] != &clean[0] {
		t.Errorf("a body without secrets is returned as it is")
	}
}

func TestRedactorIgnoresWords(t *testing.T) {
	// Placeholder keys of local servers are words: redacting them would
	// blank the text ("ollama" in a model id).
	r := NewRedactor("EMPTY", "ollama", "abc", "password", "", "  ")
	if r.Len() != 0 {
		t.Errorf("%d secrets kept from placeholders", r.Len())
	}
	s := "model ollama/llama3, key EMPTY, password reset"
	if got := r.String(s); got != s {
		t.Errorf("%q -> %q", s, got)
	}
	if n := NewRedactor(testKey).With(testKey, "other-secret-42").Len(); n != 2 {
		t.Errorf("With: %d secrets, want 2", n)
	}
}

func TestRedactorResponse(t *testing.T) {
	r := NewRedactor(testKey)
	// The key escaped in JSON is not in the raw bytes as such, but decodes
	// into the content.
	escaped := `\u0066akekey-AbCdEfGhIjKlMnOpQrStUvWx`
	raw := `{"content":"` + escaped + `","model":"` + testKey + `"}`
	resp := &chat.Response{
		Message: chat.Message{Role: chat.Assistant, Content: "echo " + testKey, Refusal: testKey,
			ToolCalls: []chat.ToolCall{{ID: "c1", Name: "f", Arguments: json.RawMessage(`{"k":"` + testKey + `"}`)}}},
		Meta: chat.Meta{ModelID: testKey, RequestID: "req-" + testKey},
		Raw:  []byte(raw),
	}
	r.Response(resp)
	b, _ := json.Marshal(resp)
	all := string(b) + string(resp.Raw)
	if strings.Contains(all, testKey[8:20]) {
		t.Errorf("key left in %s", all)
	}
	if !json.Valid(resp.Message.ToolCalls[0].Arguments) || !json.Valid(resp.Raw) {
		t.Errorf("redaction broke JSON: %s %s", resp.Message.ToolCalls[0].Arguments, resp.Raw)
	}
	if resp.Message.Content != "echo [redacted]" {
		t.Errorf("content %q", resp.Message.Content)
	}
}
