package endpoint

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
)

// Config is budge's config file: named endpoints and a price table.
//
//	endpoints:
//	  local-vllm:
//	    provider: openai-compatible
//	    base_url: http://127.0.0.1:8000/v1
//	    api_key_env: VLLM_API_KEY      # the variable's name; never the key
//	    structured_output: json_schema # json_schema, json_object or none
//	    tools: true
//	prices:                            # US dollars per million tokens
//	  openai:gpt-4o-mini: {input: 0.15, output: 0.60}
//	  local-vllm:*: {input: 0, output: 0}
type Config struct {
	Endpoints map[string]Endpoint `yaml:"endpoints" json:"endpoints"`
	Prices    map[string]Price    `yaml:"prices" json:"prices"`
	// Path is where the config was read from.
	Path string `yaml:"-" json:"path"`
}

// Endpoint is a named API endpoint.
type Endpoint struct {
	// Provider is the API it speaks: openai, openai-compatible, ollama,
	// openrouter or anthropic.
	Provider string `yaml:"provider" json:"provider"`
	BaseURL  string `yaml:"base_url" json:"base_url,omitempty"`
	// APIKeyEnv names the environment variable holding the key. Keys are
	// never written in the config file.
	APIKeyEnv        string   `yaml:"api_key_env" json:"api_key_env,omitempty"`
	StructuredOutput string   `yaml:"structured_output" json:"structured_output,omitempty"`
	MaxTokensField   string   `yaml:"max_tokens_field" json:"max_tokens_field,omitempty"`
	Seed             *bool    `yaml:"seed" json:"seed,omitempty"`
	Tools            *bool    `yaml:"tools" json:"tools,omitempty"`
	Timeout          Duration `yaml:"timeout" json:"timeout,omitempty"`

	key Secret
}

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	Input  float64 `yaml:"input" json:"input_per_mtok"`
	Output float64 `yaml:"output" json:"output_per_mtok"`
}

// Cost is the price of the given token counts.
func (p Price) Cost(in, out int) float64 {
	return (float64(in)*p.Input + float64(out)*p.Output) / 1e6
}

// Duration is a time.Duration written as "90s" in YAML.
type Duration time.Duration

// UnmarshalYAML reads "90s", "2m".
func (d *Duration) UnmarshalYAML(b []byte) error {
	s := strings.Trim(strings.TrimSpace(string(b)), `"'`)
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("timeout: %q is not a duration like 90s or 2m", s)
	}
	*d = Duration(v)
	return nil
}

// LoadConfig reads a config file strictly: unknown fields are errors, and
// every problem is reported with its file and line.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	var c Config
	if err := yaml.UnmarshalWithOptions(data, &c, yaml.Strict()); err != nil {
		msg := yaml.FormatError(err, false, true)
		if strings.Contains(msg, "api_key") && !strings.Contains(msg, "api_key_env") {
			msg += "\n(keys are never written in the config file: name the environment variable that holds the key with api_key_env)"
		}
		return nil, fmt.Errorf("config %s: %s", path, msg)
	}
	c.Path = path
	if errs := c.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("config %s:\n  %w", path, errors.Join(errs...))
	}
	return &c, nil
}

// Validate reports every problem at once.
func (c *Config) Validate() []error {
	var errs []error
	names := make([]string, 0, len(c.Endpoints))
	for n := range c.Endpoints {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		e := c.Endpoints[n]
		where := "endpoints." + n
		switch n {
		case "sim", "openai", "anthropic", "ollama", "openrouter", "openai-compatible":
			errs = append(errs, fmt.Errorf("%s: %q is a built-in provider name; choose another name", where, n))
		}
		if strings.ContainsAny(n, ": ") || n == "" {
			errs = append(errs, fmt.Errorf("%s: an endpoint name cannot contain ':' or spaces", where))
		}
		switch e.Provider {
		case "openai", "openai-compatible", "ollama", "openrouter", "anthropic":
		default:
			errs = append(errs, fmt.Errorf("%s.provider: must be openai, openai-compatible, ollama, openrouter or anthropic, got %q", where, e.Provider))
		}
		if e.BaseURL != "" {
			u, err := url.Parse(e.BaseURL)
			switch {
			case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
				errs = append(errs, fmt.Errorf("%s.base_url: %q is not an http(s) URL", where, e.BaseURL))
			case u.User != nil || u.RawQuery != "":
				errs = append(errs, fmt.Errorf("%s.base_url: put no credentials in the URL; use api_key_env", where))
			}
		} else if e.Provider == "openai-compatible" {
			errs = append(errs, fmt.Errorf("%s.base_url: required for openai-compatible endpoints", where))
		}
		switch e.StructuredOutput {
		case "", "json_schema", "none":
		case "json_object":
			if e.Provider == "anthropic" {
				errs = append(errs, fmt.Errorf("%s.structured_output: anthropic supports json_schema or none", where))
			}
		default:
			errs = append(errs, fmt.Errorf("%s.structured_output: must be json_schema, json_object or none, got %q", where, e.StructuredOutput))
		}
		switch e.MaxTokensField {
		case "", "max_tokens", "max_completion_tokens":
		default:
			errs = append(errs, fmt.Errorf("%s.max_tokens_field: must be max_tokens or max_completion_tokens", where))
		}
		if e.Timeout < 0 {
			errs = append(errs, fmt.Errorf("%s.timeout: must not be negative", where))
		}
		if strings.HasPrefix(e.APIKeyEnv, "sk-") || len(e.APIKeyEnv) > 64 {
			errs = append(errs, fmt.Errorf("%s.api_key_env: this looks like a key; give the name of the variable that holds it", where))
		}
	}
	for model, p := range c.Prices {
		if p.Input < 0 || p.Output < 0 {
			errs = append(errs, fmt.Errorf("prices.%s: prices must not be negative", model))
		}
		if !strings.Contains(model, ":") && model != "sim" {
			errs = append(errs, fmt.Errorf("prices.%s: name the model as on the command line (provider:model, or endpoint:*)", model))
		}
	}
	return errs
}

// PriceOf finds the price of a model as named on the command line: the
// exact name, then "provider:*". The in-process simulator is free when no
// price is configured for it.
func (c *Config) PriceOf(model string) (Price, bool) {
	kind, _, _ := strings.Cut(model, ":")
	if c != nil {
		if p, ok := c.Prices[model]; ok {
			return p, true
		}
		if p, ok := c.Prices[kind+":*"]; ok {
			return p, true
		}
	}
	return Price{}, kind == "sim" || kind == ""
}

// HasPrice says whether the config names a price for the model.
func (c *Config) HasPrice(model string) bool {
	kind, _, _ := strings.Cut(model, ":")
	if c == nil {
		return false
	}
	_, exact := c.Prices[model]
	_, wild := c.Prices[kind+":*"]
	return exact || wild
}
