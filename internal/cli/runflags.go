package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/buildlab/budge/provider/endpoint"
	"github.com/buildlab/budge/runner"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
)

// runCommand is what the two run commands differ in: their help and that
// of the shared flags.
type runCommand struct {
	name, about, examples string
	hint                  string // what to use instead of a positional argument
	model                 string // --model's help
	temperature           string // --temperature's default
	noTemp                string // the --temperature value that sends none
	tempHelp              string // --temperature's help
	// fixed lists the flags a resumed or replayed run takes from the
	// recorded run.
	fixed []string
}

// runFlags are the flags budge run and budge framing run share: the model
// and how it is asked, the output, the store and the network flags.
type runFlags struct {
	fs     *flag.FlagSet
	to     *study.RunOptions
	cmd    runCommand
	dir    *string
	temp   *string
	format *string
	wide   *bool
	quiet  *bool
	net    *netFlags
}

// flags makes the command's flag set with the shared run flags, whose
// defaults are the options' values; the command adds its own to r.fs.
func (c runCommand) flags(std IO, to *study.RunOptions) *runFlags {
	fs := newFlags(std, c.name, "[flags]", c.about, c.examples)
	r := &runFlags{fs: fs, to: to, cmd: c, dir: dirFlag(fs)}
	fs.StringVar(&to.Model, "model", to.Model, c.model)
	fs.Uint64Var(&to.Seed, "seed", to.Seed, "run seed: fixes the schedule and the per-session generation seeds")
	fs.IntVar(&to.Concurrency, "concurrency", to.Concurrency, "sessions in flight at once")
	r.temp = fs.String("temperature", c.temperature, c.tempHelp)
	fs.BoolVar(&to.StrictParse, "strict-parse", false,
		"read only replies that are one valid JSON object with exact ids, as asked: no repair of prose, reasoning blocks, fences or id spelling (the report still counts what tolerant parsing would read)")
	fs.IntVar(&to.MaxTokens, "max-tokens", to.MaxTokens, "max output tokens per call")
	fs.IntVar(&to.Retry.MaxAttempts, "max-attempts", to.Retry.MaxAttempts, "attempts per call for infrastructure failures (every attempt is stored)")
	fs.DurationVar(&to.Retry.BaseDelay, "retry-base", to.Retry.BaseDelay, "first retry delay; doubles per attempt with full jitter")
	r.format = formatFlag(fs, "format", "text", "summary format printed at the end: text, md, json", "text", "md", "json")
	r.wide = wideFlag(fs)
	r.quiet = fs.Bool("quiet", false, "no progress on stderr")
	r.net = addNetFlags(fs)
	return r
}

// parse parses a run command's arguments, which take no positional ones,
// into the options.
func (r *runFlags) parse(args []string) error {
	pos, err := parse(r.fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q (%s)", pos[0], r.cmd.hint)}
	}
	r.to.Temperature = nil
	if t := *r.temp; t != r.cmd.noTemp {
		v, err := strconv.ParseFloat(t, 64)
		if err != nil || v < 0 || v > 2 {
			or := ""
			if r.cmd.noTemp != "" {
				or = " or " + r.cmd.noTemp
			}
			return usageError{fmt.Sprintf("--temperature must be a number between 0 and 2%s, got %q", or, t)}
		}
		r.to.Temperature = &v
	}
	c := &r.to.Control
	return r.net.apply(r.fs, r.cmd.fixed, &c.NetOptions, &c.Concurrency, *r.dir, endpoint.FromOS())
}

// execute makes the run the flags ask for: a new run of plan, or a resume
// or a replay of a stored run of either protocol. It prints "run: <id>"
// once the run exists and progress unless --quiet; the first Ctrl-C sends
// no new call and stops those in flight after InterruptGrace, the second
// stops them at once (either way what was observed is stored). It renders the result, and an unfinished run is
// exit 3.
func (r *runFlags) execute(ctx context.Context, std IO, plan func() study.Plan) (study.Result, error) {
	st, err := store.OpenLocation(ctx, *r.dir, false)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	hard, drain, stop := runInterrupts(ctx, std)
	defer stop()
	c := &r.to.Control
	c.Drain = drain
	c.Started = printRunID(std, *r.format)
	c.Notice = noticePrinter(std)
	if !*r.quiet {
		c.Progress = progressPrinter(std)
		c.BatchNotify = batchPrinter(std)
	}
	if *r.net.detach {
		id, err := study.Detach(hard, st, plan())
		if err != nil {
			return nil, store.RedactError(err, *r.dir)
		}
		fmt.Fprintf(std.Err, "run %s is stored with its sessions as cells; advance it with: budge worker %s (on every machine that shares the store)\n", id, id)
		return nil, nil
	}
	res, err := r.net.dispatch(hard, st, *c, plan)
	if err != nil {
		return nil, store.RedactError(err, *r.dir)
	}
	if !*r.quiet {
		fmt.Fprintln(std.Err)
	}
	// A reader that went away (budge run | grep -q) takes nothing from the
	// run: it is stored, and its exit code still says how it ended.
	if err := res.Render(ctx, st, std.Out, textFormat(*r.format, *r.wide)); err != nil && !errors.Is(err, syscall.EPIPE) {
		return nil, err
	}
	return res, unfinished(res)
}

// unfinished is exit 3 for a run with failed or missing sessions.
func unfinished(res study.Result) error {
	run, h := res.Stored(), res.Head()
	if run.Status == store.RunComplete {
		return nil
	}
	how, cmd := res.Unfinished()
	msg := fmt.Sprintf("run %s is %s: %d failed and %d missing session(s); %s", run.ID, run.Status, h.Counts.Failed, h.Counts.Missing, how)
	if h.Net.StoppedBy != "" {
		msg += "; sessions stopped starting: " + h.Net.StoppedBy
	}
	if run.Status == store.RunInterrupted {
		msg += fmt.Sprintf("; continue it with: %s --resume %s", cmd, run.ID)
	}
	return codedError{ExitIncomplete, errors.New(msg)}
}

// printRunID prints "run: <id>" once a run exists: on standard output, except
// under --format json, whose standard output is the JSON report alone (the
// id is in it), so the line goes to standard error.
func printRunID(std IO, format string) func(id string) {
	w := std.Out
	if format == "json" {
		w = std.Err
	}
	return func(id string) { fmt.Fprintln(w, "run: "+id) }
}

// noticePrinter prints what the user should know as the run goes on, on a
// line of its own (after the progress line a terminal redraws).
func noticePrinter(std IO) func(string) {
	return func(s string) { fmt.Fprintf(std.Err, "\n%s\n", s) }
}

// progressPrinter redraws one line on a terminal and prints a line every few
// seconds elsewhere (CI logs).
func progressPrinter(std IO) func(runner.Progress) {
	tty := false
	if f, ok := std.Err.(*os.File); ok {
		if isTerminal(f) {
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
		line := fmt.Sprintf("sessions %d/%d (%.0f%%) · %d failed · %d interrupted · calls %d (%d failed) · %.0f sessions/s · %s%s",
			p.Done, p.Total, 100*float64(p.Done)/float64(max(p.Total, 1)), p.Failed, p.Interrupted, p.Attempts, p.Failures, rate, p.Elapsed.Round(time.Millisecond), eta(p))
		if tty {
			fmt.Fprint(std.Err, "\r\033[K"+line)
		} else {
			fmt.Fprintln(std.Err, line)
		}
	}
}

// eta is " · ETA 42s" for a run part done: the sessions left at the rate
// so far; empty before the first session ends and once none is left.
func eta(p runner.Progress) string {
	left := p.Total - p.Done - p.Interrupted
	if p.Done == 0 || left <= 0 || p.Elapsed <= 0 {
		return ""
	}
	d := time.Duration(float64(p.Elapsed) / float64(p.Done) * float64(left))
	switch {
	case d < 10*time.Second:
		d = d.Round(100 * time.Millisecond)
	default:
		d = d.Round(time.Second)
	}
	return " · ETA " + d.String()
}
