package openai

import (
	"testing"
	"time"

	"github.com/buildlab/budge/provider/providertest"
)

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.OpenAI, func(baseURL string, timeout time.Duration) (*Provider, error) {
		return New(Config{Name: "openai-compatible", Model: "test-model", BaseURL: baseURL, APIKey: providertest.Key, Tools: true, Timeout: timeout})
	})
}
