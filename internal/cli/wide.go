package cli

import (
	"flag"
	"io"
	"strings"
	"unicode"

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

// writeColumns writes rows as columns two spaces apart, each as wide as its
// widest cell (in terminal columns), the last one unpadded: a table as narrow as its
// contents allow.
func writeColumns(w io.Writer, rows [][]string) {
	var widths []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], report.Columns(c))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		for i, c := range r {
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-report.Columns(c)+2))
			}
		}
		b.WriteByte('\n')
		io.WriteString(w, b.String())
	}
}

// wrapText word-wraps s to report.TextWidth terminal columns, continuation
// lines starting with indent, each line ending in a newline. Chinese and
// other wide text, written without spaces, may break between any two wide
// characters, never before a punctuation mark; a word wider than a line is
// left whole.
func wrapText(s, indent string) string {
	var b strings.Builder
	line := strings.Repeat(" ", len(s)-len(strings.TrimLeft(s, " ")))
	n, empty := report.Columns(line), true
	for _, t := range wrapTokens(s) {
		add := report.Columns(t.text)
		if t.space && !empty {
			add++
		}
		if !empty && n+add > report.TextWidth {
			b.WriteString(line + "\n")
			line, n, empty = indent, report.Columns(indent), true
			add = report.Columns(t.text)
		}
		if t.space && !empty {
			line += " "
		}
		line += t.text
		n += add
		empty = false
	}
	if !empty {
		b.WriteString(line + "\n")
	}
	return b.String()
}

// wrapToken is a piece of text a line may break before; space says a
// space separates it from the piece before.
type wrapToken struct {
	text  string
	space bool
}

// wrapTokens splits s at spaces and around wide characters, keeping
// punctuation with what it follows.
func wrapTokens(s string) []wrapToken {
	var out []wrapToken
	for _, f := range strings.Fields(s) {
		first := true
		cur := ""
		flush := func() {
			if cur != "" {
				out = append(out, wrapToken{cur, first})
				cur, first = "", false
			}
		}
		for _, r := range f {
			wide := report.Columns(string(r)) == 2
			switch {
			case unicode.IsPunct(r) && cur == "" && len(out) > 0 && !first:
				out[len(out)-1].text += string(r)
			case unicode.IsPunct(r):
				cur += string(r)
			case wide:
				flush()
				cur = string(r)
			default:
				if cur != "" && report.Columns(string([]rune(cur)[len([]rune(cur))-1])) == 2 {
					flush()
				}
				cur += string(r)
			}
		}
		flush()
	}
	return out
}
