package endpoint

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func env() Env {
	return Env{OpenAIKey: "openai-test-credential-123456", AnthropicKey: "anthropic-test-credential-123456", OllamaHost: "",
		Lookup: func(n string) Secret {
			if n == "VLLM_KEY" {
				return "vllm-secret-123456"
			}
			return ""
		}}
}

func TestOpenNames(t *testing.T) {
	for _, c := range []struct {
		name, base string
		o          Options
		provider   string
		model      string
		tools      bool
		err        string
	}{
		{name: "sim", provider: "sim", model: "sim:default", tools: true},
		{name: "sim:stubborn", provider: "sim", model: "sim:stubborn", tools: true},
		{name: "sim:nope", err: "unknown simulator profile"},
		{name: "sim", o: Options{BaseURL: "http://x"}, err: "openai-compatible:sim"},
		{name: "openai:gpt-4o-mini", provider: "openai", model: "openai:gpt-4o-mini", tools: true},
		{name: "anthropic:claude-sonnet", provider: "anthropic", model: "anthropic:claude-sonnet", tools: true},
		{name: "ollama:llama3.2", provider: "ollama", model: "ollama:llama3.2", tools: true},
		{name: "openai-compatible:qwen", err: "needs --base-url"},
		{name: "openai-compatible:qwen", o: Options{BaseURL: "http://127.0.0.1:8000/v1"}, provider: "openai-compatible", model: "openai-compatible:qwen", tools: true},
		{name: "openrouter:x/y", err: "OPENROUTER_API_KEY"},
		{name: "openai", err: "name the model"},
		{name: "gemini:pro", err: "unknown provider"},
		// A model named without its provider: the error suggests one.
		{name: "gpt-4o", err: "did you mean --model openai:gpt-4o?"},
		{name: "o3-mini", err: "did you mean --model openai:o3-mini?"},
		{name: "claude-sonnet-4-5", err: "did you mean --model anthropic:claude-sonnet-4-5?"},
		{name: "llama3.1:8b", err: "did you mean --model ollama:llama3.1:8b?"},
		{name: "meta-llama/llama-3.1-8b", err: "did you mean --model openrouter:meta-llama/llama-3.1-8b?"},
		{name: "pushover", err: "did you mean --model sim:pushover?"},
		{name: "zork", err: `no provider named "zork": give the model as PROVIDER:MODEL`},
	} {
		o := c.o
		o.Env = env()
		p, err := Open(c.name, o)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Open(%q) = %v, want an error with %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Open(%q): %v", c.name, err)
			continue
		}
		info := p.Info()
		if info.Name != c.provider || info.Model != c.model || info.Tools != c.tools || info.InProcess != (c.provider == "sim") {
			t.Errorf("Open(%q).Info() = %+v", c.name, info)
		}
		if strings.Contains(fmt.Sprintf("%+v", info), "key-123456") {
			t.Errorf("Info carries a key: %+v", info)
		}
	}
	if _, err := Open("openai:gpt", Options{}); err == nil || !strings.Contains(err.Error(), "OPENAI_API_KEY") || strings.Contains(err.Error(), "sk-") {
		t.Errorf("missing key: %v", err)
	}
	p, _ := Open("ollama:m", Options{Env: Env{OllamaHost: "10.0.0.5"}})
	if !strings.Contains(p.Info().Detail, "http://10.0.0.5:11434/v1") {
		t.Errorf("OLLAMA_HOST: %s", p.Info().Detail)
	}
}

func TestSecretNeverPrints(t *testing.T) {
	e := env()
	s := fmt.Sprintf("%v %+v %#v %s", e, e, e, e.OpenAIKey)
	b, _ := json.Marshal(e)
	if strings.Contains(s+string(b), "key-123456") {
		t.Errorf("a secret printed itself: %s %s", s, b)
	}
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "budge.yaml")
	os.WriteFile(p, []byte(body), 0o600)
	return p
}

func TestConfig(t *testing.T) {
	c, err := LoadConfig(writeConfig(t, `
endpoints:
  vllm:
    provider: openai-compatible
    base_url: http://127.0.0.1:8000/v1
    api_key_env: VLLM_KEY
    structured_output: json_object
    tools: false
    timeout: 90s
prices:
  vllm:*: {input: 0.1, output: 0.2}
  openai:gpt-4o-mini: {input: 0.15, output: 0.6}
`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Open("vllm:qwen2.5", Options{Config: c, Env: env()})
	if err != nil {
		t.Fatal(err)
	}
	if info := p.Info(); info.Name != "openai-compatible" || info.Tools || !strings.Contains(info.Detail, "json_object") {
		t.Errorf("configured endpoint: %+v", info)
	}
	if pr, ok := c.PriceOf("vllm:qwen2.5"); !ok || pr.Input != 0.1 {
		t.Errorf("wildcard price: %v %v", pr, ok)
	}
	if pr, ok := c.PriceOf("openai:gpt-4o-mini"); !ok || pr.Cost(1_000_000, 1_000_000) != 0.75 {
		t.Errorf("price: %v", pr)
	}
	if _, ok := c.PriceOf("anthropic:x"); ok {
		t.Errorf("no price for anthropic:x")
	}
	if _, ok := (*Config)(nil).PriceOf("sim:default"); !ok {
		t.Errorf("the simulator is free")
	}
}

func TestConfigErrors(t *testing.T) {
	for body, want := range map[string]string{
		"endpoints:\n  x:\n    provider: openai\n    api_key: sk-abc\n":           "api_key_env",
		"endpoints:\n  x:\n    provider: bard\n":                                  "provider",
		"endpoints:\n  openai:\n    provider: openai\n":                           "built-in provider name",
		"endpoints:\n  x:\n    provider: openai-compatible\n":                     "base_url: required",
		"endpoints:\n  x:\n    provider: openai\n    base_url: http://u:p@h/v1\n": "no credentials",
		"endpoints:\n  x:\n    provider: openai\n    timeout: soon\n":             "duration",
		"prices:\n  gpt-4o: {input: 1, output: 2}\n":                              "name the model",
		"prices:\n  openai:x: {input: -1, output: 2}\n":                           "negative",
		"colour: blue\n": "colour",
		"endpoints:\n  x:\n    provider: \"openai-compatible\n    base_url: http://h/v1\n    timeout: \"30s\"\n": `budge.yaml:3: the double quote (") opened on this line is not closed`,
		"endpoints:\n  x:\n    provider: openai\n    structured_output: caf\xe9\n":                               "budge.yaml:4: not valid UTF-8",
	} {
		_, err := LoadConfig(writeConfig(t, body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("config %q: %v, want %q", body, err, want)
		}
	}
	// Every problem at once, with the file named.
	_, err := LoadConfig(writeConfig(t, "endpoints:\n  a:\n    provider: x\n  b:\n    provider: y\n"))
	if err == nil || strings.Count(err.Error(), "provider: must be") != 2 || !strings.Contains(err.Error(), "budge.yaml") {
		t.Errorf("want both problems reported: %v", err)
	}
}

// A configured endpoint whose name looks like a model is the endpoint, not
// a guess.
func TestSuggestDefersToConfig(t *testing.T) {
	c := &Config{Endpoints: map[string]Endpoint{"gpt-local": {Provider: "openai-compatible", BaseURL: "http://127.0.0.1:9/v1"}}}
	if _, err := Open("gpt-local:m", Options{Config: c, Env: env()}); err != nil {
		t.Errorf("configured endpoint gpt-local: %v", err)
	}
	if _, err := Open("gpt-local", Options{Config: c, Env: env()}); err == nil || !strings.Contains(err.Error(), "name the model after the colon") {
		t.Errorf("configured endpoint without a model: %v", err)
	}
	if s := Suggest("mystery-model"); s != "" {
		t.Errorf("Suggest(mystery-model) = %q, want none", s)
	}
}
