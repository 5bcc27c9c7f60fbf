package limits

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	if err := os.WriteFile(small, []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, err := ReadFile(small, 5); err != nil || string(data) != "12345" {
		t.Errorf("a file at the limit: %q, %v", data, err)
	}
	var big *TooLarge
	if _, err := ReadFile(small, 4); !errors.As(err, &big) || big.Size != 5 || big.Max != 4 {
		t.Errorf("a regular file over the limit: %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "absent"), 4); !errors.Is(err, fs.ErrNotExist) || errors.As(err, new(*ReadError)) {
		t.Errorf("an absent file: %v", err)
	}
	var re *ReadError
	if _, err := ReadFile(dir, 4); !errors.As(err, &re) || !strings.Contains(err.Error(), dir) {
		t.Errorf("a folder: %v", err)
	}
}

func TestReadFileStream(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		w.Write([]byte("123456"))
		w.Close()
	}()
	defer r.Close()
	path := "/dev/fd/" + strconv.Itoa(int(r.Fd()))
	if _, err := os.Stat(path); err != nil {
		t.Skipf("no %s: %v", path, err)
	}
	var big *TooLarge
	if _, err := ReadFile(path, 4); !errors.As(err, &big) || big.Size != -1 {
		t.Errorf("a stream over the limit: %v", err)
	}
}
