package cli

import (
	"context"
	"fmt"
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
