package cli

import (
	"context"
	"errors"
	"flag"
	"slices"
	"strings"

	"github.com/buildlab/budge/dataset"
	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/study"
)

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
