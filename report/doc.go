package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"io"
	"regexp"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/width"
)

// doc is the one document every human-readable format is rendered from:
// paragraphs, tables and sections of lines, in order. Text, Markdown and
// HTML each walk the same blocks, so a fact added to a report appears in
// all three or in none. The only blocks one format shows and the others do
// not are figures (HTML charts, and the answers beside a pair), which draw
// facts the tables already state.
type doc struct {
	title string
	// page is the HTML page's <title> (title when empty).
	page   string
	blocks []block
	// link, when set, turns the counts of tables into links (HTML only).
	link Linker
	// compact is the layout of a short document (a judge's audit): in text
	// no rule under the title and no wrapping, each table row on one line
	// (its first cell padded, its second, then the others named by their
	// column in parentheses); in Markdown, titled mdTitle, its lines are
	// list items. HTML is the same for every document.
	compact bool
	mdTitle string
}

type block struct {
	title string
	para  string
	head  []string
	rows  [][]string
	note  string
	lines []string
	// lineIDs, when set, names some of lines for HTML anchors.
	lineIDs map[int]string
	// id and class are the block's HTML anchor and style; text and
	// Markdown ignore them.
	id, class string
	// figure is HTML-only (a chart, model answers side by side).
	figure template.HTML
	// counts names, by row and column, the table cells that lead with a
	// count ("n" or "n/d"): what each number counts, for a viewer to link
	// to the sessions behind it. Text and Markdown ignore them.
	counts map[[2]int]cellCount
}

// Count names one number of a report: the measure, and the family (or
// condition), direction and status it is taken over. Part is "num" or
// "den" for the two sides of a rate, "" for a plain count.
type Count struct {
	Measure   string
	Family    string
	Direction string
	Status    string
	Part      string
}

// Linker is where a count links to, "" when it links nowhere. Only a
// viewer sets one: the standalone HTML report links nowhere.
type Linker func(Count) string

// cellCount is what a cell's numerator and denominator count.
type cellCount struct{ num, den *Count }

// rateCell names the two sides of a rate cell.
func rateCell(c Count) cellCount {
	n, d := c, c
	n.Part, d.Part = "num", "den"
	return cellCount{num: &n, den: &d}
}

// countCell names a cell holding one count.
func countCell(c Count) cellCount { return cellCount{num: &c} }

// count names what cell (row, col) of the last block counts.
func (d *doc) count(row, col int, c cellCount) {
	if n := len(d.blocks); n > 0 {
		b := &d.blocks[n-1]
		if b.counts == nil {
			b.counts = map[[2]int]cellCount{}
		}
		b.counts[[2]int{row, col}] = c
	}
}

// Emphasis inside a doc string: bolded in HTML and Markdown, plain in text.
const emOpen, emClose = "\uE000", "\uE001"

// bold marks s for emphasis.
func bold(s string) string { return emOpen + s + emClose }

// plain drops emphasis and count marks.
func plain(s string) string {
	return strings.NewReplacer(emOpen, "", emClose, "").Replace(unmark(s))
}

// A count inside a sentence is marked with what it counts (see counted):
// HTML links it when the document has a linker, every format shows the
// number alone.
const countOpen, countMid, countClose, countSep = "\uE002", "\uE003", "\uE004", "\uE005"

var countMarkRe = regexp.MustCompile(countOpen + "([^" + countMid + "]*)" + countMid + "([^" + countClose + "]*)" + countClose)

// counted marks n as the count c names.
func counted(c Count, n int) string {
	return countOpen + strings.Join([]string{c.Measure, c.Family, c.Direction, c.Status, c.Part}, countSep) + countMid + fmt.Sprint(n) + countClose
}

// unmark drops count marks, keeping the numbers.
func unmark(s string) string {
	if !strings.Contains(s, countOpen) {
		return s
	}
	return countMarkRe.ReplaceAllString(s, "$2")
}

// inline escapes a sentence for HTML, its marked counts linked where the
// document's linker has a link for them.
func (d *doc) inline(s string) string {
	if d.link == nil || !strings.Contains(s, countOpen) {
		return htmlText(unmark(s))
	}
	var b strings.Builder
	last := 0
	for _, m := range countMarkRe.FindAllStringSubmatchIndex(s, -1) {
		b.WriteString(htmlText(s[last:m[0]]))
		f := strings.Split(s[m[2]:m[3]], countSep)
		n := htmlText(s[m[4]:m[5]])
		if len(f) == 5 {
			if u := d.link(Count{Measure: f[0], Family: f[1], Direction: f[2], Status: f[3], Part: f[4]}); u != "" {
				n = `<a class="count" href="` + html.EscapeString(u) + `">` + n + "</a>"
			}
		}
		b.WriteString(n)
		last = m[1]
	}
	b.WriteString(htmlText(s[last:]))
	return b.String()
}

func (d *doc) para(s string) { d.blocks = append(d.blocks, block{para: s}) }

// warn is a paragraph that flags something (a warning, a deviation, an
// exploratory run).
func (d *doc) warn(s string) { d.blocks = append(d.blocks, block{para: s, class: "warn"}) }

// tableNote is a table with a note under it.
func (d *doc) tableNote(title string, head []string, note string, rows ...[]string) {
	d.tableRows(title, head, rows, note)
}

func (d *doc) tableRows(title string, head []string, rows [][]string, note string) {
	cp := make([][]string, len(rows))
	copy(cp, rows)
	d.blocks = append(d.blocks, block{title: title, head: head, rows: cp, note: note})
}

func (d *doc) section(title string, lines []string) {
	d.blocks = append(d.blocks, block{title: title, lines: lines})
}

// figure adds an HTML-only block.
func (d *doc) figure(h template.HTML) { d.blocks = append(d.blocks, block{figure: h}) }

// anchor sets the HTML id (and class) of the last block.
func (d *doc) anchor(id, class string) {
	if n := len(d.blocks); n > 0 {
		d.blocks[n-1].id, d.blocks[n-1].class = id, class
	}
}

// TextWidth is the width the text report fits in; "text-wide" (--wide)
// keeps every table row on one line however long.
const TextWidth = 100

// FormatWide is the text format without wrapping (budge --wide).
const FormatWide = "text-wide"

func (d *doc) text(w io.Writer, wide bool) error {
	d = d.terminalSafe()
	if d.compact {
		return d.writeCompact(w, false)
	}
	bw := bufio.NewWriter(w)
	width := TextWidth
	if wide {
		width = 1 << 30
	}
	put := func(s, first, rest string) {
		for _, l := range wrapParts(plain(s), width, first, rest) {
			bw.WriteString(l + "\n")
		}
	}
	title := plain(d.title)
	put(title, "", "")
	bw.WriteString(strings.Repeat("=", min(width, Columns(title))) + "\n")
	for _, b := range d.blocks {
		switch {
		case b.figure != "":
		case b.para != "":
			put(b.para, "", "  ")
		case b.head != nil:
			bw.WriteString("\n")
			put(b.title, "", "")
			lines, ok := tableLines(b.head, b.rows, width)
			if !ok && !wide {
				lines, ok = hangingLines(b.head, b.rows, width)
			}
			if !ok && !wide {
				lines = recordLines(b.head, b.rows, width)
			}
			for _, l := range lines {
				bw.WriteString(l + "\n")
			}
			if b.note != "" {
				put(b.note, "  ", "  ")
			}
		default:
			bw.WriteString("\n")
			put(b.title, "", "")
			for _, l := range b.lines {
				put(l, "  ", "    ")
			}
		}
	}
	return bw.Flush()
}

// tableLines lays a table out in aligned columns; ok is false when a line
// is wider than width.
func tableLines(head []string, rows [][]string, width int) ([]string, bool) {
	widths := make([]int, len(head))
	all := append([][]string{head}, rows...)
	for _, r := range all {
		for i, c := range r {
			if n := Columns(plain(c)); i < len(widths) && n > widths[i] {
				widths[i] = n
			}
		}
	}
	ok := true
	var out []string
	for _, r := range all {
		var line strings.Builder
		line.WriteString("  ")
		for i, c := range r {
			c = plain(c)
			line.WriteString(c)
			if i < len(r)-1 && i < len(widths) {
				line.WriteString(strings.Repeat(" ", max(0, widths[i]-Columns(c))+2))
			}
		}
		s := strings.TrimRight(line.String(), " ")
		if Columns(s) > width {
			ok = false
		}
		out = append(out, s)
	}
	return out, ok
}

// hangingLines aligns every column but the last and wraps the last into
// what is left of the line, when at least a quarter of it is left.
func hangingLines(head []string, rows [][]string, width int) ([]string, bool) {
	n := len(head)
	if n < 2 {
		return nil, false
	}
	widths := make([]int, n-1)
	all := append([][]string{head}, rows...)
	for _, r := range all {
		for i := 0; i < n-1 && i < len(r); i++ {
			widths[i] = max(widths[i], Columns(plain(r[i])))
		}
	}
	lead := 2
	for _, w := range widths {
		lead += w + 2
	}
	if width-lead < width/4 {
		return nil, false
	}
	pad := strings.Repeat(" ", lead)
	var out []string
	for _, r := range all {
		var b strings.Builder
		b.WriteString("  ")
		for i := 0; i < n-1; i++ {
			c := ""
			if i < len(r) {
				c = plain(r[i])
			}
			b.WriteString(c + strings.Repeat(" ", widths[i]-Columns(c)+2))
		}
		last := ""
		if len(r) >= n {
			last = plain(strings.Join(r[n-1:], "  "))
		}
		out = append(out, wrap(last, width, b.String(), pad)...)
	}
	for i, l := range out {
		out[i] = strings.TrimRight(l, " ")
	}
	return out, true
}

// recordLines shows each row as a record: its first cell as a heading,
// then "column: value" for the others, packed several to a line.
func recordLines(head []string, rows [][]string, width int) []string {
	const indent = "      "
	var out []string
	for _, r := range rows {
		if len(r) == 0 {
			continue
		}
		out = append(out, wrap(plain(r[0]), width, "  ", "    ")...)
		var fields []string
		for i := 1; i < len(r) && i < len(head); i++ {
			if r[i] != "" {
				fields = append(fields, strings.Join(strings.Fields(plain(head[i])+": "+plain(r[i])), " "))
			}
		}
		if len(fields) > 0 {
			out = append(out, packParts(fields, width, indent, indent, "")...)
		}
	}
	return out
}

// wrapParts wraps a line made of parts joined by " · " (run manifests,
// status lines) at the joins where it can, so that a part such as
// "attempts 1228 (0 failed, 0 retries)" stays on one line; a part longer
// than a line is wrapped at spaces.
func wrapParts(s string, width int, first, rest string) []string {
	parts := strings.Split(s, " · ")
	if len(parts) == 1 || Columns(first+s) <= width {
		return wrap(s, width, first, rest)
	}
	return packParts(parts, width, first, rest, " ·")
}

// packParts puts parts on lines of at most width columns, several to a line
// joined by " · ", each full line ending in tail. A part starts a new line
// when it does not fit and is wrapped at spaces: its first line indented by
// first (on the first line of all) or rest, its others by rest and two
// spaces.
func packParts(parts []string, width int, first, rest, tail string) []string {
	var out []string
	line := ""
	for _, p := range parts {
		switch {
		case line == "":
		case Columns(line)+3+Columns(p) <= width:
			line += " · " + p
			continue
		default:
			out = append(out, line+tail)
		}
		indent := rest
		if len(out) == 0 {
			indent = first
		}
		ls := wrap(p, width-Columns(tail), indent, rest+"  ")
		out = append(out, ls[:len(ls)-1]...)
		line = ls[len(ls)-1]
	}
	return append(out, line)
}

// wrap breaks s into lines of at most width runes at spaces, the first
// line indented by first and the others by rest; a word longer than a line
// is cut.
func wrap(s string, width int, first, rest string) []string {
	var out []string
	for _, para := range strings.Split(s, "\n") {
		line, indent := first, first
		if len(out) > 0 {
			line, indent = rest, rest
		}
		empty := true
		for _, word := range strings.Fields(para) {
			for {
				n := Columns(line)
				wn := Columns(word)
				sep := 1
				if empty {
					sep = 0
				}
				if n+sep+wn <= width {
					if !empty {
						line += " "
					}
					line += word
					empty = false
					break
				}
				if !empty {
					out = append(out, line)
					line, indent, empty = rest, rest, true
					continue
				}
				// A word wider than a line (or text written without spaces,
				// such as Chinese): cut it at the line's width.
				head, tail := cutCols(word, max(1, width-Columns(indent)))
				out = append(out, line+head)
				word = tail
				line, indent = rest, rest
			}
		}
		out = append(out, strings.TrimRight(line, " "))
	}
	return out
}

func (d *doc) markdown(w io.Writer) error {
	d = d.terminalSafe()
	if d.compact {
		return d.writeCompact(w, true)
	}
	bw := bufio.NewWriter(w)
	bw.WriteString("# " + mdEscape(d.title) + "\n\n")
	for _, b := range d.blocks {
		switch {
		case b.figure != "":
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

// writeCompact writes a compact document (see doc.compact) as text or, with
// md, as Markdown.
func (d *doc) writeCompact(w io.Writer, md bool) error {
	bw := bufio.NewWriter(w)
	title, head, item := d.title+"\n", "\n", "  "
	if md {
		title, head, item = "# "+d.mdTitle+"\n\n", "\n## ", "- "
	}
	bw.WriteString(plain(title))
	for _, b := range d.blocks {
		if b.figure != "" {
			continue
		}
		if b.title != "" {
			bw.WriteString(head + plain(b.title) + "\n")
			if md {
				bw.WriteString("\n")
			}
		}
		switch {
		case b.para != "":
			bw.WriteString(plain(b.para) + "\n")
		case b.head != nil && md:
			bw.WriteString("| " + plain(strings.Join(b.head, " | ")) + " |\n|" + strings.Repeat("---|", len(b.head)) + "\n")
			for _, r := range b.rows {
				bw.WriteString("| " + plain(strings.Join(r, " | ")) + " |\n")
			}
		case b.head != nil:
			for _, r := range b.rows {
				cell := func(i int) string {
					if i < len(r) {
						return plain(r[i])
					}
					return ""
				}
				var named []string
				for i := 2; i < len(b.head); i++ {
					named = append(named, plain(b.head[i])+" "+cell(i))
				}
				fmt.Fprintf(bw, "  %-28s %s  (%s)\n", cell(0), cell(1), strings.Join(named, ", "))
			}
		default:
			for _, l := range b.lines {
				bw.WriteString(item + plain(l) + "\n")
			}
		}
		if b.note != "" {
			bw.WriteString(plain(b.note) + "\n")
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

// mdEscape keeps model-controlled or odd text from turning into markup;
// emphasis marks become bold.
func mdEscape(s string) string {
	s = strings.NewReplacer("<", "&lt;", ">", "&gt;", "`", "\\`", "*", "\\*", "_", "\\_").Replace(unmark(s))
	return strings.NewReplacer(emOpen, "**", emClose, "**").Replace(s)
}

// textEscaper escapes text content (not attributes, which html.EscapeString
// escapes): an apostrophe stays one, so "Cohen's kappa" reads as written in
// the page source too.
var textEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "\x00", "\uFFFD")

// htmlText escapes s for HTML; emphasis marks become <b>.
func htmlText(s string) string {
	return strings.NewReplacer(emOpen, "<b>", emClose, "</b>").Replace(textEscaper.Replace(strings.ToValidUTF8(unmark(s), "\uFFFD")))
}

// htmlAttrs are a block's id and class attributes.
func htmlAttrs(b block, class string) string {
	var a string
	if b.id != "" {
		a += ` id="` + html.EscapeString(b.id) + `"`
	}
	if c := strings.TrimSpace(class + " " + b.class); c != "" {
		a += ` class="` + html.EscapeString(c) + `"`
	}
	return a
}

// html writes the document as one self-contained page: the style sheet
// inline, no script, nothing loaded from anywhere; every string escaped.
func (d *doc) html(w io.Writer, footer string) error {
	bw := bufio.NewWriter(w)
	page := d.page
	if page == "" {
		page = d.title
	}
	bw.WriteString(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>` + html.EscapeString(plain(page)) + "</title>\n<style>" + string(css()) + "</style></head><body>\n")
	bw.WriteString("<h1>" + htmlText(d.title) + "</h1>\n")
	for _, b := range d.blocks {
		switch {
		case b.figure != "":
			bw.WriteString(string(b.figure) + "\n")
		case b.para != "":
			bw.WriteString("<p" + htmlAttrs(b, "") + ">" + d.inline(b.para) + "</p>\n")
		case b.head != nil:
			bw.WriteString("<h2>" + htmlText(b.title) + "</h2>\n<table" + htmlAttrs(b, "") + "><tr>")
			for _, h := range b.head {
				bw.WriteString("<th>" + htmlText(h) + "</th>")
			}
			bw.WriteString("</tr>\n")
			for ri, r := range b.rows {
				bw.WriteString("<tr>")
				for i, c := range r {
					cls := ""
					if i > 0 && numeric(c) {
						cls = ` class="num"`
					}
					bw.WriteString("<td" + cls + ">" + d.linked(c, b.counts[[2]int{ri, i}]) + "</td>")
				}
				bw.WriteString("</tr>\n")
			}
			bw.WriteString("</table>\n")
			if b.note != "" {
				bw.WriteString(`<p class="note">` + htmlText(b.note) + "</p>\n")
			}
		default:
			bw.WriteString("<section" + htmlAttrs(b, "") + ">")
			if b.title != "" {
				bw.WriteString("<h2>" + htmlText(b.title) + "</h2>\n")
			}
			inList := false
			for i, l := range b.lines {
				id := ""
				if b.lineIDs[i] != "" {
					id = ` id="` + html.EscapeString(b.lineIDs[i]) + `"`
				}
				item, isItem := strings.CutPrefix(l, "- ")
				switch {
				case isItem && !inList:
					bw.WriteString("<ul>")
					inList = true
				case !isItem && inList:
					bw.WriteString("</ul>\n")
					inList = false
				}
				if isItem {
					bw.WriteString("<li" + id + ">" + d.inline(item) + "</li>")
				} else {
					bw.WriteString("<p" + id + ">" + d.inline(l) + "</p>\n")
				}
			}
			if inList {
				bw.WriteString("</ul>\n")
			}
			bw.WriteString("</section>\n")
		}
	}
	bw.WriteString(`<footer class="note">` + htmlText(footer) + "</footer>\n</body></html>\n")
	return bw.Flush()
}

// countRe is a cell's leading count: "n" or "n/d".
var countRe = regexp.MustCompile(`^(\d+)(?:/(\d+))?`)

// linked escapes a cell for HTML, its leading numbers turned into links
// where the document's linker has one for what they count.
func (d *doc) linked(c string, cc cellCount) string {
	m := countRe.FindStringSubmatchIndex(c)
	if d.link == nil || cc.num == nil || m == nil {
		return d.inline(c)
	}
	a := func(s string, what *Count) string {
		if what == nil {
			return s
		}
		u := d.link(*what)
		if u == "" {
			return s
		}
		return `<a class="count" href="` + html.EscapeString(u) + `">` + s + "</a>"
	}
	out := a(c[m[2]:m[3]], cc.num)
	if m[4] >= 0 {
		out += "/" + a(c[m[4]:m[5]], cc.den)
	}
	return out + htmlText(c[m[1]:])
}

// numeric says whether a cell starts like a count or a measure (right
// aligned in HTML).
func numeric(c string) bool {
	c = unmark(c)
	if utf8.RuneCountInString(c) > 32 {
		return false // a sentence that starts with a number
	}
	c = strings.TrimLeft(c, "+−-")
	return c != "" && (c[0] >= '0' && c[0] <= '9' || strings.HasPrefix(c, "—"))
}

// encodeJSON writes v as indented JSON; escapeHTML escapes <, > and & in
// strings as encoding/json does by default.
func encodeJSON(w io.Writer, v any, escapeHTML bool) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(escapeHTML)
	return enc.Encode(v)
}

// render writes a report as indented JSON (v itself), text (wrapped to
// TextWidth, or wide) or Markdown (the document d makes).
func render(w io.Writer, format string, v any, escapeHTML bool, d func() *doc) error {
	switch format {
	case "json":
		return encodeJSON(w, v, escapeHTML)
	case "text", "":
		return d().text(w, false)
	case FormatWide:
		return d().text(w, true)
	case "md", "markdown":
		return d().markdown(w)
	}
	return fmt.Errorf("unknown report format %q (use %s)", format, strings.Join(Formats, ", "))
}

// Columns is how many terminal columns s takes: East Asian wide and
// full-width characters (Chinese among them) take two, others one.
func Columns(s string) int {
	n := 0
	for _, r := range s {
		n += runeCols(r)
	}
	return n
}

func runeCols(r rune) int {
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	return 1
}

// cutCols splits s after at most n columns (at least one rune).
func cutCols(s string, n int) (head, tail string) {
	c := 0
	for i, r := range s {
		w := runeCols(r)
		if c+w > n && i > 0 {
			return s[:i], s[i:]
		}
		c += w
	}
	return s, ""
}

// terminalSafe is the document with every control character in its text
// written as an escape (\x1b, \u202e): text that came from a model, a
// deck or a data file cannot move a terminal's cursor, set its title,
// clear its screen or reorder what is shown. Line breaks and tabs stay.
func (d *doc) terminalSafe() *doc {
	c := *d
	c.title, c.mdTitle = TerminalSafe(d.title), TerminalSafe(d.mdTitle)
	c.blocks = make([]block, len(d.blocks))
	for i, b := range d.blocks {
		b.title, b.para, b.note = TerminalSafe(b.title), TerminalSafe(b.para), TerminalSafe(b.note)
		b.head = mapStrings(b.head, TerminalSafe)
		b.lines = mapStrings(b.lines, TerminalSafe)
		if b.rows != nil {
			rows := make([][]string, len(b.rows))
			for j, r := range b.rows {
				rows[j] = mapStrings(r, TerminalSafe)
			}
			b.rows = rows
		}
		c.blocks[i] = b
	}
	return &c
}

// mapStrings is f of each of ss, nil for nil.
func mapStrings(ss []string, f func(string) string) []string {
	if ss == nil {
		return nil
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = f(s)
	}
	return out
}

// TerminalSafe writes the control characters of s as escapes: C0 controls
// but line break and tab, DEL, C1 controls, and the bidirectional
// overrides and isolates (which reorder what a terminal shows). Other
// text, budge's own marks (private-use runes) included, is unchanged.
func TerminalSafe(s string) string {
	if !strings.ContainsFunc(s, unsafeRune) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case !unsafeRune(r):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, "\\x%02x", r)
		default:
			fmt.Fprintf(&b, "\\u%04x", r)
		}
	}
	return b.String()
}

// TerminalWriter is w with TerminalSafe applied to everything written to
// it: for commands that print strings from a model, an endpoint, a deck or
// a data file (show, runs, deck check) whole lines at a time.
func TerminalWriter(w io.Writer) io.Writer { return terminalWriter{w} }

type terminalWriter struct{ w io.Writer }

func (t terminalWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(t.w, TerminalSafe(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

func unsafeRune(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e || r == 0x200f || r == 0x061c:
		return true
	}
	return false
}
