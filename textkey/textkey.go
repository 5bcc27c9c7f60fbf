// Package textkey says when two strings read the same to a person: two
// spellings of one name in different Unicode forms ("José" composed or
// with a combining accent), with an invisible character inside (a zero-width
// space, a soft hyphen, a joiner), in full-width forms ("Ｊｏｓé") or in
// another letter case have the same key. Labels, profile ids and item ids
// are compared by their keys, and the review's mask finds a label by its
// key in any spelling.
//
// It knows nothing of budge's protocols and does no I/O.
package textkey

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Invisible reports whether r renders as nothing: a format character
// (zero-width space and joiners, soft hyphen, word joiner, byte order mark,
// bidirectional marks) or a variation selector.
func Invisible(r rune) bool {
	return unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Variation_Selector, r)
}

// Key is the form under which two strings read the same: compatibility
// normalized (NFKC), invisible characters removed, letters case-folded,
// surrounding space trimmed.
func Key(s string) string {
	var b strings.Builder
	Segments(s, func(_, _ int, key []rune) {
		for _, r := range key {
			b.WriteRune(r)
		}
	})
	return strings.TrimSpace(b.String())
}

// Segments walks s one normalization segment at a time (a character and
// the marks that combine with it; an invisible character on its own) and
// hands fn the segment's byte range in s and its key runes (none for an
// invisible character).
func Segments(s string, fn func(start, end int, key []rune)) {
	for i := 0; i < len(s); {
		n := norm.NFKC.NextBoundaryInString(s[i:], true)
		if n <= 0 {
			n = len(s) - i
		}
		seg := s[i : i+n]
		var key []rune
		for _, r := range norm.NFKC.String(seg) {
			if !Invisible(r) {
				key = append(key, unicode.ToLower(r))
			}
		}
		fn(i, i+n, key)
		i += n
	}
}

// Same reports whether a and b read the same (equal keys).
func Same(a, b string) bool { return Key(a) == Key(b) }
