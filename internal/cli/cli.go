// Package cli is budge's command line: it turns flags into options for the
// library packages and results into output and exit codes, and does nothing
// else.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"syscall"

	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
)

// IO bundles the standard streams.
type IO struct {
	In       io.Reader
	Out, Err io.Writer
}

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, std IO, args []string) error
}

func commands() []command {
	return []command{
		{"run", "run the pressure-and-correction protocol on a deck and a model", cmdRun},
		{"framing", "the DialDefer protocol: statement vs dialogue framing, DDS (run, report, import, export-training)", cmdFraming},
		{"worker", "advance runs stored as cells (budge run --detach, or any run on PostgreSQL), as one of many workers", cmdWorker},
		{"report", "render a stored run's measures (text, md, json, html)", cmdReport},
		{"view", "browse runs, sessions, pairs and reviews in a local web viewer", cmdView},
		{"review", "the blinded two-reviewer explanation review: sample, token, status, export", cmdReview},
		{"judge", "code a run's flips or explanations with an LLM judge, and audit it (order swap, repeats, kappa vs reviewers)", cmdJudge},
		{"export", "write a run's sessions as JSONL or CSV, a framing run's flip list, or the run log", cmdExport},
		{"compare", "compare runs before and after an intervention on the same deck, with paired tests and verdicts", cmdCompare},
		{"calibrate", "check the instrument: planted effects, interval coverage, false positives, power", cmdCalibrate},
		{"deck", "write, check and freeze decks: init, check, list, schema, freeze", cmdDeck},
		{"show", "print one session's transcript and attempts, or an artifact", cmdShow},
		{"selftest", "run the answer checker on its hand-written fixtures", cmdSelftest},
		{"runs", "list stored runs", cmdRuns},
		{"migrate", "bring a store's database to this budge's schema version", cmdMigrate},
		{"sim", "serve the simulator over an OpenAI-compatible HTTP API, with fault injection", cmdSim},
		{"version", "print budge's version and the commit it was built from (also budge --version)", cmdVersion},
	}
}

const mainUsage = `budge measures how easily an LLM product's correct decision can be changed:
by unsupported pressure (authority, emotion, false consensus) and by verified
corrections, with identity labels swapped and presentation order counterbalanced.

Usage:
  budge <command> [arguments] [flags]

Commands:
%s
Examples:
  budge run                                  # built-in discovery deck on the built-in simulator
  budge run --model sim:stubborn --seed 7 --concurrency 32
  budge report latest --format md
  budge export latest --format jsonl > log.jsonl
  budge deck check discovery
  budge run --lang zh                        # the built-in Chinese discovery deck
  budge deck init ./my-deck                  # start a deck of your own

Runs are stored where --store names: a directory (./budge-runs unless
$BUDGE_STORE or $BUDGE_DIR names another), or a postgres:// URL, a
PostgreSQL database several machines share (--dir is an alias). Every command
that creates a run prints "run: <id>" on a line of its own (on stderr under
--format json, whose stdout is the JSON alone); "latest" is
accepted wherever a run id is. Run "budge <command> --help" for details.
`

// Main is the whole command line: it returns the process exit code.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	streams := IO{In: stdin, Out: stdout, Err: stderr}
	cmds := commands()
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version") {
		args = append([]string{"version"}, args[1:]...)
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) > 1 {
			return Main(ctx, []string{args[1], "--help"}, stdin, stdout, stderr)
		}
		var b strings.Builder
		for _, c := range cmds {
			fmt.Fprintf(&b, "  %-10s %s\n", c.name, c.summary)
		}
		fmt.Fprintf(stdout, mainUsage, b.String())
		if len(args) == 0 {
			return ExitInvalid
		}
		return ExitOK
	}
	for _, c := range cmds {
		if c.name == args[0] {
			err := c.run(ctx, streams, args[1:])
			if errors.Is(err, flag.ErrHelp) || errors.Is(err, syscall.EPIPE) {
				// Help, or a reader of the output that stopped reading
				// (| head): nothing failed.
				return ExitOK
			}
			if msg := errorMessage(err); msg != "" {
				// An error may quote an endpoint, a deck or a data file.
				fmt.Fprintln(stderr, "budge "+c.name+":", report.TerminalSafe(msg))
			}
			return exitCode(err)
		}
	}
	fmt.Fprintf(stderr, "budge: unknown command %q; run budge --help for the list\n", args[0])
	return ExitInvalid
}

// newFlags makes a FlagSet whose usage text has a description and examples.
func newFlags(std IO, name, usage, description, examples string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(std.Err)
	fs.Usage = func() {
		fmt.Fprintf(std.Out, "Usage: budge %s %s\n\n%s\n\nFlags:\n", name, usage, strings.TrimSpace(description))
		fs.SetOutput(std.Out)
		printDefaults(fs)
		fs.SetOutput(std.Err)
		fmt.Fprintf(std.Out, "\nExamples:\n%s\n", strings.TrimRight(examples, "\n"))
	}
	return fs
}

// parse parses flags that may come before, between or after positional
// arguments, and returns the positional ones.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if err == flag.ErrHelp {
				return nil, err
			}
			return nil, usageError{err.Error()}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, checkChoices(fs)
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), checkChoices(fs)
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// oneRun is the one run named in pos, "latest" without one.
func oneRun(pos []string) (string, error) {
	switch len(pos) {
	case 0:
		return "latest", nil
	case 1:
		return pos[0], nil
	}
	return "", usageError{fmt.Sprintf("one run at a time, got %d", len(pos))}
}

// flagSet reports whether the command line set the named flag.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// dirFlag adds --store, and --dir as its alias, which set where runs are
// stored, and returns that location: a directory (SQLite, the embedded
// default) or a postgres:// URL, scheme in any case (a PostgreSQL database
// that several machines share). The default is $BUDGE_STORE, then
// $BUDGE_DIR, then ./budge-runs; the help states it once, in the usage
// text. The location is only ever shown with its password redacted.
func dirFlag(fs *flag.FlagSet) *string {
	loc := os.Getenv("BUDGE_STORE")
	if loc == "" {
		loc = os.Getenv("BUDGE_DIR")
	}
	if loc == "" {
		loc = "budge-runs"
	}
	fs.Var(storeFlag{&loc}, "store", "`LOCATION` of the runs: a directory, or a postgres:// URL (default $BUDGE_STORE, else $BUDGE_DIR, else budge-runs)")
	fs.Var(storeFlag{&loc}, "dir", "`LOCATION`: the same as --store (an alias kept for older scripts)")
	for _, name := range []string{"store", "dir"} {
		// The usage text states the default; the flag package would
		// state it again as "(default budge-runs)".
		fs.Lookup(name).DefValue = ""
	}
	return &loc
}

// storeFlag sets a store location.
type storeFlag struct {
	loc *string
}

func (f storeFlag) String() string {
	if f.loc == nil {
		return ""
	}
	return store.Redact(*f.loc)
}

func (f storeFlag) Set(v string) error {
	*f.loc = v
	return nil
}

// withStore opens the existing store at loc for f and closes it after: a
// command opens it once and passes it down. A command that only reads runs
// never creates a store directory, so a mistyped --dir is an error.
//
// The store is opened read-only and never migrated (store.OpenReader), so
// a store on a read-only filesystem can be read.
func withStore(loc string, f func(st *store.Store) error) error {
	st, err := store.OpenReader(context.Background(), loc, false)
	if err != nil {
		return err
	}
	defer st.Close()
	return store.RedactError(f(st), loc)
}

// withExistingStore is withStore for commands that write to an existing
// store (review): opened for writing, and migrated.
func withExistingStore(loc string, f func(st *store.Store) error) error {
	return useStore(loc, true, f)
}

// withNewStore is withStore for commands that create runs or freezes: the
// store is made when loc has none.
func withNewStore(loc string, f func(st *store.Store) error) error {
	return useStore(loc, false, f)
}

func useStore(loc string, existing bool, f func(st *store.Store) error) error {
	st, err := store.OpenLocation(context.Background(), loc, existing)
	if err != nil {
		return err
	}
	defer st.Close()
	return store.RedactError(f(st), loc)
}

// withRun opens the store at dir and loads the one run pos names
// ("latest" without one), of either protocol, for f.
func withRun(ctx context.Context, dir string, pos []string, f func(st *store.Store, res study.Result) error) error {
	ref, err := oneRun(pos)
	if err != nil {
		return err
	}
	return withStore(dir, func(st *store.Store) error {
		res, err := loadVerified(ctx, st, ref)
		if err != nil {
			return err
		}
		return f(st, res)
	})
}

// loadVerified loads a run for a report, an export or a transcript, after
// checking every artifact it stored against its sha256: what is rendered
// from a damaged run says so instead of going on.
func loadVerified(ctx context.Context, st *store.Store, ref string) (study.Result, error) {
	res, err := study.Load(ctx, st, ref)
	if err != nil {
		return nil, err
	}
	return res, st.VerifyArtifacts(ctx, res.Head().RunID)
}

// writeOut writes to stdout, or atomically to a file when path is set, so a
// failed render never leaves half a file.
func writeOut(std IO, path string, render func(w io.Writer) error) error {
	if path == "" || path == "-" {
		return render(std.Out)
	}
	// Streamed to a file beside path and renamed over it: a large export
	// is never held in memory, and a failed one leaves path as it was.
	return store.StreamFileAtomic(path, render)
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
