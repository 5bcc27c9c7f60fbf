package cli

import (
	"context"
	"io"

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
