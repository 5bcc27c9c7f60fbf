package store_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/buildlab/budge/store"
)

// StreamFileAtomic writes what it is handed piece by piece into place; a
// write that fails halfway leaves the old file as it was and no temporary
// file behind.
func TestStreamFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.csv")
	rows := func(n int, fail error) func(io.Writer) error {
		return func(w io.Writer) error {
			for i := range n {
				if _, err := io.WriteString(w, strings.Repeat("x", 1000)+"\n"); err != nil {
					return err
				}
				if i == n/2 && fail != nil {
					return fail
				}
			}
			return nil
		}
	}
	if err := store.StreamFileAtomic(path, rows(500, nil)); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || len(b) != 500*1001 {
		t.Fatalf("wrote %d bytes (%v), want %d", len(b), err, 500*1001)
	}
	broken := errors.New("the store went away")
	if err := store.StreamFileAtomic(path, rows(500, broken)); !errors.Is(err, broken) {
		t.Fatalf("a failed write: %v", err)
	}
	if b, _ := os.ReadFile(path); len(b) != 500*1001 {
		t.Errorf("a failed write changed the file: %d bytes", len(b))
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left behind: %v", ents)
	}
}
