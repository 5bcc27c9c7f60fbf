package store

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"testing"
)

// A device is written in place: a null device made here stays one (making
// it needs root).
func TestWriteFileAtomicDevice(t *testing.T) {
	dir, null := special(t, "null", func(path string) error {
		err := syscall.Mknod(path, syscall.S_IFCHR|0o666, int(mkdev(1, 3)))
		if err != nil && !errors.Is(err, syscall.EPERM) && !errors.Is(err, syscall.EACCES) {
			t.Fatal(err)
		}
		return err // mknod needs root
	})
	err := writeFile(null, []byte("discarded"), 0o644)
	if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) {
		t.Skipf("devices cannot be opened here (a nodev mount): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(null)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&fs.ModeCharDevice == 0 || fi.Mode()&fs.ModeDevice == 0 {
		t.Errorf("the device was replaced: mode %v", fi.Mode())
	}
	if got := readBack(t, null); got != "" {
		t.Errorf("reading the null device gave %q", got)
	}
	noTemps(t, dir, "null")
}

// mkdev is the device number of a major and a minor, in Linux's encoding
// for small numbers.
func mkdev(major, minor uint64) uint64 {
	return (major << 8) | minor
}
