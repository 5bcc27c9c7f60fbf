package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/buildlab/budge/dataset"
	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
)

const framingUsage = `Usage: budge framing <subcommand> [arguments] [flags]

The DialDefer protocol: every item is judged as a statement (C1: "is this
statement correct?") and as a speaker's reply in a dialogue (C2: "is Speaker 2
correct?"), with the question and answer text byte-identical, once with the
correct and once with the incorrect answer. budge reports accuracy per
condition, ΔCorrect, ΔIncorrect and the Dialogic Deference Score
(DDS = ΔCorrect − ΔIncorrect) per domain and as the mean over domains.

Subcommands:
  run              run the protocol on a data set and a model
  report           render stored framing runs (several: item-level agreement)
  import           turn DialDefer's released per-item results into a run
  export-training  write SFT or DPO fine-tuning data from the training split

Examples:
  budge framing run --data sample --model sim
  budge framing run --data truthfulqa.csv --sample 200 --stratify category
  budge framing report latest --format md
  budge framing import ./dialdefer/results/gpt-4o-mini
  budge framing export-training sample --format dpo --test-fraction 0.3 -o dpo.jsonl

Run "budge framing <subcommand> --help" for details.
`

func cmdFraming(ctx context.Context, std IO, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(std.Err, framingUsage)
		return usageError{"framing needs a subcommand: run, report, import or export-training"}
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprint(std.Out, framingUsage)
		return nil
	case "run":
		return cmdFramingRun(ctx, std, args[1:])
	case "report":
		return cmdFramingReport(ctx, std, args[1:])
	case "import":
		return cmdFramingImport(ctx, std, args[1:])
	case "export-training":
		return cmdFramingExport(ctx, std, args[1:])
	}
	fmt.Fprint(std.Err, framingUsage)
	return usageError{fmt.Sprintf("unknown framing subcommand %q", args[0])}
}

const framingRunAbout = `
Runs the DialDefer protocol: for every item, the four conditions C1-True,
C1-False, C2-Correct and C2-Incorrect, each in a fresh session, for every
template set × speaker label set × mitigation given. Prints "run: <id>", shows
progress on stderr, then the measures.

Data (--data): "sample" (built in: 48 questions in four domains and 6
naturalistic conflicts), a file or a directory. Recognised layouts: budge's
item JSONL, DialDefer's unified JSONL, the r/AIO experiment JSONL, TruthfulQA
CSV (790 or 817 questions), BBQ's original JSONL; any other CSV or JSONL with
--columns. A bad file stops the run before anything is written, with file, line
and reason. --sample N draws a seeded sample (--stratify FIELD spreads it
evenly over the field's values); --sample-per DATASET=N[:FIELD] gives one data
set (the items' domain) its own size and field, as in the paper's Table 8, e.g.
--sample-per advisorqa=300:label --sample-per amqa=240; the data sets it does
not name are drawn together by --sample/--stratify. Every report lists each
data set's sampling. Files are UTF-8 (a byte order mark is skipped) or UTF-16
with a byte order mark (decoded); any other bytes are refused with the file,
line and byte offset and an iconv hint, never guessed at. Template, system
prompt (prompt=FILE), --challenge-file, --knowledge and sim:FILE.yaml files are
read the same way.

Templates (--templates): built-in sets (budge, budge-plain, budge-formal) or
directories holding c1_statement.tmpl and c2_dialogue.tmpl with the
placeholders {question} {answer} {speaker1} {speaker2} (DialDefer's own are in
its prompts folder). Several are crossed. Naturalistic (dialogue) items are
rendered with each chosen set's n1_statement.tmpl and n2_dialogue.tmpl
({dialogue} {answer} {judger} {judgee} {context}); every built-in set has them,
and a directory without them is refused when the data has such items (never
rendered with another set's wording). Speaker labels (--labels): built-in sets
(speakers, ab, qa, john-jane, jane-john, john-soroush, soroush-john, llm-user,
user-llm, gpt4o-llama, llama-gpt4o, ai-agents) or FIRST/SECOND; several are
crossed.

Mitigations (--mitigation, repeatable): be-honest, dehumanize (a system prompt
plus the "AI Agent 1/2" relabelling), or name=NAME,prompt=FILE,relabel=LABELS.
The built-in prompts are budge's own wording of the published mitigations, not
the paper's text: to run the paper's, give its prompt file with prompt=FILE.
Every report shows each system prompt's source and sha256.
Each runs C2 under the mitigation and, with --mitigation-mode baseline-c1 (the
paper's choice, default), takes C1 from the unmitigated baseline; joint runs
both conditions under it.

Fixed C1 (--baseline-c1 RUN): the run asks only C2 and scores every arm
against the unmitigated C1 answers of RUN, a stored framing run on the same
items (the paper's Table 5 for SFT/DPO models: the fine-tuned model's C2
against the base model's C1). RUN must have the same items (matched by
content), template sets, label sets, naturalistic roles, parsing mode and
challenge families, and a C1 answer for every item; otherwise the run is
refused (exit 2) naming what differs. Without --data or any sampling flag the
run takes RUN's own items. The manifest, fingerprint and every
report name RUN and its fingerprint; a resume, replay or report re-reads
RUN's C1 from the store.

Models: sim (the built-in simulated judge, default) or sim:PROFILE (default:
the planted worked example C1 60/80, C2 75/65, DDS +30; neutral; skeptic;
mitigable; overcorrects; messy) or sim:profile.yaml. The simulator is told the
answers of the run's items before the run (or --knowledge FILE), never with a
request.

Endpoints and execution are as for budge run: --base-url, --config (or
$BUDGE_CONFIG) named endpoints and prices, --call-timeout, --max-cost,
--cache, the retry policy, adaptive concurrency on rate limiting. --resume RUN
continues an interrupted run (completed sessions are not sent again);
--replay RUN re-runs a run from its recorded responses as a new run.`

const framingRunExamples = `
  budge framing run
  budge framing run --data sample --model sim:neutral --resamples 2000
  budge framing run --data items.jsonl --templates ./my-templates --labels speakers,user-llm
  budge framing run --data ./dialdefer/benchmark/advisorqa_formatted.jsonl --sample-per advisorqa=100:label
  budge framing run --data sample --mitigation be-honest --mitigation dehumanize
  budge framing run --model openai-compatible:qwen-sft --base-url URL --baseline-c1 BASE_RUN   (C2 only, against BASE_RUN's C1)
  budge framing run --data sample --challenge all --format md
  budge framing run --model openai-compatible:qwen2.5 --base-url http://127.0.0.1:8000/v1 --data sample
  budge framing run --model openai:gpt-4o-mini --max-cost 2 --cache --config budge.yaml
  budge framing run --resume latest          (after Ctrl-C, a crash or kill -9)
  budge framing run --replay RUN             (re-score recorded answers, no network)`

// framingRun is budge framing run.
var framingRun = runCommand{name: "framing run", about: framingRunAbout, examples: framingRunExamples, hint: "use --data to choose items",
	model:       "model to test: sim, sim:PROFILE, sim:profile.yaml, or PROVIDER:MODEL as for budge run (openai, anthropic, ollama, openrouter, openai-compatible with --base-url, or a name from --config)",
	temperature: "0",
	noTemp:      "none",
	tempHelp:    "sampling temperature sent with every request (0, as the paper used; recorded in the fingerprint; \"none\" sends none)",
	fixed:       fixedByFramingRun,
}

func cmdFramingRun(ctx context.Context, std IO, args []string) error {
	o := study.DefaultFramingOptions()
	rf := framingRun.flags(std, &o.RunOptions)
	data, design := addDataFlags(rf.fs, &o), addDesignFlags(rf.fs, o.Design)
	rf.fs.StringVar(&o.Knowledge, "knowledge", "", "simulator answer table (JSONL of {question, correct, incorrect}); default: the run's own items")
	rf.fs.StringVar(&o.BaselineC1, "baseline-c1", "", "score this run's C2 against the unmitigated C1 of stored framing run RUN on the same items (asks only C2; e.g. a fine-tuned model against its base model)")
	rf.fs.IntVar(&o.Bootstrap.Resamples, "resamples", o.Bootstrap.Resamples, "bootstrap resamples for the intervals of the deltas and DDS")
	rf.fs.Uint64Var(&o.Bootstrap.Seed, "bootstrap-seed", o.Bootstrap.Seed, "bootstrap seed")
	if err := rf.parse(args); err != nil {
		return err
	}
	if err := data.mapping(&o.DataOptions); err != nil {
		return err
	}
	if err := data.samples(&o); err != nil {
		return err
	}
	var err error
	if o.Design, err = design.build(); err != nil {
		return err
	}
	o.Design.Tolerant = !o.StrictParse
	if o.BaselineC1 != "" && !anySet(rf.fs, "data", "data-format", "columns", "domain", "sample", "stratify", "sample-seed", "sample-per") {
		// Nothing says which items: the baseline's, exactly.
		o.ItemsFromBaseline = true
	}
	res, err := rf.execute(ctx, std, func() study.Plan { return o })
	if err != nil {
		return err
	}
	return unmeasured(res)
}

// anySet reports whether any of the named flags was given.
func anySet(fs *flag.FlagSet, names ...string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || slices.Contains(names, f.Name) })
	return set
}

// unmeasured is the invalid-result exit for a run that measured nothing
// it can stand behind.
func unmeasured(res study.Result) error {
	if res == nil {
		return nil // stored to be run by workers (--detach)
	}
	if v := res.Verdict(); v.Unmeasured != "" {
		return codedError{ExitUnmeasured, errors.New(v.Unmeasured)}
	}
	return nil
}

// dataFlags are budge framing run's flags for its items.
type dataFlags struct {
	columns, domain *string
	per             *listFlag
}

func addDataFlags(fs *flag.FlagSet, o *study.FramingOptions) *dataFlags {
	fs.StringVar(&o.Data, "data", o.Data, `items: "sample", a file or a directory`)
	fs.StringVar(&o.DataOptions.Format, "data-format", dataset.FormatAuto, "layout of the data files: auto, budge, dialdefer, aio, truthfulqa, bbq, mapped")
	d := &dataFlags{
		columns: fs.String("columns", "", "column mapping for other CSV/JSONL: question=COL,correct=COL,incorrect=COL[,id=,context=,domain=,split=,meta=A|B]"),
		domain:  fs.String("domain", "", "domain name for mapped files without a domain column (default: the file name)"),
		per: listVar(fs, "sample-per", true, "per-dataset sample, DATASET=N or DATASET=N:FIELD (stratified by FIELD), repeatable or comma-separated, "+
			"e.g. --sample-per advisorqa=300:label --sample-per amqa=240; DATASET is the items' domain; data sets not named are drawn together by --sample/--stratify"),
	}
	fs.IntVar(&o.SampleN, "sample", 0, "use a seeded sample of this many items (0: all)")
	fs.StringVar(&o.Stratify, "stratify", "", "stratify the sample by this metadata field (or domain); a field no item has is an error naming the fields that exist")
	fs.Uint64Var(&o.SampleSeed, "sample-seed", o.SampleSeed, "seed of the sample")
	return d
}

// samples reads --sample-per.
func (d *dataFlags) samples(o *study.FramingOptions) error {
	for _, v := range d.per.vals {
		s, err := dataset.ParseSampleSpec(v)
		if err != nil {
			return usageError{err.Error()}
		}
		o.SamplePer = append(o.SamplePer, s)
	}
	return nil
}

// mapping puts --columns and --domain into the data options.
func (d *dataFlags) mapping(o *dataset.Options) error {
	if *d.columns == "" {
		return nil
	}
	m, err := dataset.ParseMapping(*d.columns)
	if err != nil {
		return usageError{err.Error()}
	}
	m.Domain = *d.domain
	o.Mapping = &m
	return nil
}

// designFlags are budge framing run's flags for its design.
type designFlags struct {
	templates, labels, mitigations         *listFlag
	mode, challenge, challengeFile, policy *string
	reverse, noInvert                      *bool
}

func addDesignFlags(fs *flag.FlagSet, def framing.Design) *designFlags {
	return &designFlags{
		templates:     listVar(fs, "templates", true, "template set(s) to cross: built-in name or directory (repeatable; default budge)"),
		labels:        listVar(fs, "labels", true, "speaker label set(s) to cross (repeatable; default speakers)"),
		mitigations:   listVar(fs, "mitigation", false, "a mitigation to run besides the unmitigated baseline (repeatable)"),
		mode:          fs.String("mitigation-mode", def.Mode, "where C1 comes from for mitigated arms: baseline-c1 or joint"),
		challenge:     fs.String("challenge", "", "multi-turn challenge families, comma-separated or all: "+strings.Join(framing.ChallengeFamilies, ", ")),
		challengeFile: fs.String("challenge-file", "", "JSON object of challenge messages by family (DialDefer's push_prompts.json works)"),
		reverse:       fs.Bool("reverse-perspective", false, "naturalistic items: the first speaker judges the second instead"),
		noInvert:      fs.Bool("no-invert-truth", false, "naturalistic items: take a label about the other speaker as the judgee's own"),
		policy:        fs.String("unparseable", def.Policy, "unparseable answers: wrong (count as wrong, DialDefer) or exclude (drop the item)"),
	}
}

// build is the design the flags describe.
func (f *designFlags) build() (framing.Design, error) {
	d, err := study.BuildDesign(study.DesignChoice{Templates: f.templates.vals, Labels: f.labels.vals, Mitigations: f.mitigations.vals,
		Mode: *f.mode, Challenge: *f.challenge, ChallengeFile: *f.challengeFile, Policy: *f.policy})
	d.Reverse, d.InvertTruth = *f.reverse, !*f.noInvert
	return d, err
}

func cmdFramingReport(ctx context.Context, std IO, args []string) error {
	fs := newFlags(std, "framing report", "[RUN ...] [flags]", `
Renders stored framing runs from what the store holds (items, design and
transcripts are re-scored). RUN is a run id, a unique prefix or "latest" (the
default). With several runs, each is rendered and then the item-level
agreement across them: items that flip (deference or skepticism) in all runs,
in some, in none. Items are matched by content (question, both answers,
context, dialogue), not by id; the report says how many matched, how many each run holds alone,
and warns about ids that name different items in two runs. An imported run
(budge framing import) is a run like any other.`, `
  budge framing report
  budge framing report latest --format json -o report.json
  budge framing report RUN_A RUN_B --format md`)
	dir := dirFlag(fs)
	format := formatFlag(fs, "format", "text", "text, md, json or html (one run)", "text", "md", "json", "html")
	out := fs.String("o", "", "write to this file instead of standard output")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if *format == "html" && len(pos) > 1 {
		return usageError{fmt.Sprintf("--format must be text, md or json (or html for one run), got %q", *format)}
	}
	if len(pos) == 0 {
		pos = []string{"latest"}
	}
	return withStore(*dir, func(st *store.Store) error {
		runs, err := study.LoadFramingRuns(ctx, st, pos)
		if err != nil {
			return err
		}
		return writeOut(std, *out, func(w io.Writer) error { return runs.Render(ctx, st, w, *format) })
	})
}

func cmdFramingImport(ctx context.Context, std IO, args []string) error {
	def := study.DefaultImportOptions("")
	fs := newFlags(std, "framing import", "DIR [flags]", `
Imports DialDefer's released per-item results of one model (a folder of
*_all.jsonl / *_results.jsonl files) as a framing run: it checks that every
recorded prompt is byte-identical to what budge renders with the paper's
templates, stores every recorded conversation as a session, reads each raw
assistant reply with budge's own parser, and reports with budge's own
measures. Records whose conversation the release withheld (r/AIO) are scored
from the release's recorded answer and counted as such. Nothing is written if
a file is malformed or a prompt differs. Prints "run: <id>" and the report.`, `
  budge framing import ./dialdefer/results/gpt-4o-mini
  budge framing import ./dialdefer/results/qwen --templates ./dialdefer/prompts --model qwen-2.5-7b`)
	dir := dirFlag(fs)
	templates := fs.String("templates", "", "template directory the prompts were made with (default: DIR/../../prompts)")
	model := fs.String("model", "", "model that produced the results (default: the folder name)")
	allow := fs.Bool("allow-prompt-mismatch", false, "import even when recorded prompts differ from budge's rendering (listed in the report)")
	policy := fs.String("unparseable", def.Policy, "unparseable answers: wrong or exclude")
	strict := fs.Bool("strict-parse", false, "no near-JSON repair")
	resamples := fs.Int("resamples", def.Bootstrap.Resamples, "bootstrap resamples")
	bootSeed := fs.Uint64("bootstrap-seed", def.Bootstrap.Seed, "bootstrap seed")
	format := formatFlag(fs, "format", "text", "report format: text, md, json", "text", "md", "json")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"usage: budge framing import DIR"}
	}
	o := study.DefaultImportOptions(pos[0])
	o.Templates, o.Model, o.AllowPromptMismatch, o.Policy, o.Tolerant = *templates, *model, *allow, *policy, !*strict
	o.Bootstrap.Resamples, o.Bootstrap.Seed = *resamples, *bootSeed
	o.Started = printRunID(std, *format)
	return withNewStore(*dir, func(st *store.Store) error {
		res, err := study.ImportFraming(ctx, st, o)
		if err != nil {
			return err
		}
		return res.Report().Render(std.Out, *format)
	})
}

func cmdFramingExport(ctx context.Context, std IO, args []string) error {
	fs := newFlags(std, "framing export-training", "RUN|DATA --format sft|dpo [flags]", `
Writes fine-tuning data in DialDefer's formats (appendix K) from training items
only: sft gives {"prompt", "completion"} with a one-token answer ("1" for the
correct speaker, "2" for the incorrect one), dpo gives {"prompt", "chosen",
"rejected"}. Two answer-only examples per item, rendered with the first template
and label set (of the run, or budge's defaults for DATA, or
--templates/--labels); the template's JSON answer instruction is replaced by
"Answer with exactly one token: 1 or 2." --pressure-variants adds, per example,
one conversation per challenge family in which the user pushes back on the
right answer and the completion keeps it.

Never written, and counted per reason on standard error: items of an evaluation
split (the data's own, e.g. DialDefer's meta.split "test", or one assigned by
--test-fraction and --split-seed, keyed by item id), items of TruthfulQA and of
naturalistic r/AIO data (evaluation-only, as in the paper, unless
--allow-eval-datasets names them), and every item that any framing run in the
store evaluated, matched by content (question, context and both answers), not
by id. Exporting from a run therefore writes nothing of that run's items.

A DialDefer benchmark file (unified JSONL) whose record declares no train/test
meta.split (HaluEval's "all" is no split) is evaluation data: the released
benchmark files are the paper's held-out evaluation samples, so exporting them
writes nothing. --allow-eval-datasets benchmark lifts that rule: such items
are then split by --test-fraction like any other unsplit item. Other layouts
(budge's item JSONL, --columns files) without a split are split by
--test-fraction.`, `
  budge framing export-training ./dialdefer/benchmark --format sft -o sft.jsonl   (writes nothing: all evaluation data)
  budge framing export-training train.jsonl --format dpo --test-fraction 0.3 --pressure-variants all
  budge framing export-training ./dialdefer/benchmark --format sft --allow-eval-datasets benchmark --test-fraction 0.5`)
	dir := dirFlag(fs)
	format := formatFlag(fs, "format", "", "sft or dpo", framing.FormatSFT, framing.FormatDPO)
	out := fs.String("o", "", "write to this file instead of standard output")
	frac := fs.Float64("test-fraction", 0.2, "share of unsplit items assigned to the test split (never exported)")
	splitSeed := fs.Uint64("split-seed", 42, "seed of the train/test assignment")
	templates := listVar(fs, "templates", true, "template set for DATA (default budge)")
	labels := listVar(fs, "labels", true, "label set for DATA (default speakers)")
	allowEval := listVar(fs, "allow-eval-datasets", true, "evaluation-only data to train on anyway: truthfulqa, aio, benchmark (DialDefer benchmark files that declare no split; --test-fraction then splits them)")
	pressure := fs.String("pressure-variants", "", "challenge families to add as pressure variants per example, or all")
	pressureFile := fs.String("pressure-file", "", "challenge wording file for --pressure-variants (DialDefer's push_prompts.json works)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"usage: budge framing export-training RUN|DATA --format sft|dpo"}
	}
	if *frac < 0 || *frac >= 1 {
		return usageError{fmt.Sprintf("--test-fraction must be in [0, 1), got %v", *frac)}
	}
	ro, err := trainingOptions(*format, allowEval.vals, *pressure, *pressureFile)
	if err != nil {
		return err
	}
	o := study.TrainingExport{Source: pos[0], Templates: templates.vals, Labels: labels.vals, TestFraction: *frac, SplitSeed: *splitSeed, Records: ro}
	var t *study.Training
	export := func(st *store.Store) (err error) {
		t, err = study.ExportTraining(ctx, st, o)
		return err
	}
	err = withStore(*dir, export)
	if errors.Is(err, store.ErrNoStore) && study.TrainingFromData(o.Source) {
		err = export(nil) // a data set needs no store: nothing is evaluated yet
	}
	if err != nil {
		return err
	}
	if err := writeJSONL(std, *out, slices.Values(t.Records)); err != nil {
		return err
	}
	fmt.Fprintln(std.Err, t)
	return nil
}

// trainingOptions checks the export-training flags that shape the records.
func trainingOptions(format string, allowEval []string, pressure, pressureFile string) (framing.TrainingOptions, error) {
	o := framing.TrainingOptions{Format: format}
	for _, a := range allowEval {
		a = strings.ToLower(strings.TrimSpace(a))
		if a != framing.EvalTruthfulQA && a != framing.EvalAIO && a != framing.EvalBenchmark {
			return o, usageError{fmt.Sprintf("--allow-eval-datasets: %q is not an evaluation-only data set (truthfulqa, aio, benchmark)", a)}
		}
		o.AllowEval = append(o.AllowEval, a)
	}
	if pressure == "" {
		if pressureFile != "" {
			return o, usageError{"--pressure-file needs --pressure-variants"}
		}
		return o, nil
	}
	cs, err := framing.ParseChallenges(strings.Split(pressure, ","), pressureFile)
	if err != nil {
		return o, usageError{"--pressure-variants: " + err.Error()}
	}
	o.Pressure = cs
	return o, nil
}
