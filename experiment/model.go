package experiment

import (
	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/provider/endpoint"
)

// OpenModel turns a model name from the command line into a provider, with
// keys from the environment and no config file. Names: sim, sim:PROFILE,
// sim:path/to/profile.yaml, openai:MODEL, anthropic:MODEL, ollama:MODEL,
// openrouter:MODEL (openai-compatible:MODEL needs a base URL: use
// OpenModelWith).
func OpenModel(name string) (provider.Provider, error) {
	return endpoint.Open(name, endpoint.Options{Env: endpoint.FromOS()})
}

// OpenModelWith opens a model with a base URL, a config file of named
// endpoints and the keys in o.Env.
func OpenModelWith(name string, o endpoint.Options) (provider.Provider, error) {
	return endpoint.Open(name, o)
}
