package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
)

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
