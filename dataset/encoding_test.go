package dataset

import (
	"strings"
	"testing"
	"unicode/utf16"
)

func TestDecodeTextGivesTheSameText(t *testing.T) {
	text := "line one\ncafé, naïve, 𝄞 clef\n"
	le, be := []byte{0xff, 0xfe}, []byte{0xfe, 0xff}
	for _, u := range utf16.Encode([]rune(text)) {
		le = append(le, byte(u), byte(u>>8))
		be = append(be, byte(u>>8), byte(u))
	}
	for name, in := range map[string][]byte{"utf8": []byte(text), "utf8-bom": append([]byte("\xef\xbb\xbf"), text...), "utf16le": le, "utf16be": be} {
		got, err := decodeText("f.jsonl", in)
		if err != nil || string(got) != text {
			t.Errorf("%s: %q, %v", name, got, err)
		}
	}
}

func TestDecodeTextRefuses(t *testing.T) {
	for name, c := range map[string]struct {
		in   string
		want string
	}{
		"latin1":         {"ok\nab caf\xe9\n", "f.jsonl:2: not valid UTF-8 at byte offset 9 of the file (byte 7 of this line): e9 0a; it looks like Latin-1"},
		"odd utf16":      {"\xff\xfea\x00b", "f.jsonl: starts with a UTF-16LE byte order mark but has an odd number of bytes"},
		"lone surrogate": {"\xff\xfea\x00\x00\xd8b\x00", "f.jsonl:1: invalid UTF-16LE at byte 4: unpaired surrogate 0xd800"},
		"utf16 no mark":  {"{\x00}\x00", "f.jsonl:1: a NUL byte at byte offset 1"},
		"truncated utf8": {"abc\xe2\x82", "not valid UTF-8 at byte offset 3"},
	} {
		_, err := decodeText("f.jsonl", []byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}
