// Package decktest writes variants of the built-in decks for tests: a deck
// with another repeat count, an added arm, renamed identities.
package decktest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/buildlab/budge/pressure"
)

// Edited writes the built-in deck name, with each pair (old, new) of
// replace replaced at its first place, to a file in a new temporary
// directory and returns the file's path. The test fails at once when an
// old text is not in the deck: the deck changed under the test.
func Edited(t testing.TB, name string, replace ...string) string {
	t.Helper()
	if len(replace)%2 != 0 {
		t.Fatalf("decktest.Edited: %d replace texts, want pairs", len(replace))
	}
	b, err := pressure.BuiltinDeckBytes(name)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for i := 0; i < len(replace); i += 2 {
		if !strings.Contains(text, replace[i]) {
			t.Fatalf("built-in deck %s no longer contains %q", name, replace[i])
		}
		text = strings.Replace(text, replace[i], replace[i+1], 1)
	}
	path := filepath.Join(t.TempDir(), name+"-edited.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
