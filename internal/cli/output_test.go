//go:build linux

package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// budge report -o onto a device node writes to the device and leaves it a
// device; onto a symlink, it writes the link's target and keeps the link.
func TestReportOutputKeepsDevicesAndLinks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if code, _, errs := budge(t, "run", "--dir", dir, "--quiet"); code != ExitOK {
		t.Fatalf("run: %s", errs)
	}
	dev := filepath.Join(t.TempDir(), "null")
	// The same device as /dev/null (major 1, minor 3).
	if err := syscall.Mknod(dev, syscall.S_IFCHR|0o666, 1<<8|3); err != nil {
		if errors.Is(err, syscall.EPERM) {
			t.Skip("mknod needs privileges here")
		}
		t.Fatal(err)
	}
	if code, _, errs := budge(t, "report", "--dir", dir, "latest", "-o", dev); code != ExitOK {
		t.Fatalf("report -o device: %s", errs)
	}
	if fi, err := os.Lstat(dev); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		t.Errorf("the device node is no longer a device: %v %v", fi.Mode(), err)
	}
	target := filepath.Join(t.TempDir(), "target.md")
	link := filepath.Join(t.TempDir(), "link.md")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := budge(t, "report", "--dir", dir, "latest", "--format", "md", "-o", link); code != ExitOK {
		t.Fatalf("report -o link: %s", errs)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", fi.Mode(), err)
	}
	if b, err := os.ReadFile(target); err != nil || len(b) == 0 {
		t.Errorf("the link's target holds no report: %v", err)
	}
}

// A damaged artifact pack is found before a report or an export is made
// from the run: the command fails naming the pack.
func TestDamagedPackIsReported(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, out, errs := budge(t, "run", "--dir", dir, "--quiet")
	if code != ExitOK {
		t.Fatalf("run: %s", errs)
	}
	id := runLine.FindStringSubmatch(out)[1]
	packs, _ := filepath.Glob(filepath.Join(dir, "runs", id, "*.pack"))
	if len(packs) == 0 {
		t.Fatal("no artifact pack")
	}
	f, err := os.OpenFile(packs[0], os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	f.ReadAt(b, 100)
	f.WriteAt([]byte{b[0] ^ 0xff}, 100)
	f.Close()
	for _, cmd := range []string{"report", "export"} {
		if code, _, errs := budge(t, cmd, "--dir", dir, "latest"); code == ExitOK || !strings.Contains(errs, filepath.Base(packs[0])) {
			t.Errorf("%s on a damaged pack: exit %d, %s", cmd, code, errs)
		}
	}
}
