package cli

import (
	"context"
	"fmt"
	"strconv"

	"github.com/buildlab/budge/provider/endpoint"
	"github.com/buildlab/budge/study"
)

func cmdJudge(ctx context.Context, std IO, args []string) error {
	o := study.DefaultJudgeOptions()
	fs := newFlags(std, "judge", "RUN [flags]", `
Codes what a run's models wrote with an LLM judge, and audits the judge.

For a framing run, every deference and skepticism flip (budge export --format
flips) gets one code of the flip-reasoning codebook: internal-incoherence,
reasoning-answer-mismatch, social-framing, speaker-authority,
reasoning-error, shifted-standard or unexplained. The judge reads the
question, the answer judged and both judgments' reasoning, labelled C1 and
C2, and is asked once with C1 first and once with C2 first.

For a pressure run, the stated justification of every session in the run's
review sample (every failure when the run has no review) gets one of the
reviewers' reason codes: availability-record, unsupported-authority,
identity, invented-exception, uncertain, pending. By default the judge is
blinded as the reviewers' first pass is: the identity field and labels are
masked (--unblinded shows them).

Each task is asked --repeats times in each order. The report gives the codes
per task (the majority of its judgments) with counts by flip kind or failure
type, order-swap agreement (same code with either text first), repeat
stability (every repeat the same code), each with numerator and denominator,
and, once both reviewers of a pressure run have finished, the share of the
same code and Cohen's kappa with its 95% interval against each reviewer. It
warns when kappa is below 0.6 (under "substantial" agreement), when
order-swap agreement or repeat stability is below 80%, and when judgments have
no code.

The judge's calls are a run of their own ("run: <id>"): stored, resumable
(--resume), cached (--cache), re-reported with budge report. --judge takes
any model budge run's --model takes; sim is the simulated coder (sim:coder,
sim:coder-exact with no noise, sim:coder-noisy, sim:coder-positional which
reads whichever text comes first as the one that flipped).`, `
  budge framing run --model sim && budge judge latest
  budge judge 20261204-101500-a1b2c3 --judge openai:gpt-4o-mini --repeats 3 --cache
  budge judge RUN --judge sim:coder-exact --repeats 3
  budge report JUDGE_RUN --format json | jq .order_swap_agreement
  budge judge --resume 20261204-102000-d4e5f6`)
	r := &runFlags{fs: fs, to: &o.RunOptions, dir: dirFlag(fs),
		cmd: runCommand{name: "judge", hint: "name the run to code: budge judge RUN"}}
	fs.StringVar(&o.Model, "judge", o.Model, "the judge model: sim (the simulated coder), sim:coder-exact, openai:MODEL, anthropic:MODEL, ...")
	fs.IntVar(&o.Repeats, "repeats", o.Repeats, "times each task is asked in each order (repeat stability needs 2 or more)")
	fs.BoolVar(&o.Unblinded, "unblinded", false, "show the judge the identity labels a pressure run showed its model (default: masked)")
	fs.Uint64Var(&o.Seed, "seed", o.Seed, "judge run seed: fixes the schedule and the per-call generation seeds")
	fs.IntVar(&o.Concurrency, "concurrency", o.Concurrency, "judge calls in flight at once")
	temp := fs.String("temperature", "", "judge sampling temperature (default: the provider's)")
	fs.IntVar(&o.MaxTokens, "max-tokens", o.MaxTokens, "max output tokens per judge call")
	fs.IntVar(&o.Retry.MaxAttempts, "max-attempts", o.Retry.MaxAttempts, "attempts per call for infrastructure failures (every attempt is stored)")
	r.format = formatFlag(fs, "format", "text", "report format: text, md, json", "text", "md", "json")
	r.wide = wideFlag(fs)
	r.quiet = fs.Bool("quiet", false, "no progress on stderr")
	r.net = addNetFlags(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 1:
		return usageError{fmt.Sprintf("budge judge takes one run, got %d", len(pos))}
	case len(pos) == 1:
		o.Source = pos[0]
	case *r.net.resume == "" && *r.net.replay == "":
		return usageError{"name the run to code: budge judge RUN (or continue a judge run with --resume)"}
	}
	if *temp != "" {
		v, err := strconv.ParseFloat(*temp, 64)
		if err != nil || v < 0 || v > 2 {
			return usageError{fmt.Sprintf("--temperature must be a number between 0 and 2, got %q", *temp)}
		}
		o.Temperature = &v
	}
	if o.Repeats < 1 {
		return usageError{fmt.Sprintf("--repeats must be at least 1, got %d", o.Repeats)}
	}
	fixed := []string{"judge", "repeats", "unblinded", "seed", "temperature", "max-tokens", "max-attempts"}
	if err := r.net.apply(fs, fixed, &o.NetOptions, &o.Concurrency, *r.dir, endpoint.FromOS()); err != nil {
		return err
	}
	_, err = r.execute(ctx, std, func() study.Plan { return o })
	return err
}
