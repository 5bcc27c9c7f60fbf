package openai

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/buildlab/budge/provider"
)

// TestPreflight: the endpoint's answers to the model listing and to one
// minimal chat call decide whether a run may start, and the error quotes
// the server.
func TestPreflight(t *testing.T) {
	list := `{"object":"list","data":[{"id":"served-model"}]}`
	ok := `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"OK"},"finish_reason":"stop"}]}`
	type reply struct {
		status int
		ctype  string
		body   string
	}
	for _, c := range []struct {
		name         string
		model        string
		models, chat reply
		calls        int64 // requests the preflight makes
		fatal        bool
		want         []string
	}{
		{"listed", "served-model", reply{200, "application/json", list}, reply{}, 1, false, nil},
		{"not listed but answers", "alias", reply{200, "application/json", list}, reply{200, "application/json", ok}, 2, false, nil},
		{"no listing, answers", "m", reply{404, "application/json", `{"error":{"message":"not here"}}`}, reply{200, "application/json", ok}, 2, false, nil},
		{"model not found", "my-chat-model", reply{200, "application/json", list},
			reply{404, "application/json", `{"error":{"message":"The model my-chat-model does not exist","type":"invalid_request_error","code":"model_not_found"}}`}, 2, true,
			[]string{`the model "my-chat-model" does not exist`, "The model my-chat-model does not exist", "the server lists: served-model"}},
		{"key refused", "served-model", reply{401, "application/json", `{"error":{"message":"Incorrect API key provided: test-credential-0123456789abcdef","code":"invalid_api_key"}}`}, reply{}, 1, true,
			[]string{"refused the key", "Incorrect API key provided", "check the key in KEY_VAR"}},
		{"listing not shaped, answers", "m", reply{200, "application/json", ok}, reply{200, "application/json", ok}, 2, false, nil},
		{"listing not shaped, chat not either", "m", reply{200, "application/json", `{"hello":1}`}, reply{200, "application/json", `{"hello":1}`}, 2, true,
			[]string{"is not an OpenAI-compatible server", "chat/completions answered HTTP 200", "models answered HTTP 200"}},
		{"HTML at 200", "m", reply{200, "text/html", "<html><head><title>Welcome</title></head></html>"}, reply{}, 1, true,
			[]string{"is not an OpenAI-compatible server", "HTML page: Welcome"}},
		{"plain web server", "m", reply{404, "text/plain", "404 page not found"}, reply{404, "text/plain", "404 page not found"}, 2, true,
			[]string{"is not an OpenAI-compatible server", "404 page not found"}},
		{"rate limited: a note", "m", reply{200, "application/json", list}, reply{429, "application/json", `{"error":{"message":"slow down","code":"rate_limit_exceeded"}}`}, 2, false,
			[]string{"a test call", "slow down", "going on"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var calls atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				io.ReadAll(r.Body)
				rep := c.chat
				if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models") {
					rep = c.models
				}
				w.Header().Set("Content-Type", rep.ctype)
				w.WriteHeader(rep.status)
				io.WriteString(w, rep.body)
			}))
			defer srv.Close()
			p, err := New(Config{Name: "openai-compatible", Model: c.model, BaseURL: srv.URL + "/v1", APIKey: "test-credential-0123456789abcdef", KeyVar: "KEY_VAR"})
			if err != nil {
				t.Fatal(err)
			}
			note, err := provider.Preflight(context.Background(), p)
			if got := calls.Load(); got != c.calls {
				t.Errorf("%d requests, want %d", got, c.calls)
			}
			msg := note
			if c.fatal {
				var pe *provider.PreflightError
				if !errors.As(err, &pe) || !pe.Fatal {
					t.Fatalf("err %v, note %q: want a fatal preflight error", err, note)
				}
				msg = err.Error()
			} else if err != nil {
				t.Fatalf("err %v, want none", err)
			}
			if len(c.want) == 0 && msg != "" {
				t.Errorf("note %q, want none", msg)
			}
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%q lacks %q", msg, w)
				}
			}
			if strings.Contains(msg, "0123456789abcdef") {
				t.Errorf("the key is in %q", msg)
			}
		})
	}
}

// TestPreflightWrongScheme: https:// against a plain HTTP server and a
// certificate no CA vouches for and http:// against an HTTPS server stop
// the run, saying what to change.
func TestPreflightWrongScheme(t *testing.T) {
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	tlsSrv := httptest.NewTLSServer(http.NotFoundHandler())
	defer tlsSrv.Close()
	for _, c := range []struct {
		name, url string
		want      []string
	}{
		{"https to plain HTTP", strings.Replace(plain.URL, "http://", "https://", 1) + "/v1", []string{"speaks plain HTTP, not HTTPS", "write http:// instead of https://"}},
		{"untrusted certificate", tlsSrv.URL + "/v1", []string{"TLS certificate", "is not trusted", "x509"}},
		{"http to HTTPS", strings.Replace(tlsSrv.URL, "https://", "http://", 1) + "/v1", []string{"speaks HTTPS, not plain HTTP", "HTTP request to an HTTPS server", "write https://"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := New(Config{Name: "openai-compatible", Model: "m", BaseURL: c.url, KeyVar: "KEY_VAR", Timeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			err = p.Preflight(context.Background())
			pe, ok := errors.AsType[*provider.PreflightError](err)
			if !ok || !pe.Fatal {
				t.Fatalf("want a fatal preflight error, got %v", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}
