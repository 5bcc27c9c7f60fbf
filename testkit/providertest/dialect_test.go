package providertest

import (
	"strings"
	"testing"
)

// TestCheckRequestRejects: a dialect's request check names what is wrong
// with a body, so the suite's "request shape" case can fail.
func TestCheckRequestRejects(t *testing.T) {
	for _, d := range []Dialect{OpenAI, Anthropic} {
		// No temperature for OpenAI (it wants 0), a temperature of 1 for
		// Anthropic (its API version refuses any).
		body := `{"model":"other","stream":true,"messages":[{"role":"user"}]}`
		if d.Name == Anthropic.Name {
			body = `{"model":"other","stream":true,"temperature":1,"messages":[{"role":"user"}]}`
		}
		err := d.CheckRequest([]byte(body))
		if err == nil {
			t.Errorf("%s: a streamed request with one message passed", d.Name)
			continue
		}
		for _, want := range []string{"model", "roles user", "stream", "temperature"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v does not mention %q", d.Name, err, want)
			}
		}
	}
}
