//go:build unix

package store

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// special makes a special file named name with mk in a new temporary
// folder, and skips the test when mk fails: the system does not allow it.
func special(t *testing.T, name string, mk func(path string) error) (dir, path string) {
	t.Helper()
	dir = t.TempDir()
	path = filepath.Join(dir, name)
	if err := mk(path); err != nil {
		t.Skipf("cannot make %s: %v", path, err)
	}
	return dir, path
}

// A FIFO is written in place, never replaced by a file; through a symlink
// too.
func TestWriteFileAtomicFIFO(t *testing.T) {
	dir, fifo := special(t, "pipe", func(path string) error { return syscall.Mkfifo(path, 0o600) })
	link := filepath.Join(dir, "to-pipe")
	if err := os.Symlink("pipe", link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, link} {
		// The reader opens first, without waiting for a writer: had the
		// FIFO been replaced, it reads nothing rather than hanging.
		r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			t.Fatal(err)
		}
		want := "sent through " + filepath.Base(p)
		if err := writeFile(p, []byte(want), 0o644); err != nil {
			r.Close()
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if err != nil && !errors.Is(err, syscall.EAGAIN) {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("the reader got %q, want %q", got, want)
		}
		if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
			t.Fatalf("the FIFO was replaced: %v, %v", fi.Mode(), err)
		}
	}
	noTemps(t, dir, "pipe", "to-pipe")
}
