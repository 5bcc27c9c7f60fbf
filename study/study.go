// Package study is the one run lifecycle of budge: a new run (Start), an
// interrupted one continued in place (Resume), a recorded one asked again
// from its recorded responses (Replay), released results brought in
// (ImportFraming), and a stored run read back and scored (Load). Each
// protocol joins it through a small adapter (pressure.go, framing.go); the
// protocol cores import neither the store, the runner nor any provider.
// The command line is a thin layer over this package.
package study

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"github.com/buildlab/budge/provider/batch"
	"time"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/provider/endpoint"
	"github.com/buildlab/budge/runner"
	"github.com/buildlab/budge/store"
)

// Version is budge's version, recorded in every manifest.
const Version = "0.1.0"

// ErrInvalid marks errors caused by bad input (decks, flags, files).
var ErrInvalid error = &inputError{"invalid input"}

// ErrSelfTest means the checker failed its own fixtures and nothing was run.
var ErrSelfTest error = &selfTestError{"checker self-test failed"}

// ErrCostLimit means the projected cost of a run exceeds --max-cost, and
// nothing was run.
var ErrCostLimit = errors.New("projected cost exceeds the limit")

// NetOptions say how a run of either protocol reaches a model that is not
// in process, and what it may spend.
type NetOptions struct {
	// Endpoint says how the model is opened: base URL, config file of named
	// endpoints and prices, API keys.
	Endpoint endpoint.Options
	// MaxCost, when positive, is the most the run may cost in US dollars:
	// a run projected to cost more is refused, and a run stops starting
	// sessions before its running cost would pass it.
	MaxCost float64
	// CacheDir, when set, is a response cache directory.
	CacheDir string
	// OutageWait bounds how long a run waits for an unreachable endpoint
	// before it stops as interrupted; RateLimitWait how long one call waits
	// out 429 answers with Retry-After without using an attempt. Zero is
	// the runner's default (2m and 5m), negative turns the wait off.
	OutageWait, RateLimitWait time.Duration
	// Rate, when positive, is the most calls per second the run makes: by
	// all its workers together on a shared store.
	Rate int
	// Batch sends the run's calls through the provider's batch API, one
	// turn per wave, at the batch price (provider/batch).
	Batch bool
	// KeepBatchFiles keeps what a batch run's collected batches leave at
	// the provider (input and result files); by default they are deleted
	// once every result is in the run's journal.
	KeepBatchFiles bool
	// BatchNotify, when set, is told of a batch run's waves and batches.
	BatchNotify func(batch.Event)
	// NoPreflight skips the check of the endpoint before the run
	// (preflight).
	NoPreflight bool
	// Notice, when set, is told what the user should know while the run
	// goes on: a preflight problem that may pass, calls failing for one
	// shared reason.
	Notice func(string)
}

// Control is what a run of any protocol, new, resumed or replayed, takes
// from its caller beyond the protocol: how to reach the model, how many
// sessions at once, and the callbacks.
type Control struct {
	NetOptions
	// Provider, when set, is used instead of opening the model (tests,
	// embedding).
	Provider provider.Provider
	// Concurrency is the most sessions in flight; below 1 on a resume or a
	// replay, the recorded run's.
	Concurrency int
	Progress    func(runner.Progress)
	// Started is called once the run exists in the store, before any call.
	Started func(runID string)
	// Drain, when done, stops new sessions from starting.
	Drain context.Context
	// RetryFailed, on a resume, also runs again the sessions that failed
	// for transport reasons, as their next incarnation (every earlier
	// attempt stays on record).
	RetryFailed bool
	// StrictParse refuses every reply that needs a repair to be read
	// (--strict-parse). A new run records it in its manifest and
	// fingerprint; a resume, a replay and a re-score read replies as the
	// recorded run did, whatever this says.
	StrictParse bool

	// stored is handed each batch of sessions once stored (early).
	stored func([]store.Session)
}

// Header is the part of a run's manifest that every protocol has: identity,
// model, seeds, settings, bookkeeping and the network record. Each
// protocol's manifest embeds it, so its JSON fields sit at the top level.
type Header struct {
	RunID        string               `json:"run_id"`
	Protocol     string               `json:"protocol"`
	Budge        string               `json:"budge_version"`
	Created      time.Time            `json:"created"`
	Status       string               `json:"status"`
	Model        string               `json:"model"`
	Provider     provider.Info        `json:"provider"`
	Seed         uint64               `json:"seed"`
	ScheduleSeed uint64               `json:"schedule_seed"`
	SeedPolicy   string               `json:"seed_policy"`
	Concurrency  int                  `json:"concurrency"`
	Settings     chat.Settings        `json:"generation_settings"`
	Retry        provider.RetryPolicy `json:"retry_policy"`
	Parser       string               `json:"parser_version"`
	Reported     Reported             `json:"reported_by_provider"`
	Fingerprint  string               `json:"fingerprint"`
	Counts       Counts               `json:"counts"`
	Net          NetInfo              `json:"net"`
}

// seedPolicy is what every run's manifest says about generation seeds.
const seedPolicy = "each session sends seed = hash(run seed, session id) with every request"

// newHeader starts the manifest of a new run of protocol with model p.
func newHeader(protocol string, now time.Time, info provider.Info, seed uint64, conc int, s chat.Settings, r provider.RetryPolicy, parser string) Header {
	return Header{RunID: NewRunID(now), Protocol: protocol, Budge: Version, Created: now.UTC(), Status: store.RunRunning,
		Model: info.Model, Provider: info, Seed: seed, ScheduleSeed: seed ^ 0x9e3779b97f4a7c15, SeedPolicy: seedPolicy,
		Concurrency: conc, Settings: s, Retry: r, Parser: parser}
}

// Reported is what the provider said about itself across the run's calls.
type Reported struct {
	ModelIDs     []string `json:"model_ids"`
	Fingerprints []string `json:"system_fingerprints"`
}

// Counts are the run's bookkeeping.
type Counts struct {
	Planned        int `json:"sessions_planned"`
	Complete       int `json:"sessions_complete"`
	Failed         int `json:"sessions_failed"`
	Missing        int `json:"sessions_missing"`
	Interrupted    int `json:"sessions_interrupted"`
	Attempts       int `json:"attempts"`
	FailedAttempts int `json:"failed_attempts"`
	Retries        int `json:"retries"`
	InputTokens    int `json:"input_tokens"`
	OutputTokens   int `json:"output_tokens"`
}

// Result is a scored run of either protocol: *PressureResult or
// *FramingResult.
type Result interface {
	// Head is the scored manifest's common part.
	Head() *Header
	// Stored is the run's row in the store.
	Stored() store.Run
	// protocol names the result's protocol (on a nil result too).
	protocol() string
	Output
}

// NewRunID makes a sortable, unique run id.
func NewRunID(now time.Time) string {
	var b [3]byte
	rand.Read(b[:])
	return now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// manifestJSON encodes a manifest the way every run stores it.
func manifestJSON(m any) []byte {
	b, _ := json.MarshalIndent(m, "", "  ")
	return b
}

// finalStatus is a scored run's status: interrupted while planned sessions
// are missing, incomplete while some failed for good.
func finalStatus(c Counts) string {
	switch {
	case c.Missing > 0:
		return store.RunInterrupted
	case c.Failed > 0:
		return store.RunIncomplete
	}
	return store.RunComplete
}
