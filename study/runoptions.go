package study

import "github.com/buildlab/budge/provider"

// RunOptions are what every protocol's run is asked with: the model, the
// run seed, the retry policy, the generation settings and how it executes.
// Each protocol's options embed them, so a command line sets them once for
// either protocol.
type RunOptions struct {
	Model       string // sim, sim:PROFILE, sim:profile.yaml, or PROVIDER:MODEL
	Seed        uint64
	Retry       provider.RetryPolicy
	Temperature *float64 // nil sends none
	MaxTokens   int
	Control
}

// recordedOptions are the run options of a recorded run, executed under c
// (a replay).
func recordedOptions(h *Header, c Control) RunOptions {
	return RunOptions{Model: h.Model, Seed: h.Seed, Retry: h.Retry, Temperature: h.Settings.Temperature, MaxTokens: h.Settings.MaxTokens, Control: c}
}
