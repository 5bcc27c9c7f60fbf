package cli

import (
	"flag"

	"github.com/buildlab/budge/report"
)

// wideFlag is --wide: the text report keeps one line per table row instead
// of fitting in report.TextWidth columns.
func wideFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("wide", false, "text output: one line per table row, however long (by default text fits in 100 columns)")
}

// textFormat is the report format to render: the wide text format when
// --wide was given with text output.
func textFormat(format string, wide bool) string {
	if wide && (format == "text" || format == "") {
		return report.FormatWide
	}
	return format
}
