package openai

import (
	"testing"
	"time"

	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/provider/providertest"
)

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.OpenAI, func(t *testing.T, baseURL string, timeout time.Duration) provider.Provider {
		p, err := New(Config{Name: "openai-compatible", Model: "test-model", BaseURL: baseURL, APIKey: providertest.Key, Tools: true, Timeout: timeout})
		if err != nil {
			t.Fatal(err)
		}
		return p
	})
}
