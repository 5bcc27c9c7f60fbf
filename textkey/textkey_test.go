package textkey

import "testing"

// Spellings a person reads as the same name have one key; others do not.
func TestKey(t *testing.T) {
	same := []string{
		"José",                   // composed é
		"Jose\u0301",             // e + combining acute
		"Jos\u200Bé",             // a zero-width space inside
		"Jo\u00ADsé",             // a soft hyphen inside
		"\uFEFFJOSÉ",             // a byte order mark, upper case
		"Ｊｏｓé",                   // full-width letters
		"  José ",                // surrounding space
		"J\u200Do\u2060se\u0301", // a joiner and a word joiner
	}
	for _, s := range same {
		if !Same(s, "josé") {
			t.Errorf("%q: key %q, want the key of josé", s, Key(s))
		}
	}
	for _, s := range []string{"Jose", "Josef", "José Luis"} {
		if Same(s, "José") {
			t.Errorf("%q reads as José", s)
		}
	}
	// Segments cover s exactly, in order.
	s := "a\u200Bé\u0301x"
	end := 0
	Segments(s, func(a, b int, _ []rune) {
		if a != end || b <= a {
			t.Errorf("segment [%d, %d) after %d", a, b, end)
		}
		end = b
	})
	if end != len(s) {
		t.Errorf("segments end at %d of %d", end, len(s))
	}
}
