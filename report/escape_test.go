package report_test

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/buildlab/budge/report"
)

// rawControl finds a control character a terminal would act on: C0 but
// line break and tab, DEL, C1, bidirectional overrides and isolates.
func rawControl(s string) (rune, bool) {
	for _, r := range s {
		switch {
		case r == '\n' || r == '\t':
		case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return r, true
		}
	}
	return 0, false
}

// Strings from an endpoint or a deck (a reported model id, a deck name,
// a model name) reach the text and Markdown reports with their control
// characters escaped: a window title, a cleared screen, a carriage return
// over a line or a right-to-left override cannot act on a terminal.
func TestTextReportsEscapeControlCharacters(t *testing.T) {
	hostile := "\x1b]0;pwned\x07\x1b[2J\rover\u202eevil\u009b31m\x7f"
	var rep report.Pressure
	rep.Run.ID = "run-1"
	rep.Run.ModelIDs = []string{"gpt" + hostile}
	rep.Run.Deck = "deck" + hostile
	rep.Run.Model = "openai:" + hostile
	rep.Measures.Warnings = []string{"warning" + hostile}
	for _, format := range []string{"text", "md"} {
		var b bytes.Buffer
		if err := rep.Render(&b, format); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if !utf8.ValidString(out) {
			t.Errorf("%s: not UTF-8", format)
		}
		if r, ok := rawControl(out); ok {
			t.Errorf("%s report holds a raw control character %U", format, r)
		}
		want := `\x1b]0;pwned\x07\x1b[2J\x0dover\u202eevil\x9b31m\x7f`
		for _, want := range []string{want} {
			if !strings.Contains(out, want) {
				t.Errorf("%s report lacks the escaped text %s", format, want)
			}
		}
	}
	if got := report.TerminalSafe("plain text, 中文, tab\there\nline"); got != "plain text, 中文, tab\there\nline" {
		t.Errorf("TerminalSafe changed ordinary text: %q", got)
	}
}
