package textfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadDecodesAndRefuses(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]struct {
		in, want, err string
	}{
		"utf8-bom": {"\xef\xbb\xbfcaf\xc3\xa9\n", "café\n", ""},
		"utf16le":  {"\xff\xfec\x00a\x00f\x00\xe9\x00\n\x00", "café\n", ""},
		"latin1":   {"ok\ncaf\xe9\n", "", ":2: not valid UTF-8 at byte offset 6 of the file (byte 4 of this line): e9 0a; it looks like Latin-1"},
		"nul":      {"a\x00b", "", ":1: a NUL byte at byte offset 1"},
	} {
		path := filepath.Join(dir, name)
		os.WriteFile(path, []byte(c.in), 0o644)
		got, err := Read(path)
		if c.err == "" {
			if err != nil || got != c.want {
				t.Errorf("%s: %q, %v", name, got, err)
			}
			continue
		}
		var te *Error
		if !errors.As(err, &te) || te.File != path || !strings.Contains(err.Error(), path+c.err) {
			t.Errorf("%s: %v, want %q", name, err, path+c.err)
		}
	}
	if _, err := Read(filepath.Join(dir, "absent")); err == nil {
		t.Error("an absent file was read")
	}
}
