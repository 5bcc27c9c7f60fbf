// Package endpoint turns a model name from the command line into a
// provider: it parses names (sim, sim:PROFILE, openai:MODEL,
// anthropic:MODEL, ollama:MODEL, openrouter:MODEL, openai-compatible:MODEL
// and NAME:MODEL for an endpoint named in a config file), reads the config
// file of named endpoints and prices, and reads API keys from the
// environment. FromOS is the one place in budge that reads API keys.
//
// Keys travel from here into the providers' HTTP headers only: Info, error
// messages and everything else that is stored carry no key. Every provider
// is also handed every key the process holds (Env.Secrets), and redacts
// them from whatever it returns, should an endpoint echo one.
package endpoint

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/provider/anthropic"
	"github.com/buildlab/budge/provider/openai"
	"github.com/buildlab/budge/provider/sim"
)

// Secret is a string that never prints itself.
type Secret string

func (s Secret) String() string               { return redacted(s) }
func (s Secret) GoString() string             { return redacted(s) }
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted(s) + `"`), nil }
func (s Secret) MarshalText() ([]byte, error) { return []byte(redacted(s)), nil }

func redacted(s Secret) string {
	if s == "" {
		return ""
	}
	return "[redacted]"
}

// Env is what budge takes from the environment.
type Env struct {
	OpenAIKey, AnthropicKey, OpenRouterKey, CompatibleKey Secret
	// OllamaHost is OLLAMA_HOST, as Ollama itself reads it.
	OllamaHost string
	// ConfigPath is BUDGE_CONFIG: the default config file.
	ConfigPath string
	// Lookup reads the variable a configured endpoint names in api_key_env.
	Lookup func(name string) Secret
}

// Key variables, by provider.
const (
	OpenAIKeyVar     = "OPENAI_API_KEY"
	AnthropicKeyVar  = "ANTHROPIC_API_KEY"
	OpenRouterKeyVar = "OPENROUTER_API_KEY"
	CompatibleKeyVar = "OPENAI_COMPATIBLE_API_KEY"
)

// FromOS reads the process environment: the only place budge reads keys.
func FromOS() Env {
	return Env{
		OpenAIKey: Secret(os.Getenv(OpenAIKeyVar)), AnthropicKey: Secret(os.Getenv(AnthropicKeyVar)),
		OpenRouterKey: Secret(os.Getenv(OpenRouterKeyVar)), CompatibleKey: Secret(os.Getenv(CompatibleKeyVar)),
		OllamaHost: os.Getenv("OLLAMA_HOST"), ConfigPath: os.Getenv("BUDGE_CONFIG"),
		Lookup: func(name string) Secret { return Secret(os.Getenv(name)) },
	}
}

// Secrets returns every key value the process holds: the keys of the
// built-in providers and those named by the config's endpoints. Whatever a
// provider returns is redacted of all of them, not only its own key.
func (e Env) Secrets(c *Config) []string {
	var out []string
	for _, k := range []Secret{e.OpenAIKey, e.AnthropicKey, e.OpenRouterKey, e.CompatibleKey} {
		if k != "" {
			out = append(out, string(k))
		}
	}
	if c != nil && e.Lookup != nil {
		names := make([]string, 0, len(c.Endpoints))
		for _, ep := range c.Endpoints {
			if ep.APIKeyEnv != "" {
				names = append(names, ep.APIKeyEnv)
			}
		}
		sort.Strings(names)
		for _, n := range names {
			if k := e.Lookup(n); k != "" {
				out = append(out, string(k))
			}
		}
	}
	return out
}

// Default base URLs.
const (
	OpenAIBaseURL     = "https://api.openai.com/v1"
	OpenRouterBaseURL = "https://openrouter.ai/api/v1"
	OllamaBaseURL     = "http://127.0.0.1:11434/v1"
)

// Options are what the command line adds to a model name.
type Options struct {
	BaseURL     string        // --base-url: overrides the endpoint's
	Structured  string        // --structured-output: overrides the endpoint's
	Timeout     time.Duration // per call
	Concurrency int           // sizes the connection pool
	// MaxBody is the largest response body accepted, in bytes
	// (provider.DefaultMaxBody, 8 MiB, when 0). The bytes of all responses
	// in flight are bounded process-wide by provider.ResponseBudget
	// (provider.DefaultResponseBudget, 256 MiB, by default).
	MaxBody int64
	Config  *Config // named endpoints; may be nil
	Env     Env
	// Judge, when set, makes "sim" and "sim:PROFILE" the simulated
	// framing judge (a framing profile) that knows these answers.
	Judge *Judge
	// Deck, when set, is what a pressure run tells the simulator about its
	// deck: the identity labels it shows, and the answer key that only
	// sim:oracle is handed.
	Deck *DeckKnowledge
	// Coder, when set, makes "sim" and "sim:NAME" the simulated coder of
	// budge judge (sim.LookupCoder).
	Coder bool
}

// DeckKnowledge is what a pressure run hands the simulator. Identities maps
// each identity value the deck shows to its condition, X or Y, so planted
// identity effects follow the labels a run declares (a real model sees the
// same labels). Key maps record ids to the selection the deck declares
// once they are published; only sim:oracle receives it.
type DeckKnowledge struct {
	Identities map[string]string
	Key        map[string]string
}

// Judge is what the simulated framing judge knows: the answers of the
// run's items, or the answer table in File instead.
type Judge struct {
	Answers []Answer
	File    string
}

// Answer is the simulated judge's knowledge of one question.
type Answer = sim.KnowledgeEntry

// Knowledge is the simulated judge's answer table.
func (j *Judge) Knowledge() (*sim.Knowledge, error) {
	if j.File != "" {
		return sim.LoadKnowledge(j.File)
	}
	return sim.NewKnowledge(j.Answers), nil
}

// Names lists the model name forms, for help and error messages.
const Names = "sim, sim:PROFILE, sim:oracle (pressure runs only), openai:MODEL, anthropic:MODEL, ollama:MODEL, openrouter:MODEL, openai-compatible:MODEL (with --base-url), or NAME:MODEL for an endpoint in the config file"

// Open turns a model name into a provider.
func Open(name string, o Options) (provider.Provider, error) {
	kind, model, hasModel := strings.Cut(name, ":")
	if kind == "" || kind == "sim" {
		if o.BaseURL != "" {
			return nil, fmt.Errorf("model %q runs in process; to test the simulator over HTTP use --model openai-compatible:sim with --base-url", name)
		}
		if o.Coder {
			return sim.LookupCoder(model)
		}
		if o.Judge != nil {
			return openJudge(model, o.Judge)
		}
		return openSim(model, o.Deck)
	}
	_, isBuiltin := builtin(kind, o.Env)
	isConfigured := false
	if o.Config != nil {
		_, isConfigured = o.Config.Endpoints[kind]
	}
	if !isBuiltin && !isConfigured {
		if guess := Suggest(name); guess != "" {
			return nil, fmt.Errorf("model %q: no provider named %q; did you mean --model %s? (forms: %s)", name, kind, guess, Names)
		}
	}
	if !hasModel || model == "" {
		if !isBuiltin && !isConfigured {
			return nil, fmt.Errorf("model %q: no provider named %q: give the model as PROVIDER:MODEL, as in openai:%s (forms: %s; sim profiles: %s)",
				name, kind, name, Names, strings.Join(sim.ProfileNames(), ", "))
		}
		return nil, fmt.Errorf("model %q: name the model after the colon, as in %s:MODEL (forms: %s)", name, kind, Names)
	}
	ep, ok := builtin(kind, o.Env)
	if c := o.Config; c != nil {
		if named, found := c.Endpoints[kind]; found {
			ep, ok = named, true
			if ep.APIKeyEnv != "" && o.Env.Lookup != nil {
				ep.key = o.Env.Lookup(ep.APIKeyEnv)
			}
			if ep.Provider == "ollama" && ep.BaseURL == "" {
				ep.BaseURL = ollamaURL(o.Env.OllamaHost)
			}
		}
	}
	if !ok {
		var known []string
		if o.Config != nil {
			for k := range o.Config.Endpoints {
				known = append(known, k)
			}
			sort.Strings(known)
		}
		msg := fmt.Sprintf("model %q: unknown provider %q (forms: %s", name, kind, Names)
		if len(known) > 0 {
			msg += "; configured endpoints: " + strings.Join(known, ", ")
		}
		return nil, fmt.Errorf("%s; sim profiles: %s)", msg, strings.Join(sim.ProfileNames(), ", "))
	}
	if o.BaseURL != "" {
		ep.BaseURL = o.BaseURL
	}
	if o.Structured != "" {
		ep.StructuredOutput = o.Structured
	}
	timeout := o.Timeout
	if ep.Timeout > 0 && timeout == 0 {
		timeout = time.Duration(ep.Timeout)
	}
	switch ep.Provider {
	case "anthropic":
		if ep.key == "" {
			return nil, missingKey(name, ep, AnthropicKeyVar)
		}
		return anthropic.New(anthropic.Config{Label: name, Model: model, BaseURL: ep.BaseURL, APIKey: string(ep.key), KeyVar: keyVar(ep, AnthropicKeyVar),
			Format: anthropic.Format{Structured: ep.StructuredOutput}, Timeout: timeout, MaxConns: o.Concurrency,
			Secrets: o.Env.Secrets(o.Config), MaxBody: o.MaxBody})
	case "openai", "openai-compatible", "ollama", "openrouter":
		if ep.BaseURL == "" {
			return nil, fmt.Errorf("model %q: the %s provider needs --base-url (for example http://127.0.0.1:8000/v1) or an endpoint in the config file", name, ep.Provider)
		}
		if ep.key == "" && (ep.Provider == "openai" || ep.Provider == "openrouter") {
			v := OpenAIKeyVar
			if ep.Provider == "openrouter" {
				v = OpenRouterKeyVar
			}
			return nil, missingKey(name, ep, v)
		}
		f := openai.Format{Structured: ep.StructuredOutput, MaxTokensField: ep.MaxTokensField, NoSeed: ep.Seed != nil && !*ep.Seed}
		if f.MaxTokensField == "" && ep.Provider == "openai" {
			f.MaxTokensField = "max_completion_tokens"
		}
		tools := ep.Tools == nil || *ep.Tools
		return openai.New(openai.Config{Name: ep.Provider, Label: name, Model: model, BaseURL: ep.BaseURL, APIKey: string(ep.key), KeyVar: keyVar(ep, builtinKeyVar[ep.Provider]),
			Format: f, Tools: tools, Timeout: timeout, MaxConns: o.Concurrency,
			Secrets: o.Env.Secrets(o.Config), MaxBody: o.MaxBody,
			// sim:oracle is budge's name for the simulator handed the
			// deck's answer key, in process or behind budge sim serve
			// --oracle-deck: a run of it says so wherever it is served.
			AnswerKey: ep.Provider == "openai-compatible" && model == "sim:"+sim.OracleName})
	}
	return nil, fmt.Errorf("model %q: endpoint provider %q is not one of openai, openai-compatible, ollama, openrouter, anthropic", name, ep.Provider)
}

// builtinKeyVar is the variable each built-in provider reads its key from.
var builtinKeyVar = map[string]string{"openai": OpenAIKeyVar, "openrouter": OpenRouterKeyVar, "openai-compatible": CompatibleKeyVar}

// keyVar is the variable ep's key is read from: its api_key_env, or def.
func keyVar(ep Endpoint, def string) string {
	if ep.APIKeyEnv != "" {
		return ep.APIKeyEnv
	}
	if def == "" {
		return "the endpoint's api_key_env"
	}
	return def
}

func missingKey(name string, ep Endpoint, def string) error {
	v := keyVar(ep, def)
	return fmt.Errorf("model %q: no API key: set %s in the environment", name, v)
}

// builtin returns the endpoint a provider name stands for without a config.
func builtin(kind string, env Env) (Endpoint, bool) {
	switch kind {
	case "openai":
		return Endpoint{Provider: "openai", BaseURL: OpenAIBaseURL, key: env.OpenAIKey}, true
	case "anthropic":
		return Endpoint{Provider: "anthropic", key: env.AnthropicKey}, true
	case "openrouter":
		return Endpoint{Provider: "openrouter", BaseURL: OpenRouterBaseURL, key: env.OpenRouterKey}, true
	case "ollama":
		return Endpoint{Provider: "ollama", BaseURL: ollamaURL(env.OllamaHost)}, true
	case "openai-compatible":
		return Endpoint{Provider: "openai-compatible", key: env.CompatibleKey}, true
	}
	return Endpoint{}, false
}

// Suggest guesses the provider of a model name given without one, from how
// providers name their models: gpt-4o is openai:gpt-4o, claude-* is
// anthropic:, vendor/model is openrouter:, an open-weights family
// (llama3.1:8b) is ollama:, and a simulator profile is sim:. "" when
// nothing fits.
func Suggest(name string) string {
	lower := strings.ToLower(name)
	if slices.Contains(sim.ProfileNames(), name) || name == "oracle" {
		return "sim:" + name
	}
	has := func(prefixes ...string) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(lower, p) {
				return true
			}
		}
		return false
	}
	switch {
	case has("gpt-", "gpt4", "chatgpt-", "o1", "o3", "o4-", "davinci", "babbage"):
		return "openai:" + name
	case has("claude"):
		return "anthropic:" + name
	case strings.Contains(name, "/"):
		return "openrouter:" + name
	case has("llama", "mistral", "mixtral", "qwen", "gemma", "phi", "deepseek", "codellama", "tinyllama", "smollm", "granite", "olmo"):
		return "ollama:" + name
	}
	return ""
}

// ollamaURL follows OLLAMA_HOST the way Ollama does: host, host:port or a URL.
func ollamaURL(host string) string {
	if host == "" {
		return OllamaBaseURL
	}
	if !strings.Contains(host, "://") {
		host = "http://" + host
	}
	rest := host[strings.Index(host, "://")+3:]
	if !strings.Contains(rest, ":") {
		host += ":11434"
	}
	return strings.TrimSuffix(host, "/") + "/v1"
}

// openJudge opens the simulated framing judge with profile name.
func openJudge(name string, j *Judge) (provider.Provider, error) {
	p, err := sim.LookupFramingProfile(name)
	if err != nil {
		return nil, err
	}
	k, err := j.Knowledge()
	if err != nil {
		return nil, err
	}
	return sim.NewJudge(p, k), nil
}

// openSim opens the simulator with profile name, told the deck's identity
// labels; sim:oracle is also handed the answer key, and needs it.
func openSim(name string, k *DeckKnowledge) (provider.Provider, error) {
	if name == sim.OracleName {
		if k == nil || k.Key == nil {
			return nil, fmt.Errorf("sim:%s answers from the answer key of the deck it runs, so it runs only as the model of budge run on a pressure deck", sim.OracleName)
		}
		return sim.NewOracle(k.Key).WithIdentities(k.Identities), nil
	}
	p, err := sim.LookupProfile(name)
	if err != nil {
		return nil, err
	}
	s := sim.New(p)
	if strings.ContainsAny(name, "/.") { // a profile file: record its path
		s = s.Named("sim:" + name)
	}
	if k != nil {
		s = s.WithIdentities(k.Identities)
	}
	return s, nil
}
