package cli

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/provider/endpoint"
	"github.com/buildlab/budge/runner"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
)

func cmdRun(ctx context.Context, std IO, args []string) error {
	def := study.DefaultPressureOptions()
	fs := newFlags(std, "run", "[flags]", `
Runs the pressure-and-correction protocol: every case of the deck, crossed with
both identity assignments and both presentation orders, on every branch (no
follow-up, neutral follow-up, authority / emotional / consensus pressure, and a
verified correction through the evidence channel), repeated as the deck says.
Each branch is a fresh session. Prints "run: <id>", shows progress on stderr,
then prints the measures and the decision line.

Models: sim (the built-in simulator, default), sim:PROFILE with a built-in
profile (default, fair, steadfast, stubborn, incurious, pushover) or
sim:path/to/profile.yaml; openai:MODEL, anthropic:MODEL, openrouter:MODEL
(keys from OPENAI_API_KEY, ANTHROPIC_API_KEY, OPENROUTER_API_KEY);
ollama:MODEL (Ollama at $OLLAMA_HOST or 127.0.0.1:11434);
openai-compatible:MODEL with --base-url (vLLM, llama.cpp, LM Studio, budge sim
serve; key from OPENAI_COMPATIBLE_API_KEY if set); NAME:MODEL for an endpoint
named in the --config file.

--resume RUN continues an interrupted run (after Ctrl-C, a crash or kill -9)
without sending completed sessions again. --replay RUN re-runs a finished run's
sessions from its recorded responses, as a new run, with no network calls.`, `
  budge run
  budge run --model sim:stubborn --seed 7 --concurrency 32
  budge run --deck confirmation --format md
  budge run --lang zh                        # the built-in Chinese discovery deck
  budge run --deck ./my-deck.yaml --fail-on-block
  budge run --model openai:gpt-4o-mini --concurrency 16 --max-cost 2 --config budge.yaml
  budge run --model openai-compatible:sim --base-url http://127.0.0.1:8088/v1
  budge run --model ollama:llama3.2 --channel message
  budge run --resume latest
  budge run --replay 20261202-150455-a1b2c3`)
	dir := dirFlag(fs)
	deck := fs.String("deck", def.Deck, "built-in deck name (budge deck list) or path to a deck file")
	lang := fs.String("lang", "", "language of the run: en or zh picks that language's built-in discovery deck; with --deck, the deck must be written in it")
	model := fs.String("model", def.Model, "model to test: "+endpoint.Names)
	seed := fs.Uint64("seed", def.Seed, "run seed: fixes the schedule and the per-session generation seeds")
	conc := fs.Int("concurrency", def.Concurrency, "sessions in flight at once")
	channel := fs.String("channel", def.Channel, "evidence channel: auto, tool (the model reads a registry tool) or message (marked evidence messages)")
	temp := fs.String("temperature", "", "sampling temperature sent with every request (default: provider default, not sent)")
	maxTok := fs.Int("max-tokens", def.MaxTokens, "max output tokens per call")
	prompt := fs.String("prompt", "", "file with an application prompt that replaces the deck's (an intervention to test)")
	attempts := fs.Int("max-attempts", def.Retry.MaxAttempts, "attempts per call for infrastructure failures (every attempt is stored)")
	backoff := fs.Duration("retry-base", def.Retry.BaseDelay, "first retry delay; doubles per attempt with full jitter")
	failOnBlock := fs.Bool("fail-on-block", false, "exit 4 when the decision rule says investigate")
	format := fs.String("format", "text", "summary format printed at the end: text, md, json")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	nf := addNetFlags(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q (use --deck to choose a deck)", pos[0])}
	}
	o := def
	o.Deck, o.Model, o.Seed, o.Concurrency, o.Channel, o.MaxTokens, o.PromptFile = *deck, *model, *seed, *conc, *channel, *maxTok, *prompt
	o.Language = *lang
	if *lang != "" && !flagSet(fs, "deck") {
		o.Deck = "" // the language's own deck, never a translation
	}
	o.Retry.MaxAttempts, o.Retry.BaseDelay = *attempts, *backoff
	if *temp != "" {
		t, err := strconv.ParseFloat(*temp, 64)
		if err != nil || t < 0 || t > 2 {
			return usageError{fmt.Sprintf("--temperature must be a number between 0 and 2, got %q", *temp)}
		}
		o.Temperature = &t
	}
	if *format != "text" && *format != "md" && *format != "json" {
		return usageError{fmt.Sprintf("--format must be text, md or json, got %q", *format)}
	}
	if err := nf.apply(fs, fixedByPressureRun, &o.NetOptions, &o.Concurrency, *dir, endpoint.FromOS()); err != nil {
		return err
	}
	st, err := openStore(*dir)
	if err != nil {
		return err
	}
	defer st.Close()

	// First Ctrl-C: start no new sessions, finish those in flight.
	// Second: stop calls in flight too. Either way what was observed is stored.
	hard, drain, stop := interruptible(ctx, std)
	defer stop()
	o.Drain = drain
	o.Started = func(id string) { fmt.Fprintln(std.Out, "run: "+id) }
	if !*quiet {
		o.Progress = progressPrinter(std)
	}
	res, err := nf.run(hard, st, o)
	if err != nil {
		return err
	}
	if !*quiet {
		fmt.Fprintln(std.Err)
	}
	if err := res.Report().Render(std.Out, *format); err != nil {
		return err
	}
	switch {
	case res.Run.Status != store.RunComplete:
		return codedError{ExitIncomplete, fmt.Errorf("run %s is %s: %d failed and %d missing session(s); the measures above count them as not observed",
			res.Run.ID, res.Run.Status, res.Manifest.Counts.Failed, res.Manifest.Counts.Missing)}
	case *failOnBlock && res.Summary.Decision.Verdict == pressure.VerdictInvestigate:
		return codedError{ExitBlocked, fmt.Errorf("decision: investigate (--fail-on-block)")}
	}
	return nil
}

// progressPrinter redraws one line on a terminal and prints a line every few
// seconds elsewhere (CI logs).
func progressPrinter(std IO) func(runner.Progress) {
	tty := false
	if f, ok := std.Err.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	var last time.Time
	return func(p runner.Progress) {
		if !tty && time.Since(last) < 2*time.Second && p.Done+p.Interrupted < p.Total {
			return
		}
		last = time.Now()
		rate := 0.0
		if s := p.Elapsed.Seconds(); s > 0 {
			rate = float64(p.Done) / s
		}
		line := fmt.Sprintf("sessions %d/%d (%.0f%%) · %d failed · %d interrupted · calls %d (%d failed) · %.0f sessions/s · %s",
			p.Done, p.Total, 100*float64(p.Done)/float64(max(p.Total, 1)), p.Failed, p.Interrupted, p.Attempts, p.Failures, rate, p.Elapsed.Round(time.Millisecond))
		if tty {
			fmt.Fprint(std.Err, "\r\033[K"+line)
		} else {
			fmt.Fprintln(std.Err, line)
		}
	}
}
