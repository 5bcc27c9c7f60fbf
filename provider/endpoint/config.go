package endpoint

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/textfile"
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
	// BatchInput and BatchOutput are the prices through the provider's
	// batch API (budge run --batch); when not given, half the list price,
	// which is what OpenAI and Anthropic charge for batches.
	BatchInput  float64 `yaml:"batch_input" json:"batch_input_per_mtok,omitempty"`
	BatchOutput float64 `yaml:"batch_output" json:"batch_output_per_mtok,omitempty"`
}

// ForBatch is the price of calls through a batch API, and a note of where
// it came from: the config's batch column, or half the list price.
func (p Price) ForBatch() (Price, string) {
	if p.BatchInput > 0 || p.BatchOutput > 0 {
		return Price{Input: p.BatchInput, Output: p.BatchOutput}, "batch price from the config"
	}
	return Price{Input: p.Input / 2, Output: p.Output / 2}, "half the list price (no batch price in the config)"
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
		return fmt.Errorf("timeout: not a duration like 90s or 2m (value hidden)")
	}
	*d = Duration(v)
	return nil
}

// LoadConfig reads a config file strictly: unknown fields are errors, and
// every problem is reported with its file and line.
//
// An error never prints a value that could be a key: it names the field and
// says "(value hidden)". The file's lines are not quoted, the values of
// fields named like keys, tokens or passwords are hidden wherever they
// would appear, and so is anything shaped like a key.
func LoadConfig(path string) (*Config, error) {
	text, err := textfile.Read(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	data := []byte(text)
	var c Config
	if err := yaml.UnmarshalWithOptions(data, &c, yaml.Strict()); err != nil {
		if se := textfile.YAMLError(path, text, err); se != nil {
			// The line is not quoted: it may hold a key.
			msg := fmt.Sprintf("config %s %s", se, ValueHidden)
			if strings.Contains(text, "api_key:") {
				msg += "\n(keys are never written in the config file: name the environment variable that holds the key with api_key_env)"
			}
			return nil, errors.New(msg)
		}
		// Without the source, which would quote the line, value and all:
		// the field is named instead.
		msg := yaml.FormatError(err, false, false)
		msg += " " + fieldAt(msg, data)
		if strings.Contains(msg, "api_key") && !strings.Contains(msg, "api_key_env") {
			msg += "\n(keys are never written in the config file: name the environment variable that holds the key with api_key_env)"
		}
		return nil, fmt.Errorf("config %s: %s", path, hideSecrets(msg, data))
	}
	c.Path = path
	if errs := c.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("config %s:\n  %s", path, hideSecrets(errors.Join(errs...).Error(), data))
	}
	return &c, nil
}

// ValueHidden stands in for a config value an error does not print.
const ValueHidden = "(value hidden)"

var (
	yamlField  = regexp.MustCompile(`(?m)^[\s-]*["']?([A-Za-z0-9_.-]+)["']?\s*:[ \t]*(.*)$`)
	secretName = regexp.MustCompile(`(?i)key|token|secret|passw|credential|auth`)
	envName    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	plainWord  = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,23}$`)
)

var errorLine = regexp.MustCompile(`^\[(\d+):\d+\]`)

// fieldAt names the field on the line a YAML error points at, as
// at field "tools" (value hidden).
func fieldAt(msg string, data []byte) string {
	m := errorLine.FindStringSubmatch(msg)
	if m == nil {
		return ValueHidden
	}
	n, _ := strconv.Atoi(m[1])
	lines := strings.Split(string(data), "\n")
	if n < 1 || n > len(lines) {
		return ValueHidden
	}
	f := yamlField.FindStringSubmatch(lines[n-1])
	if f == nil {
		return ValueHidden
	}
	return fmt.Sprintf("at field %q %s", f[1], ValueHidden)
}

// looksLikeKey says whether an api_key_env value is a key rather than a
// variable's name: not a name at all, or a long run of mixed-case letters
// and digits, as keys are and variable names are not.
func looksLikeKey(v string) bool {
	if strings.HasPrefix(v, "sk-") || len(v) > 64 || !envName.MatchString(v) {
		return true
	}
	lower := strings.ContainsAny(v, "abcdefghijklmnopqrstuvwxyz")
	upper := strings.ContainsAny(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
	digit := strings.ContainsAny(v, "0123456789")
	return len(v) >= 20 && lower && upper && digit
}

// hideSecrets takes out of msg the values of the file's fields that are
// named like secrets (api_key, token, password, ...; not api_key_env, which
// names a variable), then anything shaped like a key.
func hideSecrets(msg string, data []byte) string {
	for _, m := range yamlField.FindAllSubmatch(data, -1) {
		name := string(m[1])
		if !secretName.MatchString(name) || strings.HasSuffix(name, "_env") {
			continue
		}
		v := string(m[2])
		if i := strings.Index(v, " #"); i >= 0 {
			v = v[:i]
		}
		v = strings.Trim(strings.TrimSpace(v), `"'`)
		if len(v) >= 4 {
			msg = strings.ReplaceAll(msg, v, ValueHidden)
		}
	}
	return provider.Redactor{}.String(msg)
}

// shown is v quoted when it is a plain word worth printing back ("bard"),
// otherwise ValueHidden: a value that is not a word may be a pasted key.
func shown(v string) string {
	if plainWord.MatchString(v) {
		return strconv.Quote(v)
	}
	return ValueHidden
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
			errs = append(errs, fmt.Errorf("%s.provider: must be openai, openai-compatible, ollama, openrouter or anthropic, got %s", where, shown(e.Provider)))
		}
		if e.BaseURL != "" {
			u, err := url.Parse(e.BaseURL)
			switch {
			case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
				errs = append(errs, fmt.Errorf("%s.base_url: not an http(s) URL %s", where, ValueHidden))
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
			errs = append(errs, fmt.Errorf("%s.structured_output: must be json_schema, json_object or none, got %s", where, shown(e.StructuredOutput)))
		}
		switch e.MaxTokensField {
		case "", "max_tokens", "max_completion_tokens":
		default:
			errs = append(errs, fmt.Errorf("%s.max_tokens_field: must be max_tokens or max_completion_tokens", where))
		}
		if e.Timeout < 0 {
			errs = append(errs, fmt.Errorf("%s.timeout: must not be negative", where))
		}
		if e.APIKeyEnv != "" && looksLikeKey(e.APIKeyEnv) {
			errs = append(errs, fmt.Errorf("%s.api_key_env: this looks like a key, not a variable name %s; give the name of the variable that holds it", where, ValueHidden))
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
