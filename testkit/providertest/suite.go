package providertest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider"
)

// Key is the fake API key the suite hands to providers. It must never
// appear in an error, even when a server echoes it back.
const Key = "fake-budge-conformance-0123456789abcdefSECRET"

// Request is the suite's standard request: a system prompt, a case, a tool
// call and its result, a follow-up, one tool, an answer schema, seed 42,
// temperature 0 and 300 max tokens.
func Request() *chat.Request {
	seed, temp := int64(42), 0.0
	return &chat.Request{Model: "caller-model-name",
		Messages: []chat.Message{
			{Role: chat.System, Content: "You recommend who gets the early session."},
			{Role: chat.User, Content: "P-1 and Q-1 both asked for the early session."},
			{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: "call_1", Name: "get_availability", Arguments: json.RawMessage(`{}`)}}},
			{Role: chat.ToolRole, ToolCallID: "call_1", Name: "get_availability", Content: `{"version":"v1","records":[]}`},
			{Role: chat.User, Content: "The registry was updated."},
		},
		Tools: []chat.Tool{{Name: "get_availability", Description: "Read the registry.",
			Parameters: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)}},
		Settings: chat.Settings{Seed: &seed, Temperature: &temp, MaxTokens: 300},
		ResponseFormat: &chat.ResponseFormat{Name: "answer", Strict: true,
			Schema: json.RawMessage(`{"type":"object","properties":{"selection":{"type":"string","enum":["P-1","Q-1","needs-human-choice"]}},"required":["selection"],"additionalProperties":false}`)},
	}
}

type scripted struct {
	name    string
	handler func(d Dialect) http.HandlerFunc
	check   func(t *testing.T, d Dialect, resp *chat.Response, err error)
	// timeout is the provider's per-call timeout; ctxTimeout cancels the
	// caller's context instead.
	timeout    time.Duration
	cancelling bool
}

func writeJSON(w http.ResponseWriter, status int, body string, headers ...string) {
	for i := 0; i+1 < len(headers); i += 2 {
		w.Header().Set(headers[i], headers[i+1])
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

func wantKind(want provider.Kind, status int) func(t *testing.T, d Dialect, resp *chat.Response, err error) {
	return func(t *testing.T, d Dialect, resp *chat.Response, err error) {
		t.Helper()
		var pe *provider.Error
		if !errors.As(err, &pe) {
			t.Fatalf("want a *provider.Error of kind %s, got response %+v, error %v", want, resp, err)
		}
		if pe.Kind != want {
			t.Fatalf("kind = %s, want %s (error: %v)", pe.Kind, want, err)
		}
		if status != 0 && pe.Status != status {
			t.Errorf("status = %d, want %d", pe.Status, status)
		}
	}
}

// cut hijacks the connection and closes it: hard when reset is true (an
// RST, as a crashed proxy sends), after a partial write otherwise.
func cut(w http.ResponseWriter, partial string, reset bool) {
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	if partial != "" {
		buf.WriteString(partial)
		buf.Flush()
	}
	if tc, ok := conn.(*net.TCPConn); ok && reset {
		tc.SetLinger(0)
	}
	conn.Close()
}

func cases() []scripted {
	okAnswer := func(d Dialect) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 200, d.Answer("test-model-2026-01-01", `{"selection":"P-1"}`, d.Stop, 120, 9), d.RequestIDHeader, "req_abc123")
		}
	}
	return []scripted{
		{name: "answer with metadata", handler: okAnswer, check: func(t *testing.T, d Dialect, resp *chat.Response, err error) {
			if err != nil {
				t.Fatal(err)
			}
			if resp.Message.Role != chat.Assistant || resp.Message.Content != `{"selection":"P-1"}` {
				t.Errorf("message = %+v", resp.Message)
			}
			if resp.FinishReason != "stop" {
				t.Errorf("finish reason %q, want stop", resp.FinishReason)
			}
			if resp.Usage.InputTokens != 120 || resp.Usage.OutputTokens != 9 {
				t.Errorf("usage = %+v", resp.Usage)
			}
			if resp.Meta.ModelID != "test-model-2026-01-01" || resp.Meta.RequestID != "req_abc123" || resp.Meta.Fingerprint != d.Fingerprint {
				t.Errorf("meta = %+v", resp.Meta)
			}
			if len(resp.Raw) == 0 || !json.Valid(resp.Raw) {
				t.Errorf("raw body not kept")
			}
		}},
		{name: "request shape", handler: func(d Dialect) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				if err := d.CheckRequest(body); err != nil {
					writeJSON(w, 400, d.Error(400, "", "suite: "+err.Error()))
					return
				}
				auth := r.Header.Get("Authorization") + r.Header.Get("X-Api-Key")
				if !strings.Contains(auth, Key) {
					writeJSON(w, 401, d.Error(401, "", "suite: the key was not sent"))
					return
				}
				okAnswer(d)(w, r)
			}
		}, check: func(t *testing.T, d Dialect, resp *chat.Response, err error) {
			if err != nil {
				t.Fatal(err)
			}
		}},
		{name: "tool call", handler: reply(200, func(d Dialect) string {
			return d.ToolCall("test-model", "call_xyz", "get_availability", `{"week":"next"}`)
		}), check: func(t *testing.T, d Dialect, resp *chat.Response, err error) {
			if err != nil {
				t.Fatal(err)
			}
			tc := resp.Message.ToolCalls
			if len(tc) != 1 || tc[0].ID != "call_xyz" || tc[0].Name != "get_availability" || !json.Valid(tc[0].Arguments) || !strings.Contains(string(tc[0].Arguments), "next") {
				t.Errorf("tool calls = %+v", tc)
			}
			if resp.FinishReason != "tool_calls" {
				t.Errorf("finish reason %q, want tool_calls", resp.FinishReason)
			}
		}},
		{name: "cut by max tokens", handler: reply(200, func(d Dialect) string {
			return d.Answer("test-model", `{"selection": "P-1", "expla`, d.Length, 50, 300)
		}), check: func(t *testing.T, d Dialect, resp *chat.Response, err error) {
			if err != nil {
				t.Fatalf("an answer cut by the token limit is the model's answer, not a failure: %v", err)
			}
			if resp.FinishReason != "length" || resp.Message.Content != `{"selection": "P-1", "expla` {
				t.Errorf("finish %q content %q", resp.FinishReason, resp.Message.Content)
			}
		}},
		{name: "empty content", handler: reply(200, func(d Dialect) string { return d.Answer("test-model", "", d.Stop, 50, 0) }), check: func(t *testing.T, d Dialect, resp *chat.Response, err error) {
			if err != nil {
				t.Fatalf("an empty answer is the model's answer, not a transport failure: %v", err)
			}
			if resp.Message.Content != "" || len(resp.Message.ToolCalls) != 0 {
				t.Errorf("message = %+v", resp.Message)
			}
		}},
		{name: "refusal", handler: reply(200, func(d Dialect) string { return d.Refusal("test-model", "I can't help with that.") }), check: func(t *testing.T, d Dialect, resp *chat.Response, err error) {
			if err != nil {
				t.Fatal(err)
			}
			if resp.Message.Refusal == "" {
				t.Errorf("a provider-flagged refusal must be kept apart: %+v", resp.Message)
			}
		}},
		{name: "429 with Retry-After", handler: reply(429, func(d Dialect) string { return d.Error(429, "rate_limit_exceeded", "Rate limit reached for requests") }, "Retry-After", "7"), check: func(t *testing.T, d Dialect, resp *chat.Response, err error) {
			wantKind(provider.RateLimited, 429)(t, d, resp, err)
			var pe *provider.Error
			errors.As(err, &pe)
			if pe.RetryAfter != 7*time.Second {
				t.Errorf("RetryAfter = %v, want 7s", pe.RetryAfter)
			}
			if !pe.Kind.Infrastructure() {
				t.Errorf("a rate limit must be retried")
			}
		}},
		{name: "429 with retry-after-ms and an HTTP date", handler: reply(429, func(d Dialect) string { return d.Error(429, "", "slow down") }, "Retry-After-Ms", "250", "Retry-After", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)), check: func(t *testing.T, d Dialect, resp *chat.Response, err error) {
			wantKind(provider.RateLimited, 429)(t, d, resp, err)
			var pe *provider.Error
			errors.As(err, &pe)
			if pe.RetryAfter != 250*time.Millisecond {
				t.Errorf("RetryAfter = %v, want 250ms", pe.RetryAfter)
			}
		}},
		{name: "429 out of quota", handler: reply(429, func(d Dialect) string { return d.Error(429, d.QuotaCode, "You exceeded your current quota") }), check: func(t *testing.T, d Dialect, resp *chat.Response, err error) {
			wantKind(provider.QuotaExceeded, 429)(t, d, resp, err)
			var pe *provider.Error
			errors.As(err, &pe)
			if pe.Kind.Infrastructure() {
				t.Errorf("an exhausted quota must not be retried")
			}
		}},
		{name: "500", handler: status(500), check: wantKind(provider.Transient, 500)},
		{name: "503", handler: status(503), check: wantKind(provider.Transient, 503)},
		{name: "529 overloaded", handler: status(529), check: wantKind(provider.Transient, 529)},
		{name: "504 gateway timeout", handler: status(504), check: wantKind(provider.Timeout, 504)},
		{name: "502 HTML page from a proxy", handler: func(d Dialect) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(502)
				io.WriteString(w, "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n")
			}
		}, check: func(t *testing.T, d Dialect, resp *chat.Response, err error) {
			wantKind(provider.Transient, 502)(t, d, resp, err)
			if !strings.Contains(err.Error(), "502 Bad Gateway") || strings.Contains(err.Error(), "<") {
				t.Errorf("message should name the page, not dump it: %v", err)
			}
		}},
		{name: "401 echoing the key", handler: reply(401, func(d Dialect) string {
			return d.Error(401, "invalid_api_key", "Incorrect API key provided: "+Key+" ("+Key[:8]+"****"+Key[len(Key)-4:]+")")
		}), check: func(t *testing.T, d Dialect, resp *chat.Response, err error) {
			wantKind(provider.Auth, 401)(t, d, resp, err)
			if !strings.Contains(err.Error(), "Incorrect API key provided") {
				t.Errorf("redaction blanked words: %v", err)
			}
		}},
		{name: "200 echoing the key", handler: func(d Dialect) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				writeJSON(w, 200, d.Answer("model-"+Key, "Incorrect API key provided: "+Key+"; Bearer of news", d.Stop, 1, 1), d.RequestIDHeader, "req_"+Key)
			}
		}, check: func(t *testing.T, d Dialect, resp *chat.Response, err error) {
			if err != nil {
				t.Fatal(err)
			}
			noKey(t, resp)
			if c := resp.Message.Content; !strings.HasPrefix(c, "Incorrect API key provided: ") || !strings.HasSuffix(c, "; Bearer of news") {
				t.Errorf("redaction blanked words: %q", c)
			}
		}},
		{name: "200 tool call echoing the key", handler: reply(200, func(d Dialect) string {
			return d.ToolCall("test-model", "call_"+Key, "get_availability", `{"key":"`+Key+`"}`)
		}), check: func(t *testing.T, d Dialect, resp *chat.Response, err error) {
			if err != nil {
				t.Fatal(err)
			}
			noKey(t, resp)
			if tc := resp.Message.ToolCalls; len(tc) != 1 || !json.Valid(tc[0].Arguments) {
				t.Errorf("tool calls = %+v", tc)
			}
		}},
		{name: "30 MB answer with its length declared", handler: huge(true), check: tooLarge},
		{name: "30 MB answer, chunked", handler: huge(false), check: tooLarge},
		{name: "403", handler: status(403), check: wantKind(provider.Auth, 403)},
		{name: "400 context too long", handler: reply(400, func(d Dialect) string {
			return d.Error(400, d.ContextTooLong, "prompt is too long: 210000 tokens > 200000 maximum; This model's maximum context length is 200000 tokens")
		}), check: wantKind(provider.ContextLength, 400)},
		{name: "400 bad request", handler: reply(400, func(d Dialect) string { return d.Error(400, "", "Invalid value for 'messages[1].role'") }), check: wantKind(provider.BadRequest, 400)},
		{name: "400 typed api_error (Ollama refusing tools)", handler: reply(400, func(d Dialect) string {
			return d.Error(400, "api_error", "registry/library/tiny:latest does not support tools")
		}), check: wantKind(provider.BadRequest, 400)},
		{name: "404 unknown model", handler: reply(404, func(d Dialect) string {
			return d.Error(404, "model_not_found", "The model `test-model` does not exist")
		}), check: wantKind(provider.BadRequest, 404)},
		{name: "error object in a 200 body", handler: reply(200, func(d Dialect) string { return d.ErrorIn200 }), check: func(t *testing.T, d Dialect, resp *chat.Response, err error) {
			var pe *provider.Error
			if !errors.As(err, &pe) || pe.Kind != provider.Transient {
				t.Fatalf("want a transient error, got %v %+v", err, resp)
			}
		}},
		{name: "malformed JSON", handler: reply(200, func(d Dialect) string { return `{"id": "x", "choices": [{"message": {"content": "hi"` + "\x00" + `]}` }), check: wantKind(provider.Malformed, 0)},
		{name: "HTML with status 200", handler: func(d Dialect) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				io.WriteString(w, "<html><head><title>Sign in to the network</title></head><body>portal</body></html>")
			}
		}, check: wantKind(provider.Malformed, 0)},
		{name: "body cut short", handler: cutBody(2, true), check: wantKind(provider.Malformed, 0)},
		{name: "chunked body cut mid-stream", handler: cutBody(3, false), check: wantKind(provider.Malformed, 0)},
		{name: "connection closed before a response", handler: func(d Dialect) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { io.ReadAll(r.Body); cut(w, "", false) }
		}, check: wantKind(provider.ConnReset, 0)},
		{name: "connection reset", handler: func(d Dialect) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { io.ReadAll(r.Body); cut(w, "", true) }
		}, check: wantKind(provider.ConnReset, 0)},
		{name: "garbage status line", handler: func(d Dialect) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				io.ReadAll(r.Body)
				cut(w, "SSH-2.0-OpenSSH_9.2\r\n\r\n", false)
			}
		}, check: func(t *testing.T, d Dialect, resp *chat.Response, err error) {
			var pe *provider.Error
			if !errors.As(err, &pe) || !pe.Kind.Infrastructure() && pe.Kind != provider.Unknown {
				t.Fatalf("want a transport failure, got %v", err)
			}
		}},
		{name: "slow server hits the call timeout", timeout: 150 * time.Millisecond, handler: func(d Dialect) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-r.Context().Done():
				case <-time.After(time.Second):
				}
			}
		}, check: wantKind(provider.Timeout, 0)},
		{name: "cancelled run", cancelling: true, handler: func(d Dialect) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				select {
				case <-r.Context().Done():
				case <-time.After(time.Second):
				}
			}
		}, check: func(t *testing.T, d Dialect, resp *chat.Response, err error) {
			wantKind(provider.Canceled, 0)(t, d, resp, err)
			var pe *provider.Error
			errors.As(err, &pe)
			if pe.Kind.Infrastructure() {
				t.Errorf("nothing is retried after cancellation")
			}
		}},
	}
}

// noKey fails if the key, or a run of it, is anywhere in resp: its decoded
// fields, its metadata or the raw body that is stored.
func noKey(t *testing.T, resp *chat.Response) {
	t.Helper()
	b, _ := json.Marshal(resp)
	for _, s := range []string{string(b), string(resp.Raw)} {
		if strings.Contains(s, Key[8:20]) || strings.Contains(s, Key[len(Key)-16:]) {
			t.Errorf("the API key leaked into the response: %s", s)
		}
	}
	if !json.Valid(resp.Raw) {
		t.Errorf("the raw body is no longer JSON: %s", resp.Raw)
	}
}

// huge answers with a valid answer of 30 MB, with or without its length.
func huge(declared bool) func(d Dialect) http.HandlerFunc {
	return func(d Dialect) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			// Streamed, not built: the content is 30 MB of one 64 KiB chunk.
			head, tail, _ := strings.Cut(d.Answer("test-model", "@@", d.Stop, 1, 30<<18), "@@")
			chunk := strings.Repeat("P-1 ", 16<<10)
			const n = 30 << 20 / (64 << 10)
			w.Header().Set("Content-Type", "application/json")
			if declared {
				w.Header().Set("Content-Length", strconv.Itoa(len(head)+n*len(chunk)+len(tail)))
			}
			w.WriteHeader(200)
			io.WriteString(w, head)
			for range n {
				if _, err := io.WriteString(w, chunk); err != nil {
					return
				}
			}
			io.WriteString(w, tail)
		}
	}
}

// tooLarge checks that an oversized answer is refused as too large, not
// retried and not kept.
func tooLarge(t *testing.T, d Dialect, resp *chat.Response, err error) {
	t.Helper()
	wantKind(provider.ResponseTooLarge, 200)(t, d, resp, err)
	var pe *provider.Error
	errors.As(err, &pe)
	if pe.Kind.Infrastructure() {
		t.Errorf("an oversized answer must not be retried")
	}
	if resp != nil || len(err.Error()) > 200 {
		t.Errorf("an oversized answer is not kept: %d bytes of error", len(err.Error()))
	}
}

// reply answers with the body the dialect gives, as JSON.
func reply(status int, body func(d Dialect) string, headers ...string) func(d Dialect) http.HandlerFunc {
	return func(d Dialect) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { writeJSON(w, status, body(d), headers...) }
	}
}

// cutBody sends the first 1/part of an answer and aborts; with length set
// the response declares the whole body's length, otherwise it is chunked.
func cutBody(part int, length bool) func(d Dialect) http.HandlerFunc {
	return func(d Dialect) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			body := d.Answer("test-model", `{"selection":"P-1"}`, d.Stop, 1, 1)
			w.Header().Set("Content-Type", "application/json")
			if length {
				w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			}
			w.WriteHeader(200)
			io.WriteString(w, body[:len(body)/part])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}
	}
}

// status answers with the dialect's error body for an HTTP status.
func status(code int) func(d Dialect) http.HandlerFunc {
	return reply(code, func(d Dialect) string { return d.Error(code, "", http.StatusText(code)) })
}

// Run runs the conformance suite for a provider speaking dialect d.
// newProvider makes the provider under test for a server's base URL, with
// Key as its API key, model "test-model" and the given per-call timeout.
func Run[P provider.Provider](t *testing.T, d Dialect, newProvider func(baseURL string, timeout time.Duration) (P, error)) {
	for _, c := range cases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var requests atomic.Int32
			h := c.handler(d)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost || r.URL.Path != d.Path {
					writeJSON(w, 404, d.Error(404, "", "suite: unexpected "+r.Method+" "+r.URL.Path))
					return
				}
				requests.Add(1)
				h(w, r)
			}))
			defer srv.Close()
			timeout := c.timeout
			if timeout == 0 {
				timeout = 10 * time.Second
			}
			p, err := newProvider(srv.URL, timeout)
			if err != nil {
				t.Fatal(err)
			}
			if p.Info().InProcess {
				t.Errorf("Info() = %+v: a provider over HTTP is not in process", p.Info())
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if c.cancelling {
				time.AfterFunc(100*time.Millisecond, cancel)
			}
			start := time.Now()
			resp, err := p.Chat(ctx, Request())
			if el := time.Since(start); el > 5*time.Second {
				t.Errorf("call took %v", el)
			}
			if resp != nil && err != nil {
				t.Errorf("a call returns a response or an error, not both")
			}
			if err == nil && resp == nil {
				t.Fatalf("no response and no error")
			}
			c.check(t, d, resp, err)
			if err != nil && strings.Contains(err.Error(), Key[8:20]) {
				t.Errorf("the API key leaked into an error: %v", err)
			}
			if n := requests.Load(); n != 1 {
				t.Errorf("%d HTTP requests for one call: retries belong to the runner, where every attempt is stored", n)
			}
		})
	}
}

// Basic checks the contract every provider keeps, HTTP or not: a cancelled
// context gives a Canceled error at once, and a response is an assistant
// message.
func Basic(t *testing.T, p provider.Provider, req *chat.Request) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := p.Chat(ctx, req)
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Kind != provider.Canceled {
		t.Errorf("a cancelled context must give a Canceled error, got %v", err)
	}
	resp, err := p.Chat(context.Background(), req)
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	if resp.Message.Role != chat.Assistant && resp.Message.Role != "" {
		t.Errorf("role %q", resp.Message.Role)
	}
	if info := p.Info(); info.Name == "" || info.Model == "" {
		t.Errorf("Info() = %+v: name and model are required", info)
	}
}
