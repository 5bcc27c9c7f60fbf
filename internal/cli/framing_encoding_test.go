package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"
)

// encodingItems is two items, the first with a non-ASCII letter on its
// first line, as JSONL and as CSV (read with --columns).
var encodingItems = map[string]string{
	"jsonl": `{"id": "enc-1", "domain": "facts", "question": "Which city is the capital of Australia? (café quiz)", "correct": "Canberra", "incorrect": "Sydney"}
{"id": "enc-2", "domain": "facts", "question": "How many legs does a spider have?", "correct": "Eight", "incorrect": "Six"}
`,
	"csv": "q,good,bad\nWhich city is the capital of Australia? (café quiz),Canberra,Sydney\nHow many legs does a spider have?,Eight,Six\n",
}

func latin1(s string) []byte {
	var b []byte
	for _, r := range s {
		b = append(b, byte(r)) // every rune here is below U+0100
	}
	return b
}

func utf16Bytes(s string, bigEndian bool) []byte {
	b := []byte{0xff, 0xfe}
	if bigEndian {
		b = []byte{0xfe, 0xff}
	}
	for _, u := range utf16.Encode([]rune(s)) {
		if bigEndian {
			b = append(b, byte(u>>8), byte(u))
		} else {
			b = append(b, byte(u), byte(u>>8))
		}
	}
	return b
}

// The documented outcomes: a file that is not UTF-8 is refused (exit 2)
// naming file, line and byte, with an iconv hint; UTF-16 with a byte order
// mark and UTF-8 with one are read.
func TestFramingDataEncodings(t *testing.T) {
	t.Parallel()
	encodings := map[string]func(string) []byte{
		"latin1":   latin1,
		"utf16le":  func(s string) []byte { return utf16Bytes(s, false) },
		"utf16be":  func(s string) []byte { return utf16Bytes(s, true) },
		"utf8-bom": func(s string) []byte { return append([]byte("\xef\xbb\xbf"), s...) },
	}
	for _, ext := range []string{"jsonl", "csv"} {
		for enc, encode := range encodings {
			t.Run(ext+"/"+enc, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), enc+"."+ext)
				if err := os.WriteFile(path, encode(encodingItems[ext]), 0o644); err != nil {
					t.Fatal(err)
				}
				dir := t.TempDir()
				args := []string{"framing", "run", "--dir", dir, "--quiet", "--resamples", "50", "--data", path}
				if ext == "csv" {
					args = append(args, "--columns", "question=q,correct=good,incorrect=bad")
				}
				code, _, errs := budge(t, args...)
				if enc != "latin1" {
					// Two items are too few to measure a judge (exit 6); what
					// matters here is that the file was read and run.
					if code != ExitOK && code != ExitUnmeasured {
						t.Fatalf("exit %d, want %d or %d: %s", code, ExitOK, ExitUnmeasured, errs)
					}
					// The model saw the text, not the bytes.
					if _, out, _ := budge(t, "show", "latest", "--dir", dir, "enc-1/budge/-/none/C1-True"); ext == "jsonl" && !strings.Contains(out, "(café quiz)") {
						t.Errorf("the prompt lacks the decoded question:\n%s", out)
					}
					return
				}
				line := 1
				if ext == "csv" {
					line = 2
				}
				for _, want := range []string{path + ":" + string(rune('0'+line)) + ": not valid UTF-8 at byte offset", "iconv -f latin1 -t utf-8"} {
					if code != ExitInvalid || !strings.Contains(errs, want) {
						t.Errorf("exit %d, want %d and %q in: %s", code, ExitInvalid, want, errs)
					}
				}
			})
		}
	}
}

// A UTF-16 file without a byte order mark is refused with a hint, never
// read as text with NUL bytes in it.
func TestFramingDataUTF16WithoutMark(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "nobom.jsonl")
	ascii := strings.ReplaceAll(encodingItems["jsonl"], "é", "e")
	os.WriteFile(path, bytes.TrimPrefix(utf16Bytes(ascii, false), []byte{0xff, 0xfe}), 0o644)
	code, _, errs := budge(t, "framing", "run", "--dir", t.TempDir(), "--quiet", "--data", path)
	if code != ExitInvalid || !strings.Contains(errs, "nobom.jsonl:1: a NUL byte at byte offset 1") || !strings.Contains(errs, "iconv -f utf-16le") {
		t.Errorf("exit %d: %s", code, errs)
	}
}
