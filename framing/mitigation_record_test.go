package framing

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A built-in mitigation's record says the wording is budge's own; a prompt
// from a file names the file; both carry the prompt's hash, which changes
// with the prompt.
func TestPromptRecord(t *testing.T) {
	b, err := ParseMitigation("be-honest")
	if err != nil {
		t.Fatal(err)
	}
	if r := b.PromptRecord(); !strings.Contains(r, "budge's own wording") || !strings.Contains(r, "sha256 ") {
		t.Errorf("built-in: %q", r)
	}
	path := filepath.Join(t.TempDir(), "honest.txt")
	os.WriteFile(path, []byte("Be honest."), 0o644)
	f, err := ParseMitigation("name=paper-honest,prompt=" + path)
	if err != nil {
		t.Fatal(err)
	}
	r := f.PromptRecord()
	if strings.Contains(r, "budge's own wording") || !strings.Contains(r, path) || strings.Contains(r, b.PromptRecord()[strings.Index(b.PromptRecord(), "sha256"):][:19]) {
		t.Errorf("from a file: %q", r)
	}
	if (Mitigation{Name: "relabel-only"}).PromptRecord() != "" {
		t.Error("a mitigation without a system prompt has a prompt record")
	}
}
