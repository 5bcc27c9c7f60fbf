package anthropic

import (
	"testing"
	"time"

	"github.com/buildlab/budge/testkit/providertest"
)

func TestConformance(t *testing.T) {
	providertest.Run(t, providertest.Anthropic, func(baseURL string, timeout time.Duration) (*Provider, error) {
		return New(Config{Model: "test-model", BaseURL: baseURL, APIKey: providertest.Key, Timeout: timeout})
	})
}
