package cli

import (
	"context"

	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
)

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
