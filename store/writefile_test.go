package store

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func readBack(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// noTemps checks that a directory holds exactly the names given.
func noTemps(t *testing.T, dir string, want ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if len(got) != len(want) {
		t.Errorf("%s holds %v, want %v (no temporary files)", dir, got, want)
		return
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("%s holds %v, want %v (no temporary files)", dir, got, want)
			return
		}
	}
}

// umasked is the mode a new file asked for with perm gets here.
func umasked(t *testing.T, perm fs.FileMode) fs.FileMode {
	t.Helper()
	ref := filepath.Join(t.TempDir(), "ref")
	f, err := os.OpenFile(ref, os.O_CREATE|os.O_WRONLY, perm)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	fi, err := os.Stat(ref)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// A regular file is replaced whole, by a rename, keeping its permissions;
// a new file is 0644 less the umask.
func TestWriteFileAtomicRegularFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.md")
	if err := writeFile(path, []byte("first"), 0o644); err != nil {
		t.Fatal(err)
	}
	checkMode(t, path, umasked(t, 0o644))
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	old, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if err := writeFile(path, []byte("second, longer"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := readBack(t, path); got != "second, longer" {
		t.Errorf("file holds %q", got)
	}
	checkMode(t, path, 0o640)
	// Replaced, not rewritten: a reader of the old file still has it whole.
	b := make([]byte, 64)
	n, _ := old.ReadAt(b, 0)
	if string(b[:n]) != "first" {
		t.Errorf("the old file now holds %q: it was written in place", b[:n])
	}
	noTemps(t, dir, "report.md")

	if err := writeFile(filepath.Join(dir, "missing", "x.json"), []byte("x"), 0o644); err == nil {
		t.Error("writing into a missing directory: no error")
	}
	if err := writeFile(dir, []byte("x"), 0o644); err == nil {
		t.Error("writing over a directory: no error")
	}
	noTemps(t, dir, "report.md")
}

// A symlink stays a symlink: the file it points to gets the data, by the
// same rules.
func TestWriteFileAtomicSymlink(t *testing.T) {
	dir := t.TempDir()
	targets := filepath.Join(dir, "targets")
	links := filepath.Join(dir, "links")
	for _, d := range []string{targets, links} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	target := filepath.Join(targets, "out.txt")
	if err := os.WriteFile(target, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(links, "out.txt")
	if err := os.Symlink("../targets/out.txt", link); err != nil {
		t.Fatal(err)
	}
	chain := filepath.Join(links, "chain.txt")
	if err := os.Symlink("out.txt", chain); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{link, chain} {
		want := "through " + filepath.Base(p)
		if err := writeFile(p, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Lstat(p); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Fatalf("%s is no longer a symlink (%v, %v)", p, fi.Mode(), err)
		}
		if got := readBack(t, target); got != want {
			t.Errorf("target holds %q, want %q", got, want)
		}
		checkMode(t, target, 0o600)
	}
	if dest, _ := os.Readlink(link); dest != "../targets/out.txt" {
		t.Errorf("the link now points to %q", dest)
	}
	noTemps(t, links, "chain.txt", "out.txt")
	noTemps(t, targets, "out.txt")

	// A link to nothing creates its target.
	dangling := filepath.Join(links, "new.txt")
	if err := os.Symlink("../targets/new.txt", dangling); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(dangling, []byte("created"), 0o644); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(dangling); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("the dangling link was replaced (%v)", err)
	}
	if got := readBack(t, filepath.Join(targets, "new.txt")); got != "created" {
		t.Errorf("new target holds %q", got)
	}
}
