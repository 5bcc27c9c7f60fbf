package experiment

import (
	"fmt"
	"strings"

	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/provider/sim"
)

// OpenModel turns a model name from the command line into a provider:
// "sim", "sim:PROFILE" or "sim:path/to/profile.yaml".
func OpenModel(name string) (provider.Provider, error) {
	kind, arg, _ := strings.Cut(name, ":")
	switch kind {
	case "", "sim":
		p, err := sim.LookupProfile(arg)
		if err != nil {
			return nil, err
		}
		return sim.New(p), nil
	case "openai", "anthropic", "ollama", "openai-compatible":
		return nil, fmt.Errorf("model %q: the %s provider is not built into this version of budge yet; use sim or sim:PROFILE (profiles: %s)",
			name, kind, strings.Join(sim.ProfileNames(), ", "))
	}
	return nil, fmt.Errorf("model %q: unknown provider %q (use sim, sim:PROFILE; profiles: %s)", name, kind, strings.Join(sim.ProfileNames(), ", "))
}
