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

// A FIFO is written in place, never replaced by a file; through a symlink
// too.
func TestWriteFileAtomicFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
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
		if err := WriteFileAtomic(p, []byte(want)); err != nil {
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
