package cli

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/provider/sim"
	"github.com/buildlab/budge/study"
)

const simAbout = `
Serves the built-in simulator behind an OpenAI-compatible chat completions API
(POST /v1/chat/completions with tools and response_format; GET /v1/models), so
that the network path of budge (the openai-compatible provider, retries,
resume) can be exercised end to end. The request's "model" picks the profile:
sim, or sim:PROFILE. Without faults, budge run --model openai-compatible:sim
against this server gives exactly the per-session results of the in-process
simulator with the same seed. The simulated DialDefer judge is served as
judge or judge:PROFILE, knowing the answers of the items of --judge-data: budge
framing run --model openai-compatible:judge against it gives exactly the
per-session results of --model sim on the same data and seed. As in process,
plain sim answers a framing judgment (a prompt about an item of --judge-data,
without tools) as the default judge, so openai-compatible:sim works for
framing runs too.

sim:oracle is served only with --oracle-deck DECK: it is handed the answer key
of those decks and answers them as a correctly behaving model would. budge run
--deck DECK --model openai-compatible:sim:oracle against this server gives the
per-session results of --model sim:oracle in process, and its report says the
model was handed the answer key, as in process.

Fault injection: every request draws once; the rates add up (at most 1). A 429
carries Retry-After (whole seconds) and retry-after-ms; 5xx cycles 500, 502,
503; a reset closes the connection with an RST; a truncated body is cut in half
under its full Content-Length; malformed is a 200 that is not JSON; empty is a
200 with empty content (a bad model answer, not a transport failure); messy
wraps the answer as real models do (a reasoning block, prose around it, a
fence inside prose, bold markup), which budge reads tolerantly and records
as repairs (--strict-parse refuses them). Latency
is added to every request. Prints "listening on http://ADDR/v1" once ready;
stops on Ctrl-C.

Batches: the server also speaks OpenAI's Batch API (POST /v1/files with
purpose batch, POST /v1/batches, GET /v1/batches/ID, GET
/v1/files/ID/content, cancel) and Anthropic's Messages API and Message
Batches (POST /v1/messages, /v1/messages/batches, its results and cancel),
so budge run --batch runs offline. A batch ends --batch-delay after it is
created; --batch-error-rate fails a share of its requests; --batch-expire N
lets the Nth batch expire half done; --batch-faults plants the failures of
the batch money paths (failed and cut downloads, lost creates, batches that
fail as a whole, size refusals, results moved to results_url). Each request a batch answers is in the
request log with fault "batch".`

const simExamples = `
  budge sim serve --addr 127.0.0.1:8088
  budge sim serve --addr 127.0.0.1:8088 --rate-429 0.2 --rate-5xx 0.05 --rate-reset 0.02 --rate-truncate 0.02 --request-log req.jsonl
  budge sim serve --latency 100ms --latency-dist exponential
  budge sim serve --batch-delay 2s --batch-error-rate 0.05 --batch-expire 2
  budge sim serve --batch-faults fail-downloads=2,cut-downloads=1,lose-create=1,max-bytes=400000
  budge sim serve --oracle-deck docs/examples/tablet-loan.yaml --oracle-deck discovery`

func cmdSim(ctx context.Context, std IO, args []string) error {
	if len(args) == 0 || args[0] != "serve" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprintln(std.Out, "Usage: budge sim serve [flags]\n\nRun budge sim serve --help for its flags.")
			return nil
		}
		return usageError{"usage: budge sim serve [flags] (the simulator behind an OpenAI-compatible HTTP API)"}
	}
	fs := newFlags(std, "sim serve", "[flags]", simAbout, simExamples)
	addr := fs.String("addr", "127.0.0.1:8088", "address to listen on (port 0 picks a free port)")
	r429 := fs.Float64("rate-429", 0, "share of requests answered 429 with Retry-After")
	retryAfter := fs.Duration("retry-after", time.Second, "Retry-After sent with each 429")
	r5xx := fs.Float64("rate-5xx", 0, "share of requests answered 500, 502 or 503")
	reset := fs.Float64("rate-reset", 0, "share of connections reset without a response")
	trunc := fs.Float64("rate-truncate", 0, "share of 200 responses cut in half")
	malformed := fs.Float64("rate-malformed", 0, "share of 200 responses whose body is not JSON")
	empty := fs.Float64("rate-empty", 0, "share of 200 responses with empty content")
	messy := fs.Float64("rate-messy", 0, "share of answers wrapped as real models wrap them (reasoning block, prose, fence in prose, bold)")
	latency := fs.Duration("latency", 0, "latency added to every request (the mean, for exponential)")
	jitter := fs.Duration("latency-jitter", 0, "half-width of the uniform latency distribution")
	dist := fs.String("latency-dist", "fixed", "latency distribution: fixed, uniform or exponential")
	seed := fs.Uint64("fault-seed", 1, "seed of the fault and latency draws")
	logPath := fs.String("request-log", "", "append one JSON line per request to this file")
	judgeData := fs.String("judge-data", "sample", `items whose answers the simulated judge knows: "sample", a file or a directory`)
	batchDelay := fs.Duration("batch-delay", 2*time.Second, "how long a batch (OpenAI Batch API or Anthropic Message Batches) stays in progress")
	batchErrors := fs.Float64("batch-error-rate", 0, "share of a batch's requests that fail inside it (a 500 in their result)")
	batchFaults := fs.String("batch-faults", "", sim.BatchFaultsHelp)
	keyEnv := fs.String("api-key-env", "", "NAME: require the key held in the environment variable NAME on every request (as an API does; 401 otherwise)")
	oracleDecks := listVar(fs, "oracle-deck", false, "`DECK` (a built-in name, a deck file or a folder) whose answer key sim:oracle is handed; "+
		"serves the model sim:oracle, which answers that deck as a correct model would (repeatable; without it sim:oracle is not served)")
	var expire intList
	fs.Var(&expire, "batch-expire", "N: the Nth batch created expires with half its requests unanswered (repeatable)")
	pos, err := parse(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", pos[0])}
	}
	o := sim.ServerOptions{Faults: sim.Faults{RateLimit: *r429, RetryAfter: *retryAfter, ServerErr: *r5xx, Reset: *reset,
		Truncate: *trunc, Malformed: *malformed, Empty: *empty, Messy: *messy, Latency: *latency, Jitter: *jitter, LatencyDist: *dist, Seed: *seed},
		Batch: sim.BatchOptions{Delay: *batchDelay, ErrorRate: *batchErrors, Expire: expire}}
	if err := o.Batch.SetFaults(*batchFaults); err != nil {
		return usageError{err.Error()}
	}
	if *keyEnv != "" {
		if o.APIKey = os.Getenv(*keyEnv); o.APIKey == "" {
			return usageError{fmt.Sprintf("--api-key-env %s: the variable is not set or empty", *keyEnv)}
		}
	}
	if o.Judge, err = judgeKnowledge(*judgeData); err != nil {
		return err
	}
	if o.Oracle, err = oracleKey(oracleDecks.vals); err != nil {
		return err
	}
	if *logPath != "" {
		f, err := os.OpenFile(*logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		o.Log = f
	}
	srv, err := sim.NewServer(o)
	if err != nil {
		return usageError{err.Error()}
	}
	ctx, stop := serverInterrupts(ctx, std)
	defer stop()
	err = srv.Serve(ctx, *addr, func(a net.Addr) {
		fmt.Fprintf(std.Out, "listening on http://%s/v1\n", a)
		if f, ok := std.Out.(*os.File); ok {
			f.Sync()
		}
	})
	if err == nil {
		fmt.Fprintln(std.Err, srv.Summary())
	}
	return err
}

// oracleKey is the answer key of decks, the one sim:oracle is handed over
// HTTP; nil without decks. Two decks that give one record different
// selections cannot share a server.
func oracleKey(decks []string) (map[string]string, error) {
	if len(decks) == 0 {
		return nil, nil
	}
	key, from := map[string]string{}, map[string]string{}
	for _, name := range decks {
		d, err := pressure.OpenDeck(name)
		if err != nil {
			return nil, usageError{fmt.Sprintf("--oracle-deck %s: %v", name, err)}
		}
		for id, sel := range d.AnswerKey() {
			if old, ok := key[id]; ok && old != sel {
				return nil, usageError{fmt.Sprintf("--oracle-deck: decks %s and %s both have record %s, with different answers: serve them from two servers", from[id], d.Name, id)}
			}
			key[id], from[id] = sel, d.Name
		}
	}
	return key, nil
}

// judgeKnowledge is what the simulated judge knows of the items of data.
func judgeKnowledge(data string) (*sim.Knowledge, error) {
	j, err := study.FramingJudge(data)
	if err != nil {
		return nil, err
	}
	return j.Knowledge()
}
