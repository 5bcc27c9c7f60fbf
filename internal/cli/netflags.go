package cli

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"time"

	"github.com/buildlab/budge/provider/endpoint"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
)

// netFlags are budge run's flags for models behind an API: endpoints and
// keys, cost, the response cache, resume and replay.
type netFlags struct {
	baseURL, config, structured *string
	callTimeout, outageWait     *time.Duration
	rateLimitWait               *time.Duration
	maxCost                     *float64
	rate                        *int
	cache, retryFailed, detach  *bool
	noPreflight                 *bool
	batch, keepBatchFiles       *bool // keepBatchFiles: nil for budge worker
	resume, replay              *string
	// worker marks budge worker's flags: it continues stored runs, so
	// --retry-failed needs no --resume.
	worker bool
}

func addNetFlags(fs *flag.FlagSet) *netFlags {
	n := addEndpointFlags(fs)
	n.resume = fs.String("resume", "", "continue the interrupted run RUN: completed sessions are not sent again")
	n.replay = fs.String("replay", "", "re-run the sessions of RUN from its recorded responses, as a new run, with no network calls")
	n.batch = fs.Bool("batch", false, "send the calls through the provider's batch API at the batch price (openai:, anthropic:, and openai-compatible: servers with the Batch API): every session waiting for its next turn goes out in one wave of batches; --concurrency is then the most requests per wave (default 100000)")
	n.keepBatchFiles = fs.Bool("keep-batch-files", false, "with --batch: keep the files collected batches leave at the provider (uploaded requests, results); by default budge deletes them once every result is in the run's journal")
	n.detach = fs.Bool("detach", false, "store the new run and its sessions as cells for workers, print its id and return without running it (budge worker RUN advances it, on any machine sharing the store)")
	return n
}

// addEndpointFlags adds the flags of how a model behind an API is reached
// and paid for, which budge worker takes too (it continues stored runs, so
// it has no --resume, --replay or --detach).
func addEndpointFlags(fs *flag.FlagSet) *netFlags {
	return &netFlags{
		baseURL:       fs.String("base-url", "", "base URL of an OpenAI-compatible endpoint (openai-compatible:MODEL; overrides the endpoint's for the others)"),
		config:        fs.String("config", "", "config file with named endpoints and a price table (default $BUDGE_CONFIG)"),
		structured:    fs.String("structured-output", "", "how the answer schema is sent: json_schema, json_object (fallback) or none (default: the endpoint's)"),
		callTimeout:   fs.Duration("call-timeout", 0, "time limit of one model call (default 5m)"),
		outageWait:    fs.Duration("outage-wait", 0, "how long to wait for an endpoint that is unreachable across the board before stopping the run as interrupted (default 2m; failures meanwhile are not counted against the model; negative: no waiting)"),
		rateLimitWait: fs.Duration("rate-limit-wait", 0, "how long one call waits out 429 answers with Retry-After without using an attempt (default 5m; negative: every 429 is an attempt)"),
		maxCost:       fs.Float64("max-cost", 0, "refuse to start if the projected cost passes this many US dollars, and start no session once the running cost would (prices from the config file)"),
		rate:          fs.Int("rate", 0, "most model calls per second the run makes, by all its workers together on a shared store (0: no limit; a worker takes the run's)"),
		cache:         fs.Bool("cache", false, "answer repeated requests from the response cache under the run directory, and record new answers there"),
		noPreflight:   fs.Bool("no-preflight", false, "skip the check of the endpoint before the run (the model exists, the key is taken, the server answers): a run whose calls cannot succeed then sends every session"),
		retryFailed:   fs.Bool("retry-failed", false, "with --resume (or budge worker): also run again the sessions that failed for transport reasons (rate limits, server errors, timeouts), as new attempts on record"),
		resume:        new(string),
		replay:        new(string),
		detach:        new(bool),
		batch:         new(bool),
	}
}

// fixedByPressureRun and fixedByFramingRun list the flags a resumed or
// replayed run takes from the recorded run instead.
var (
	fixedByPressureRun = []string{"deck", "lang", "model", "seed", "channel", "temperature", "max-tokens", "prompt", "strict-parse", "max-attempts", "retry-base",
		"identities", "identity-reviewer", "identity-field", "turns"}
	fixedByFramingRun = []string{"data", "data-format", "columns", "domain", "sample", "stratify", "sample-seed", "templates", "labels",
		"mitigation", "mitigation-mode", "challenge", "challenge-file", "reverse-perspective", "no-invert-truth", "unparseable",
		"strict-parse", "model", "knowledge", "seed", "temperature", "max-tokens", "max-attempts", "retry-base"}
)

// apply puts the flags into the options of either protocol: fixed lists
// the flags a resumed or replayed run takes from the recorded run, and
// concurrency is zeroed (the recorded run's) unless given. env is read
// once, by the caller.
func (n *netFlags) apply(fs *flag.FlagSet, fixedByRun []string, o *study.NetOptions, concurrency *int, dir string, env endpoint.Env) error {
	if *n.resume != "" && *n.replay != "" {
		return usageError{"--resume and --replay exclude each other"}
	}
	if *n.retryFailed && *n.resume == "" && !n.worker {
		return usageError{"--retry-failed goes with --resume RUN"}
	}
	if *n.resume != "" || *n.replay != "" {
		which := "--resume"
		if *n.replay != "" {
			which = "--replay"
		}
		for _, f := range fixedByRun {
			if flagSet(fs, f) {
				return usageError{fmt.Sprintf("%s takes --%s from the recorded run; drop --%s", which, f, f)}
			}
		}
		if *n.replay != "" && (*n.baseURL != "" || *n.cache || *n.maxCost != 0) {
			return usageError{"--replay makes no network calls: --base-url, --cache and --max-cost do not apply"}
		}
		if !flagSet(fs, "concurrency") {
			*concurrency = 0 // the recorded run's
		}
	}
	if n.keepBatchFiles != nil && *n.keepBatchFiles {
		if !*n.batch {
			return usageError{"--keep-batch-files is about the files of --batch runs: add --batch, or drop it"}
		}
		o.KeepBatchFiles = true
	}
	if *n.detach && (*n.resume != "" || *n.replay != "") {
		return usageError{"--detach makes a new run; to continue a stored run on several machines, start budge worker RUN on each"}
	}
	if *n.batch {
		switch {
		case *n.replay != "":
			return usageError{"--replay makes no calls: --batch does not apply"}
		case *n.resume != "":
			return usageError{"--resume continues a batch run as a batch run by itself: drop --batch"}
		case *n.detach:
			return usageError{"--batch runs in one process: drop --detach"}
		}
		o.Batch = true
		if !flagSet(fs, "concurrency") {
			*concurrency = defaultBatchSessions
		}
	}
	if *n.maxCost < 0 {
		return usageError{"--max-cost must not be negative"}
	}
	if *n.rate < 0 {
		return usageError{"--rate must not be negative"}
	}
	if *n.callTimeout < 0 {
		return usageError{"--call-timeout must not be negative"}
	}
	path := *n.config
	if path == "" {
		path = env.ConfigPath
	}
	var cfg *endpoint.Config
	if path != "" {
		c, err := endpoint.LoadConfig(path)
		if err != nil {
			return fmt.Errorf("%w: %w", study.ErrInvalid, err)
		}
		cfg = c
	}
	o.Endpoint = endpoint.Options{BaseURL: *n.baseURL, Structured: *n.structured, Timeout: *n.callTimeout,
		Concurrency: *concurrency, Config: cfg, Env: env}
	o.MaxCost, o.Rate = *n.maxCost, *n.rate
	o.NoPreflight = *n.noPreflight
	o.OutageWait, o.RateLimitWait = *n.outageWait, *n.rateLimitWait
	if *n.cache {
		local, err := store.LocalDir(dir)
		if err != nil {
			return err
		}
		o.CacheDir = filepath.Join(local, "cache")
	}
	return nil
}

// dispatch starts a new run of plan, or resumes or replays a stored run of
// either protocol, as the flags say. plan is called only for a new run.
func (n *netFlags) dispatch(ctx context.Context, st *store.Store, c study.Control, plan func() study.Plan) (study.Result, error) {
	switch {
	case *n.resume != "":
		c.RetryFailed = *n.retryFailed
		return study.Resume(ctx, st, *n.resume, c)
	case *n.replay != "":
		return study.Replay(ctx, st, *n.replay, c)
	}
	return study.Start(ctx, st, plan())
}
