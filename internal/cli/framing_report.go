package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
)

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
