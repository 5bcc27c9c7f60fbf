package pressure

import (
	"encoding/binary"
	"strings"
	"testing"
	"unicode/utf16"
)

// withLine is the discovery deck with line n (1-based) replaced.
func withLine(t *testing.T, n int, text string) []byte {
	t.Helper()
	b, err := BuiltinDeckBytes("discovery")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	if !strings.HasPrefix(lines[10], "title: ") || !strings.HasPrefix(lines[11], "kind: ") {
		t.Fatalf("the discovery deck's lines 11 and 12 are no longer title and kind: %q %q", lines[10], lines[11])
	}
	lines[n-1] = text
	return []byte(strings.Join(lines, "\n"))
}

// TestDeckSyntaxErrorsAtTheirLine: a YAML syntax error is reported at the
// line where the problem starts, in plain words, not where the parser gave
// up in its own terms.
func TestDeckSyntaxErrorsAtTheirLine(t *testing.T) {
	for _, c := range []struct {
		name string
		line int
		text string
		want int
		says string
	}{
		{"unclosed double quote", 11, `title: "Demo lab early-session allocation`, 11, `double quote (") opened on this line is not closed`},
		{"unclosed single quote", 11, `title: 'Demo lab early-session allocation`, 11, `single quote (') opened on this line is not closed`},
		{"colon in a value", 11, `title: Demo lab: early-session allocation`, 11, "put the value in quotes"},
		{"key indented too deep", 12, `  kind: discovery`, 12, "indented deeper than the line before it (line 11)"},
		{"unclosed list", 11, `title: [Demo lab`, 11, "the list opened with [ on this line is not closed"},
		{"tab indent", 12, "\tkind: discovery", 12, "tab"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, probs := ParseDeck("deck.yaml", withLine(t, c.line, c.text))
			if len(probs) != 1 {
				t.Fatalf("problems %v, want one", probs)
			}
			p := probs[0]
			if p.Line != c.want || !strings.Contains(p.Msg, c.says) {
				t.Errorf("%s:%d: %s; want line %d saying %q", p.File, p.Line, p.Msg, c.want, c.says)
			}
		})
	}
}

// TestDeckTextIsReadAsText: a deck is read as every text file is: Latin-1
// is refused at its line and byte (never sent on as replacement
// characters), a byte order mark is dropped and UTF-16 is decoded, with the
// hash of the bytes as given.
func TestDeckTextIsReadAsText(t *testing.T) {
	plain, err := BuiltinDeckBytes("discovery")
	if err != nil {
		t.Fatal(err)
	}
	want, probs := ParseDeck("deck.yaml", plain)
	if len(probs) != 0 {
		t.Fatal(probs)
	}

	latin1 := withLine(t, 11, "title: D\xe9mo lab")
	if _, probs := ParseDeck("deck.yaml", latin1); len(probs) != 1 || probs[0].Line != 11 ||
		!strings.Contains(probs[0].Msg, "not valid UTF-8") || !strings.Contains(probs[0].Msg, "byte 9 of this line") || !strings.Contains(probs[0].Msg, "iconv -f latin1") {
		t.Errorf("Latin-1 deck: %v", probs)
	}
	if _, probs := ParseDeck("deck.yaml", withLine(t, 11, "title: Demo\x00 lab")); len(probs) != 1 || probs[0].Line != 11 || !strings.Contains(probs[0].Msg, "NUL") {
		t.Errorf("deck with a NUL byte: %v", probs)
	}

	bom := append([]byte{0xef, 0xbb, 0xbf}, plain...)
	u16 := []byte{0xff, 0xfe}
	for _, u := range utf16.Encode([]rune(string(plain))) {
		u16 = binary.LittleEndian.AppendUint16(u16, u)
	}
	for name, b := range map[string][]byte{"UTF-8 with a byte order mark": bom, "UTF-16LE": u16} {
		d, probs := ParseDeck("deck.yaml", b)
		if len(probs) != 0 {
			t.Errorf("%s: %v", name, probs)
			continue
		}
		if d.Title != want.Title || len(d.Cases) != len(want.Cases) || d.Hash == want.Hash || d.Hash != hashBytes(b) {
			t.Errorf("%s: title %q, %d cases, hash %s: want the deck's, hashed as given", name, d.Title, len(d.Cases), d.Hash)
		}
	}
}
