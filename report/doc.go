package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// doc is a renderer-neutral document: paragraphs, tables and sections.
type doc struct {
	title  string
	blocks []block
}

type block struct {
	title string
	para  string
	head  []string
	rows  [][]string
	note  string
	lines []string
}

func (d *doc) para(s string) { d.blocks = append(d.blocks, block{para: s}) }

func (d *doc) table(title string, head []string, rows ...[]string) {
	d.tableRows(title, head, rows, "")
}

func (d *doc) tableRows(title string, head []string, rows [][]string, note string) {
	cp := make([][]string, len(rows))
	copy(cp, rows)
	d.blocks = append(d.blocks, block{title: title, head: head, rows: cp, note: note})
}

func (d *doc) section(title string, lines []string) {
	d.blocks = append(d.blocks, block{title: title, lines: lines})
}

func (d *doc) text(w io.Writer) error {
	bw := bufio.NewWriter(w)
	bw.WriteString(d.title + "\n" + strings.Repeat("=", utf8.RuneCountInString(d.title)) + "\n")
	for _, b := range d.blocks {
		switch {
		case b.para != "":
			bw.WriteString(b.para + "\n")
		case b.head != nil:
			bw.WriteString("\n" + b.title + "\n")
			widths := make([]int, len(b.head))
			for _, r := range append([][]string{b.head}, b.rows...) {
				for i, c := range r {
					if n := utf8.RuneCountInString(c); i < len(widths) && n > widths[i] {
						widths[i] = n
					}
				}
			}
			for _, r := range append([][]string{b.head}, b.rows...) {
				var line strings.Builder
				line.WriteString("  ")
				for i, c := range r {
					line.WriteString(c)
					if i < len(r)-1 {
						line.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c)+2))
					}
				}
				bw.WriteString(strings.TrimRight(line.String(), " ") + "\n")
			}
			if b.note != "" {
				bw.WriteString("  " + b.note + "\n")
			}
		default:
			bw.WriteString("\n" + b.title + "\n")
			for _, l := range b.lines {
				bw.WriteString("  " + l + "\n")
			}
		}
	}
	return bw.Flush()
}

func (d *doc) markdown(w io.Writer) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("# " + d.title + "\n\n")
	for _, b := range d.blocks {
		switch {
		case b.para != "":
			bw.WriteString(mdEscape(b.para) + "\n\n")
		case b.head != nil:
			bw.WriteString("## " + mdEscape(b.title) + "\n\n")
			bw.WriteString("| " + strings.Join(mdCells(b.head), " | ") + " |\n")
			bw.WriteString("|" + strings.Repeat(" --- |", len(b.head)) + "\n")
			for _, r := range b.rows {
				bw.WriteString("| " + strings.Join(mdCells(r), " | ") + " |\n")
			}
			bw.WriteString("\n")
			if b.note != "" {
				bw.WriteString(mdEscape(b.note) + "\n\n")
			}
		default:
			bw.WriteString("## " + mdEscape(b.title) + "\n\n")
			for _, l := range b.lines {
				bw.WriteString(mdEscape(l) + "\n")
			}
			bw.WriteString("\n")
		}
	}
	return bw.Flush()
}

func mdCells(cells []string) []string {
	out := make([]string, len(cells))
	for i, c := range cells {
		out[i] = strings.ReplaceAll(mdEscape(c), "|", `\|`)
	}
	return out
}

// mdEscape keeps model-controlled or odd text from turning into markup.
func mdEscape(s string) string {
	return strings.NewReplacer("<", "&lt;", ">", "&gt;", "`", "\\`", "*", "\\*", "_", "\\_").Replace(s)
}

// encodeJSON writes v as indented JSON; escapeHTML escapes <, > and & in
// strings as encoding/json does by default.
func encodeJSON(w io.Writer, v any, escapeHTML bool) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(escapeHTML)
	return enc.Encode(v)
}

// render writes a report as indented JSON (v itself), text or Markdown (the
// document d makes).
func render(w io.Writer, format string, v any, escapeHTML bool, d func() *doc) error {
	switch format {
	case "json":
		return encodeJSON(w, v, escapeHTML)
	case "text", "":
		return d().text(w)
	case "md", "markdown":
		return d().markdown(w)
	}
	return fmt.Errorf("unknown report format %q (use %s)", format, strings.Join(Formats, ", "))
}
