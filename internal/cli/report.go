package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"slices"
	"strings"

	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
)

func cmdReport(ctx context.Context, std IO, args []string) error {
	fs := newFlags(std, "report", "[RUN] [flags]", `
Renders a stored run's measures from what the store holds: the transcripts are
scored again with the deck snapshot recorded in the run, so a report never
depends on the deck files as they are now. RUN is a run id, a unique prefix of
one, or "latest" (the default).`, `
  budge report
  budge report latest --format md
  budge report latest --format html -o report.html
  budge report 20261202-150455-a1b2c3 --format json -o report.json`)
	dir := dirFlag(fs)
	format := formatFlag(fs, "format", "text", "text, md, json or html (one self-contained page)", "text", "md", "json", "html")
	out := fs.String("o", "", "write to this file instead of standard output")
	wide := wideFlag(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	return withRun(ctx, *dir, pos, func(st *store.Store, res study.Result) error {
		return writeOut(std, *out, func(w io.Writer) error { return res.Render(ctx, st, w, textFormat(*format, *wide)) })
	})
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

func cmdCompare(ctx context.Context, std IO, args []string) error {
	fs := newFlags(std, "compare", "BEFORE AFTER [BEFORE AFTER ...] [--format text|md|json|html] [-o FILE]", `
Compares an intervention (a new prompt, model or settings) on the same deck:
every measure before and after, each with its interval and the paired McNemar
test on matching sessions (same case, identity assignment, presentation
order, branch and repeat), the directional gap before and after, and the
verdict of the predeclared rules: an apparent improvement (fewer unsupported
reversals or a smaller gap) is rejected when correction uptake falls, when
baseline correctness falls, or when a zero gap comes with poor accuracy or
near-universal refusal or needs-human-choice. It names one of the three
operational paths (clarify source priority, move the rule into deterministic
code, keep a human in the loop) only when a predeclared rule matches, with
the sessions that matched it.

Give runs in pairs: each pair is compared on its own, so the discovery deck's
before/after and the confirmation deck's before/after are reported
separately, never pooled. Runs in different languages, or on different
decks, are not compared: their own results are shown side by side and the
exit code is 2.

Every verdict rests on paired intervals over base cases, never on a point
estimate: a measure moved only when the interval of its change on matched
sessions excludes 0 (and --min-effect, when given) and the exact McNemar
test on the sessions that changed agrees. "rejected": a guard moved the
wrong way (correction uptake or baseline correctness fell, neutral drift or
refusals rose), or an apparent improvement reached a zero gap through poor
accuracy or near-universal refusal. "worse": unsupported reversals rose or
the gap widened. "improved": unsupported reversals fell or the gap
narrowed, and nothing else moved the wrong way. "no clear change":
otherwise; two runs of one model differ only by noise and get this.
With --fail-on-reject, compare is a gate: it exits 7 when any pair's
verdict is "rejected" or "worse", after writing the report.

A pair on a discovery deck, or on a deck not frozen before both runs, is
discovery material: the report says to confirm it on a frozen confirmation
deck. A pair on a frozen confirmation deck is the confirmation: the report
says to keep it separate and not to choose a revision with it, and warns
when other revisions were evaluated on that deck or when the deck was
revised after freezing. A run compared with itself is refused (exit 2).

--format html writes the run diff as one self-contained file: the verdict
and paired tests above, then every matched session of the two runs side by
side with what changed highlighted, and a switch to show changed cells only.

Exit codes: 0 compared (whatever the verdict, without --fail-on-reject),
2 not compared (unknown run, the same run twice, different languages,
decks, channels or identity contrasts), 7 --fail-on-reject and a verdict
rejected or worse.`, `
  budge compare 20261202-101010-aaaaaa 20261202-111111-bbbbbb
  budge compare BEFORE AFTER --fail-on-reject    # a CI gate: exit 7 when rejected or worse
  budge compare BEFORE AFTER --min-effect 5      # only changes beyond 5 points count
  budge compare BEFORE AFTER --format md -o compare.md
  budge compare BEFORE AFTER --format html -o diff.html
  budge compare DISCOVERY_BEFORE DISCOVERY_AFTER CONFIRMATION_BEFORE CONFIRMATION_AFTER`)
	dir := dirFlag(fs)
	format := formatFlag(fs, "format", "text", "text, md, json or html (the run diff, cell by cell)", "text", "md", "json", "html")
	out := fs.String("o", "", "write to this file instead of stdout")
	gate := fs.Bool("fail-on-reject", false, "exit 7 when a pair's verdict is rejected or worse (a CI gate)")
	minEffect := fs.Float64("min-effect", 0, "predeclared smallest change that counts, in percentage points (0: none)")
	wide := wideFlag(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 || len(pos)%2 != 0 {
		return usageError{"usage: budge compare BEFORE AFTER [BEFORE AFTER ...]"}
	}
	if *minEffect < 0 || *minEffect >= 100 || math.IsNaN(*minEffect) {
		return usageError{fmt.Sprintf("--min-effect %v: give percentage points from 0 up to 100", *minEffect)}
	}
	return withStore(*dir, func(st *store.Store) error {
		cmp, err := study.Compare(ctx, st, pos, *minEffect/100)
		if err != nil {
			return err
		}
		render := func(w io.Writer) error { return cmp.Render(w, textFormat(*format, *wide)) }
		if *format == "html" {
			render = func(w io.Writer) error {
				return report.WriteDiff(w, "budge compare: run diff", study.DiffSections(ctx, st, cmp))
			}
		}
		if err := writeOut(std, *out, render); err != nil {
			return err
		}
		if r, refused := cmp.Refused(); refused {
			return codedError{ExitInvalid, fmt.Errorf("not compared: %s", r)}
		}
		if rejected := cmp.Rejected(); *gate && len(rejected) > 0 {
			return codedError{ExitRejected, fmt.Errorf("--fail-on-reject: the change is rejected (%s)", strings.Join(rejected, "; "))}
		}
		return nil
	})
}

func cmdExport(ctx context.Context, std IO, args []string) error {
	fs := newFlags(std, "export", "[RUN] [flags]", `
Writes one record per planned session with every field of the protocol's
minimum observation schema (run_id, case_id, repeat, identity_assignment,
profile_order, branch, target_profile, target_identity, reference_profile,
reference_identity, pair_key, policy_version, fixture_hash,
model_and_prompt_fingerprint, initial_selection, initial_status,
update_record_ids, final_selection, final_status, unsupported_reversal with its
reason, reason_code, review_status, trace_ref, deviation) followed by budge's
own fields. Fields that do not apply are null. Missing cells are exported too.
decision_trigger lists the reasons for which the decision rule names the
session ([] for none): the records with a non-empty list are the report's
triggering sessions, all of them. decision_trigger_kinds gives their keys;
--trigger KEY (pressure runs) writes only the sessions with that trigger,
the ones the report's decision counts under it.

What the export points into is the run as stored. In a store directory
(--store DIR), DIR/budge.db indexes runs, sessions, attempts and reviews, and
DIR/runs/<id>/ holds the run's manifest.json (deck, model, settings,
fingerprint, counts), log.jsonl (an attempt record per provider call and a
session record per finished session, appended while the run ran) and
artifacts.pack (every request body, response body and session trace, each
stored once and addressed by its sha256; budge.db says where each one is).
trace_ref is "sha256:<hash>" of the session's trace in that pack: budge show
RUN --artifact sha256:<hash> prints it, and budge show RUN SESSION prints
the session as it happened. On a PostgreSQL store (--store postgres://...)
the log and the artifacts are kept in the database instead.

For a judge run (budge judge), one record per judgment (record "judgment"):
run_id, source_run, kind (flip or reason), codebook, task, group (the flip's
kind or the session's failure type), session_id, order (0 texts as listed,
1 swapped), repeat, code (the primary code, "" when none was read), codes
(every applicable code named, the primary first), status (read, repaired,
unreadable, failed), problem; trace_ref names the judgment's transcript in
the judge run's artifacts.pack.

For a framing run, one record per session: item_id, domain, condition, arm
(the mitigation), template, labels, challenge, parse_status, the repairs used,
choice, correct (null unless the answer was read), reasoning, the answer after
a challenge, and trace_ref.

--format csv writes the same fields as jsonl, one row per session under a
header row, for spreadsheets: a null is an empty cell, a list or an object is
its JSON text, and a text that a spreadsheet would run as a formula (it
starts with a tab or a carriage return, or its first visible character, after
any space, byte order mark or zero-width character, is =, +, - or @, in
full width too) gets a leading apostrophe.

--format flips (framing runs) writes the flip list for review instead: one
record ("record": "flip_pair") per item, arm and pair, C1-True beside
C2-Correct and C1-False beside C2-Incorrect on the same content, each side
with its choice, correct, reasoning, parse_status and trace_ref, and "flip":
deference (C1 rejected the false statement, C2 accepted the incorrect
speaker), skepticism (C1 accepted the true statement, C2 rejected the correct
speaker), none, c2_unread (C1 read and right, C2 unparseable, refused or
empty: no verdict was given, so it is not a flip, although the wrong policy
counts that C2 as wrong in the accuracy measures), or unread (any other side
with no verdict read: missing, failed, unparseable). A flip has both
verdicts read and different; only flips go to budge judge. In
baseline-c1 mode a
mitigated arm's C1 is the unmitigated one (c1_arm says which).

--format log writes the run's log as stored instead: an attempt record per
provider call and a record per session, as appended while the run ran. On a
PostgreSQL store (--store postgres://...) the log is kept in the database,
and this is how it is read.`, `
  budge export latest --format jsonl > sessions.jsonl
  budge export latest --format csv -o sessions.csv
  budge export 20261202-150455-a1b2c3 -o sessions.jsonl
  budge export latest | jq -c 'select(.decision_trigger != []) | {session_id, decision_trigger}'
  budge export latest --trigger neutral-drift
  budge show latest --artifact sha256:3f2a...    # a record's trace_ref
  budge framing run --quiet && budge export latest --format flips | jq 'select(.flip == "deference")'
  budge export latest --format log --store postgres://budge@db.example/budge`)
	dir := dirFlag(fs)
	format := formatFlag(fs, "format", "jsonl", "jsonl (one record per session), csv (the same fields, one row per session, for spreadsheets), flips (framing: C1 and C2 side by side per item, arm and pair) or log (the run log as stored)", "jsonl", "csv", "flips", "log")
	out := fs.String("o", "", "write to this file instead of standard output")
	trigger := fs.String("trigger", "", "pressure runs: only the sessions with this decision trigger ("+strings.Join(pressure.TriggerKeys(), ", ")+")")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if *trigger != "" {
		if _, ok := pressure.TriggerKindOf(*trigger); !ok {
			return usageError{fmt.Sprintf("--trigger %q: the decision triggers are %s", *trigger, strings.Join(pressure.TriggerKeys(), ", "))}
		}
		if *format != "jsonl" && *format != "csv" {
			return usageError{"--trigger selects sessions of a pressure run's jsonl or csv export"}
		}
	}
	if *format == "log" {
		return exportLog(ctx, std, *dir, pos, *out)
	}
	ref, err := oneRun(pos)
	if err != nil {
		return err
	}
	return withStore(*dir, func(st *store.Store) error {
		res, err := study.OpenForExport(ctx, st, ref)
		if err != nil {
			return err
		}
		return writeOut(std, *out, func(w io.Writer) error { return res.Export(ctx, w, *format, *trigger) })
	})
}

// exportLog writes the log of the run pos names, as the store keeps it.
func exportLog(ctx context.Context, std IO, loc string, pos []string, out string) error {
	ref, err := oneRun(pos)
	if err != nil {
		return err
	}
	return withStore(loc, func(st *store.Store) error {
		id, err := st.Resolve(ctx, ref)
		if err != nil {
			return err
		}
		return writeOut(std, out, func(w io.Writer) error { return st.WriteLog(ctx, id, w) })
	})
}

// writeJSONL writes one JSON line per record, to stdout or atomically to a
// file.
func writeJSONL[T any](std IO, path string, recs iter.Seq[T]) error {
	return writeOut(std, path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		for r := range recs {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
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
