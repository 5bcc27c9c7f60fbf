package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/buildlab/budge/dataset"
	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/provider/endpoint"
	"github.com/buildlab/budge/report"
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
  budge framing run --data ../data/truthfulqa_formatted.jsonl --sample 200 --stratify category
  budge framing report latest --format md
  budge framing import ../shared/data/dialdefer/results/gpt-4o-mini
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

// listFlag collects a repeatable flag; with split set, each value may also
// be a comma-separated list.
type listFlag struct {
	vals  []string
	split bool
}

func (l *listFlag) String() string { return strings.Join(l.vals, ",") }
func (l *listFlag) Set(s string) error {
	if l.split {
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				l.vals = append(l.vals, p)
			}
		}
		return nil
	}
	l.vals = append(l.vals, s)
	return nil
}

func cmdFramingRun(ctx context.Context, std IO, args []string) error {
	def := study.DefaultFramingOptions()
	fs := newFlags(std, "framing run", "[flags]", `
Runs the DialDefer protocol: for every item, the four conditions C1-True,
C1-False, C2-Correct and C2-Incorrect, each in a fresh session, for every
template set × speaker label set × mitigation given. Prints "run: <id>", shows
progress on stderr, then the measures.

Data (--data): "sample" (built in: 48 questions in four domains and 6
naturalistic conflicts), a file or a directory. Recognised layouts: budge's
item JSONL, DialDefer's unified JSONL, the r/AIO experiment JSONL, TruthfulQA
CSV (790 or 817 questions), BBQ's original JSONL; any other CSV or JSONL with
--columns. A bad file stops the run before anything is written, with file,
line and reason.

Templates (--templates): built-in sets (budge, budge-plain, budge-formal) or
directories holding c1_statement.tmpl and c2_dialogue.tmpl with the
placeholders {question} {answer} {speaker1} {speaker2} (DialDefer's own are in
its prompts folder). Several are crossed. Speaker labels (--labels): built-in
sets (speakers, ab, qa, john-jane, jane-john, john-soroush, soroush-john,
llm-user, user-llm, gpt4o-llama, llama-gpt4o, ai-agents) or FIRST/SECOND;
several are crossed.

Mitigations (--mitigation, repeatable): be-honest, dehumanize (a system prompt
plus the "AI Agent 1/2" relabelling), or name=NAME,prompt=FILE,relabel=LABELS.
Each runs C2 under the mitigation and, with --mitigation-mode baseline-c1 (the
paper's choice, default), takes C1 from the unmitigated baseline; joint runs
both conditions under it.

Models: sim (the built-in simulated judge, default) or sim:PROFILE (default:
the planted worked example C1 60/80, C2 75/65, DDS +30; neutral; skeptic;
mitigable; overcorrects; messy) or sim:profile.yaml. The simulator is told the
answers of the run's items before the run (or --knowledge FILE), never with a
request.

Endpoints and execution are as for budge run: --base-url, --config (or
$BUDGE_CONFIG) named endpoints and prices, --call-timeout, --max-cost,
--cache, the retry policy, adaptive concurrency on rate limiting. --resume RUN
continues an interrupted run (completed sessions are not sent again);
--replay RUN re-runs a run from its recorded responses as a new run.`, `
  budge framing run
  budge framing run --data sample --model sim:neutral --resamples 2000
  budge framing run --data items.jsonl --templates ../prompts --labels speakers,user-llm
  budge framing run --data sample --mitigation be-honest --mitigation dehumanize
  budge framing run --data sample --challenge all --format md
  budge framing run --model openai-compatible:qwen2.5 --base-url http://127.0.0.1:8000/v1 --data sample
  budge framing run --model openai:gpt-4o-mini --max-cost 2 --cache --config budge.yaml
  budge framing run --resume latest          (after Ctrl-C, a crash or kill -9)
  budge framing run --replay RUN             (re-score recorded answers, no network)`)
	dir := dirFlag(fs)
	data := fs.String("data", def.Data, `items: "sample", a file or a directory`)
	dataFormat := fs.String("data-format", dataset.FormatAuto, "layout of the data files: auto, budge, dialdefer, aio, truthfulqa, bbq, mapped")
	columns := fs.String("columns", "", "column mapping for other CSV/JSONL: question=COL,correct=COL,incorrect=COL[,id=,context=,domain=,split=,meta=A|B]")
	domain := fs.String("domain", "", "domain name for mapped files without a domain column (default: the file name)")
	sampleN := fs.Int("sample", 0, "use a seeded sample of this many items (0: all)")
	stratify := fs.String("stratify", "", "stratify the sample by this metadata field (or domain)")
	sampleSeed := fs.Uint64("sample-seed", def.SampleSeed, "seed of the sample")
	templates := &listFlag{split: true}
	fs.Var(templates, "templates", "template set(s) to cross: built-in name or directory (repeatable; default budge)")
	labels := &listFlag{split: true}
	fs.Var(labels, "labels", "speaker label set(s) to cross (repeatable; default speakers)")
	mitigations := &listFlag{}
	fs.Var(mitigations, "mitigation", "a mitigation to run besides the unmitigated baseline (repeatable)")
	mode := fs.String("mitigation-mode", def.Design.Mode, "where C1 comes from for mitigated arms: baseline-c1 or joint")
	challenge := fs.String("challenge", "", "multi-turn challenge families, comma-separated or all: "+strings.Join(framing.ChallengeFamilies, ", "))
	challengeFile := fs.String("challenge-file", "", "JSON object of challenge messages by family (DialDefer's push_prompts.json works)")
	reverse := fs.Bool("reverse-perspective", false, "naturalistic items: the first speaker judges the second instead")
	noInvert := fs.Bool("no-invert-truth", false, "naturalistic items: take a label about the other speaker as the judgee's own")
	policy := fs.String("unparseable", def.Design.Policy, "unparseable answers: wrong (count as wrong, DialDefer) or exclude (drop the item)")
	strict := fs.Bool("strict-parse", false, "no near-JSON repair: only one valid JSON object counts as an answer")
	model := fs.String("model", def.Model, "model to test: sim, sim:PROFILE, sim:profile.yaml, or PROVIDER:MODEL as for budge run (openai, anthropic, ollama, openrouter, openai-compatible with --base-url, or a name from --config)")
	knowledge := fs.String("knowledge", "", "simulator answer table (JSONL of {question, correct, incorrect}); default: the run's own items")
	seed := fs.Uint64("seed", def.Seed, "run seed: fixes the schedule and the per-session generation seeds")
	conc := fs.Int("concurrency", def.Concurrency, "sessions in flight at once")
	temp := fs.String("temperature", "0", "sampling temperature sent with every request (0, as the paper used; recorded in the fingerprint; \"none\" sends none)")
	maxTok := fs.Int("max-tokens", def.MaxTokens, "max output tokens per call")
	attempts := fs.Int("max-attempts", def.Retry.MaxAttempts, "attempts per call for infrastructure failures (every attempt is stored)")
	backoff := fs.Duration("retry-base", def.Retry.BaseDelay, "first retry delay; doubles per attempt with full jitter")
	resamples := fs.Int("resamples", def.Bootstrap.Resamples, "bootstrap resamples for the intervals of the deltas and DDS")
	bootSeed := fs.Uint64("bootstrap-seed", def.Bootstrap.Seed, "bootstrap seed")
	format := fs.String("format", "text", "summary format printed at the end: text, md, json")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	nf := addNetFlags(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q (use --data to choose items)", pos[0])}
	}
	if *format != "text" && *format != "md" && *format != "json" {
		return usageError{fmt.Sprintf("--format must be text, md or json, got %q", *format)}
	}
	o := def
	o.Data, o.SampleN, o.Stratify, o.SampleSeed = *data, *sampleN, *stratify, *sampleSeed
	o.DataOptions.Format = *dataFormat
	if *columns != "" {
		m, err := dataset.ParseMapping(*columns)
		if err != nil {
			return usageError{err.Error()}
		}
		m.Domain = *domain
		o.DataOptions.Mapping = &m
	}
	o.Model, o.Knowledge, o.Seed, o.Concurrency, o.MaxTokens = *model, *knowledge, *seed, *conc, *maxTok
	o.Retry.MaxAttempts, o.Retry.BaseDelay = *attempts, *backoff
	o.Bootstrap.Resamples, o.Bootstrap.Seed = *resamples, *bootSeed
	o.Temperature = nil
	if *temp != "none" {
		t, err := strconv.ParseFloat(*temp, 64)
		if err != nil || t < 0 || t > 2 {
			return usageError{fmt.Sprintf("--temperature must be a number between 0 and 2 or none, got %q", *temp)}
		}
		o.Temperature = &t
	}
	if err := nf.apply(fs, fixedByFramingRun, &o.NetOptions, &o.Concurrency, *dir, endpoint.FromOS()); err != nil {
		return err
	}
	if o.Design, err = buildDesign(templates.vals, labels.vals, mitigations.vals, *mode, *challenge, *challengeFile, *policy); err != nil {
		return err
	}
	o.Design.Reverse, o.Design.InvertTruth, o.Design.Tolerant = *reverse, !*noInvert, !*strict
	st, err := openStore(*dir)
	if err != nil {
		return err
	}
	defer st.Close()
	hard, drain, stop := interruptible(ctx, std)
	defer stop()
	o.Drain = drain
	o.Started = func(id string) { fmt.Fprintln(std.Out, "run: "+id) }
	if !*quiet {
		o.Progress = progressPrinter(std)
	}
	res, err := nf.runFraming(hard, st, o)
	if err != nil {
		return err
	}
	if !*quiet {
		fmt.Fprintln(std.Err)
	}
	if err := res.Report().Render(std.Out, *format); err != nil {
		return err
	}
	if res.Run.Status != store.RunComplete {
		return codedError{ExitIncomplete, fmt.Errorf("run %s is %s: %d failed and %d missing session(s); their items are left out of the measures above",
			res.Run.ID, res.Run.Status, res.Manifest.Counts.Failed, res.Manifest.Counts.Missing)}
	}
	return nil
}

func buildDesign(templates, labels, mitigations []string, mode, challenge, challengeFile, policy string) (framing.Design, error) {
	d := framing.DefaultDesign()
	d.Mode, d.Policy = mode, policy
	if len(templates) > 0 {
		d.Templates = nil
		for _, t := range templates {
			ts, err := framing.OpenTemplates(t)
			if err != nil {
				return d, usageError{err.Error()}
			}
			d.Templates = append(d.Templates, ts)
		}
	}
	if len(labels) > 0 {
		d.Labels = nil
		for _, l := range labels {
			ls, err := framing.ParseLabels(l)
			if err != nil {
				return d, usageError{err.Error()}
			}
			d.Labels = append(d.Labels, ls)
		}
	}
	for _, m := range mitigations {
		mi, err := framing.ParseMitigation(m)
		if err != nil {
			return d, usageError{err.Error()}
		}
		d.Mitigations = append(d.Mitigations, mi)
	}
	if challenge != "" || challengeFile != "" {
		fams := strings.Split(challenge, ",")
		if challenge == "" {
			fams = []string{"all"}
		}
		cs, err := framing.ParseChallenges(fams, challengeFile)
		if err != nil {
			return d, usageError{err.Error()}
		}
		d.Challenges = cs
	}
	if errs := d.Validate(); len(errs) > 0 {
		return d, usageError{strings.Join(errs, "; ")}
	}
	return d, nil
}

func cmdFramingReport(ctx context.Context, std IO, args []string) error {
	fs := newFlags(std, "framing report", "[RUN ...] [flags]", `
Renders stored framing runs from what the store holds (items, design and
transcripts are re-scored). RUN is a run id, a unique prefix or "latest" (the
default). With several runs, each is rendered and then the item-level
agreement across them: items that flip (deference or skepticism) in all runs,
in some, in none. An imported run (budge framing import) is a run like any
other.`, `
  budge framing report
  budge framing report latest --format json -o report.json
  budge framing report RUN_A RUN_B --format md`)
	dir := dirFlag(fs)
	format := fs.String("format", "text", "text, md, json or html (one run)")
	out := fs.String("o", "", "write to this file instead of standard output")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if *format != "text" && *format != "md" && *format != "json" && !(*format == "html" && len(pos) <= 1) {
		return usageError{fmt.Sprintf("--format must be text, md or json (or html for one run), got %q", *format)}
	}
	if len(pos) == 0 {
		pos = []string{"latest"}
	}
	st, err := openStore(*dir)
	if err != nil {
		return err
	}
	defer st.Close()
	var reps []report.Framing
	var names []string
	var sums []*framing.Summary
	for _, ref := range pos {
		id, err := st.Resolve(ctx, ref)
		if err != nil {
			return err
		}
		res, err := study.LoadFraming(ctx, st, id)
		if err != nil {
			return err
		}
		reps = append(reps, res.Report())
		names = append(names, id+" ("+res.Manifest.Model+")")
		sums = append(sums, res.Summary)
	}
	return writeOut(std, *out, func(w io.Writer) error {
		if len(reps) == 1 && *format == "html" {
			return reps[0].HTML(w)
		}
		if len(reps) == 1 {
			return reps[0].Render(w, *format)
		}
		return report.FramingSet{Reports: reps, Agreement: framing.AgreementOf(names, sums)}.Render(w, *format)
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
  budge framing import ../shared/data/dialdefer/results/gpt-4o-mini
  budge framing import results/qwen --templates ../shared/data/dialdefer/prompts --model qwen-2.5-7b`)
	dir := dirFlag(fs)
	templates := fs.String("templates", "", "template directory the prompts were made with (default: DIR/../../prompts)")
	model := fs.String("model", "", "model that produced the results (default: the folder name)")
	allow := fs.Bool("allow-prompt-mismatch", false, "import even when recorded prompts differ from budge's rendering (listed in the report)")
	policy := fs.String("unparseable", def.Policy, "unparseable answers: wrong or exclude")
	strict := fs.Bool("strict-parse", false, "no near-JSON repair")
	resamples := fs.Int("resamples", def.Bootstrap.Resamples, "bootstrap resamples")
	bootSeed := fs.Uint64("bootstrap-seed", def.Bootstrap.Seed, "bootstrap seed")
	format := fs.String("format", "text", "report format: text, md, json")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"usage: budge framing import DIR"}
	}
	if *format != "text" && *format != "md" && *format != "json" {
		return usageError{fmt.Sprintf("--format must be text, md or json, got %q", *format)}
	}
	o := study.DefaultImportOptions(pos[0])
	o.Templates, o.Model, o.AllowPromptMismatch, o.Policy, o.Tolerant = *templates, *model, *allow, *policy, !*strict
	o.Bootstrap.Resamples, o.Bootstrap.Seed = *resamples, *bootSeed
	o.Started = func(id string) { fmt.Fprintln(std.Out, "run: "+id) }
	st, err := openStore(*dir)
	if err != nil {
		return err
	}
	defer st.Close()
	res, err := study.ImportFraming(ctx, st, o)
	if err != nil {
		return err
	}
	return res.Report().Render(std.Out, *format)
}

func cmdFramingExport(ctx context.Context, std IO, args []string) error {
	fs := newFlags(std, "framing export-training", "RUN|DATA --format sft|dpo [flags]", `
Writes fine-tuning data in DialDefer's formats from the training split only:
sft gives {"prompt", "completion"} with a one-token answer ("1" for the correct
speaker, "2" for the incorrect one), dpo gives {"prompt", "chosen",
"rejected"}. Two examples per item, rendered with the first template and label
set (of the run, or budge's defaults for DATA, or --templates/--labels).
Items of the evaluation (test) split are never written; items without a split
get one from --test-fraction and --split-seed, keyed by item id so an item
lands in the same split in every export.`, `
  budge framing export-training latest --format sft -o sft.jsonl
  budge framing export-training sample --format dpo --test-fraction 0.3`)
	dir := dirFlag(fs)
	format := fs.String("format", "", "sft or dpo")
	out := fs.String("o", "", "write to this file instead of standard output")
	frac := fs.Float64("test-fraction", 0.2, "share of unsplit items assigned to the test split (never exported)")
	splitSeed := fs.Uint64("split-seed", 42, "seed of the train/test assignment")
	templates := &listFlag{split: true}
	fs.Var(templates, "templates", "template set for DATA (default budge)")
	labels := &listFlag{split: true}
	fs.Var(labels, "labels", "label set for DATA (default speakers)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"usage: budge framing export-training RUN|DATA --format sft|dpo"}
	}
	if *format != framing.FormatSFT && *format != framing.FormatDPO {
		return usageError{fmt.Sprintf("--format must be sft or dpo, got %q", *format)}
	}
	if *frac < 0 || *frac >= 1 {
		return usageError{fmt.Sprintf("--test-fraction must be in [0, 1), got %v", *frac)}
	}
	var items []framing.Item
	var d framing.Design
	ref := pos[0]
	if _, statErr := os.Stat(ref); statErr == nil || ref == dataset.SampleName {
		if items, err = dataset.Open(ref, dataset.Options{}); err != nil {
			return fmt.Errorf("%w: %w", study.ErrInvalid, err)
		}
		if d, err = buildDesign(templates.vals, labels.vals, nil, framing.ModeBaseline, "", "", framing.PolicyWrong); err != nil {
			return err
		}
	} else {
		st, err := openStore(*dir)
		if err != nil {
			return err
		}
		defer st.Close()
		id, err := st.Resolve(ctx, ref)
		if err != nil {
			return err
		}
		res, err := study.LoadFraming(ctx, st, id)
		if err != nil {
			return err
		}
		items, d = res.Snapshot.Items, res.Snapshot.Design
	}
	dataset.AssignSplit(items, *frac, *splitSeed)
	recs, withheld, err := framing.TrainingRecords(&d, items, *format)
	if err != nil {
		return fmt.Errorf("%w: %w", study.ErrInvalid, err)
	}
	if err := writeOut(std, *out, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		for _, r := range recs {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	fmt.Fprintf(std.Err, "wrote %d %s records from %d training items; withheld %d evaluation (test) items\n", len(recs), *format, len(recs)/2, withheld)
	return nil
}

// isFramingRun reports whether the run named by the positional arguments is
// a framing run, so that `budge report` renders it too.
func isFramingRun(ctx context.Context, dir string, pos []string) bool {
	if len(pos) > 1 {
		return false
	}
	ref := "latest"
	if len(pos) == 1 {
		ref = pos[0]
	}
	st, err := openStore(dir)
	if err != nil {
		return false
	}
	defer st.Close()
	id, err := st.Resolve(ctx, ref)
	if err != nil {
		return false
	}
	r, err := st.GetRun(ctx, id)
	return err == nil && r.Protocol == "framing"
}
