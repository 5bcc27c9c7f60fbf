package store

import (
	"context"
	"errors"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// roStoreEnv names, for the child process of TestReadOnlyFilesystemStore,
// the store it reads.
const roStoreEnv = "BUDGE_TEST_READONLY_STORE"

// TestReadOnlyFilesystemStore: after chmod -R a-w of a store, what the
// reading commands do (runs: list; report and export: sessions and their
// artifacts; view: its index, and opening for reviews) works, and the
// database is unchanged. Write permissions bind everyone but root, so as
// root the store is given to nobody and read by a child process running as
// nobody.
func TestReadOnlyFilesystemStore(t *testing.T) {
	if dir := os.Getenv(roStoreEnv); dir != "" {
		readAsTheCommandsDo(t, dir)
		return
	}
	src := readOnlyStore(t)
	base, err := os.MkdirTemp("", "budge-ro-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		filepath.Walk(base, func(p string, _ os.FileInfo, _ error) error { return os.Chmod(p, 0o700) })
		os.RemoveAll(base)
	})
	dir := filepath.Join(base, "store")
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	before := fileSum(t, filepath.Join(dir, dbName))
	root := os.Geteuid() == 0
	const nobody = 65534
	err = filepath.Walk(base, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if root {
			if err := os.Chown(p, nobody, nobody); err != nil {
				return err
			}
		}
		// chmod -R a-w (and readable by its owner, nobody, as root).
		mode := fi.Mode().Perm() &^ 0o222
		if fi.IsDir() {
			mode |= 0o555
		} else {
			mode |= 0o444
		}
		return os.Chmod(p, mode)
	})
	if err != nil {
		t.Fatal(err)
	}
	if !root {
		readAsTheCommandsDo(t, dir)
	} else {
		// The test binary, where nobody may run it.
		bin := filepath.Join(base, "store.test")
		copyExecutable(t, os.Args[0], bin)
		cmd := osexec.Command(bin, "-test.run=^TestReadOnlyFilesystemStore$", "-test.v")
		cmd.Env = append(os.Environ(), roStoreEnv+"="+dir, "TMPDIR="+os.TempDir())
		cmd.Dir = base
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		out, err := cmd.CombinedOutput()
		var exit *osexec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Skipf("cannot run a process as nobody here: %v", err)
		}
		if err != nil {
			t.Fatalf("reading the store as nobody: %v\n%s", err, out)
		}
		t.Logf("as nobody:\n%s", out)
	}
	if fileSum(t, filepath.Join(dir, dbName)) != before {
		t.Error("the database changed")
	}
}

// copyExecutable copies the file at from to to, executable by all.
func copyExecutable(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// readAsTheCommandsDo reads the store at dir as budge runs, report,
// export and view do.
func readAsTheCommandsDo(t *testing.T, dir string) {
	ctx := context.Background()
	if err := syscall.Access(dir, 2); err == nil {
		t.Fatalf("%s is writable: not a read-only store", dir)
	}
	for _, writes := range []bool{false, true} { // view opens it for reviews
		st, err := OpenReader(ctx, dir, writes)
		if err != nil {
			t.Fatalf("open (writes %v): %v", writes, err)
		}
		if !st.ReadOnly() {
			t.Errorf("writes %v: opened for writing", writes)
		}
		runs, err := st.ListRuns(ctx)
		if err != nil || len(runs) != 1 {
			t.Fatalf("runs: %v %v", runs, err)
		}
		if got := sessions(t, st, "r"); len(got) != 2 {
			t.Fatalf("sessions: %d", len(got))
		}
		want := testSession("a", 0)
		mustArtifact(t, st, "r", want.Attempts[1].ResponseSHA, []byte(`{"session":"a","response":1}`))
		if err := st.PrepareBrowse(ctx); err != nil {
			t.Fatal(err)
		}
		writeView(t, st, "r", "basis", `{}`, "a")
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
