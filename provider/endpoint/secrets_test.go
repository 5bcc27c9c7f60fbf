package endpoint

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/buildlab/budge/testkit/providertest"
)

// A key pasted into the config file is never printed back, whatever the
// error and whatever its shape.
func TestConfigErrorsHideKeys(t *testing.T) {
	// Assembled at run time: a fake key, but one no secret scanner should
	// have to think about.
	sk, plain := "sk-"+"live-ABCdef0123456789ghijKLMN", "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA42"
	for body, want := range map[string]string{
		"endpoints:\n  x:\n    provider: openai\n    api_key: " + sk + "\n":                   "api_key_env",
		"endpoints:\n  x:\n    provider: openai\n    api_key: \"" + plain + "\"  # mine\n":    "api_key_env",
		"endpoints:\n  x:\n    provider: openai\n    token: " + plain + "\n":                  "unknown field",
		"endpoints:\n  x:\n    provider: openai\n    api_key: \"" + plain + "\n":              "double quote",
		"endpoints:\n  x:\n    provider: openai\n    tools: " + plain + "\n":                  "bool",
		"endpoints:\n  x:\n    provider: openai\n    timeout: " + plain + "\n":                "timeout",
		"endpoints:\n  x:\n    provider: " + plain + "\n":                                     "provider",
		"endpoints:\n  x:\n    provider: openai\n    base_url: " + plain + "\n":               "base_url",
		"endpoints:\n  x:\n    provider: openai\n    api_key_env: " + plain + "\n":            "api_key_env",
		"endpoints:\n  x:\n    provider: openai\n    api_key_env: abcd-1234-efgh-5678-ijkl\n": "api_key_env",
		"endpoints:\n  x:\n    provider: openai\n    structured_output: " + sk + "\n":         "structured_output",
	} {
		_, err := LoadConfig(writeConfig(t, body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("config %q: %v, want %q", body, err, want)
			continue
		}
		msg := err.Error()
		for _, secret := range []string{sk, plain, "abcd-1234-efgh-5678-ijkl", sk[8:20], plain[8:20]} {
			if strings.Contains(msg, secret) {
				t.Errorf("config %q: the key is printed: %s", body, msg)
			}
		}
		if !strings.Contains(msg, ValueHidden) && !strings.Contains(msg, "[redacted]") {
			t.Errorf("config %q: say the value is hidden: %s", body, msg)
		}
	}
	// Plain words are still printed back.
	_, err := LoadConfig(writeConfig(t, "endpoints:\n  x:\n    provider: bard\n"))
	if err == nil || !strings.Contains(err.Error(), `"bard"`) {
		t.Errorf("a plain value is worth printing: %v", err)
	}
}

func TestEnvSecrets(t *testing.T) {
	c := &Config{Endpoints: map[string]Endpoint{"vllm": {Provider: "openai-compatible", APIKeyEnv: "VLLM_KEY"}}}
	got := strings.Join(env().Secrets(c), " ")
	for _, k := range []string{"openai-test-credential-123456", "anthropic-test-credential-123456", "vllm-secret-123456"} {
		if !strings.Contains(got, k) {
			t.Errorf("Secrets lacks %s", k)
		}
	}
	if len(Env{}.Secrets(nil)) != 0 {
		t.Errorf("no keys, no secrets")
	}
}

// An endpoint that echoes any key the process holds, not only its own, in
// a 200 answer: none of them reaches the response.
func TestOpenRedactsEveryKey(t *testing.T) {
	e := env()
	e.CompatibleKey = "compat-key-0123456789abcdef"
	keys := []string{string(e.OpenAIKey), string(e.AnthropicKey), string(e.CompatibleKey), "vllm-secret-123456"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, providertest.OpenAI.Answer("m", "Incorrect keys provided: "+strings.Join(keys, ", "), "stop", 1, 1))
	}))
	defer srv.Close()
	c := &Config{Endpoints: map[string]Endpoint{"vllm": {Provider: "openai-compatible", APIKeyEnv: "VLLM_KEY"}}}
	p, err := Open("openai-compatible:m", Options{BaseURL: srv.URL, Env: e, Config: c})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := p.Chat(context.Background(), providertest.Request())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if strings.Contains(resp.Message.Content, k) || strings.Contains(string(resp.Raw), k) {
			t.Errorf("key %s left in %q", k, resp.Message.Content)
		}
	}
	if !strings.HasPrefix(resp.Message.Content, "Incorrect keys provided: ") {
		t.Errorf("words blanked: %q", resp.Message.Content)
	}
}
