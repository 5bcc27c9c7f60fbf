package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Templates, system prompts, challenge wordings and the simulator's
// knowledge get the same encoding check as --data files: Latin-1 is refused
// naming file, line and byte with an iconv hint, UTF-16 with a byte order
// mark is decoded and reaches the model as text.
func TestFramingTextFileEncodings(t *testing.T) {
	t.Parallel()
	builtin, err := os.ReadFile(filepath.Join("..", "..", "framing", "templates", "budge", "c1_statement.tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	dialogue, err := os.ReadFile(filepath.Join("..", "..", "framing", "templates", "budge", "c2_dialogue.tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	statement := strings.Replace(string(builtin), "Check the statement", "Café check: check the statement", 1)
	files := []struct {
		kind, name, text, show string
		args                   func(path string) []string
	}{
		{"templates", "c1_statement.tmpl", statement, "enc-1/tmpl/-/none/C1-True",
			func(p string) []string { return []string{"--templates", filepath.Dir(p)} }},
		{"prompt", "prompt.txt", "Nobody here is a person; judge the café claim on its merits.\n", "enc-1/budge/speakers/m/C2-Correct",
			func(p string) []string { return []string{"--mitigation", "name=m,prompt=" + p} }},
		{"challenge", "push.json", `{"disagree": "Are you sure? Think again about the café. Reply in JSON as before."}`, "",
			func(p string) []string { return []string{"--challenge", "disagree", "--challenge-file", p} }},
		{"knowledge", "knowledge.jsonl", `{"question": "Which city is the capital of Australia? (café quiz)", "correct": ["Canberra"], "incorrect": ["Sydney"]}` + "\n", "",
			func(p string) []string { return []string{"--knowledge", p} }},
	}
	for _, f := range files {
		for _, enc := range []string{"latin1", "utf16le"} {
			t.Run(f.kind+"/"+enc, func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "tmpl")
				os.MkdirAll(dir, 0o755)
				path := filepath.Join(dir, f.name)
				b := latin1(f.text)
				if enc == "utf16le" {
					b = utf16Bytes(f.text, false)
				}
				if err := os.WriteFile(path, b, 0o644); err != nil {
					t.Fatal(err)
				}
				if f.kind == "templates" {
					os.WriteFile(filepath.Join(dir, "c2_dialogue.tmpl"), dialogue, 0o644)
				}
				data := filepath.Join(t.TempDir(), "items.jsonl")
				os.WriteFile(data, []byte(encodingItems["jsonl"]), 0o644)
				store := t.TempDir()
				args := append([]string{"framing", "run", "--dir", store, "--quiet", "--resamples", "50", "--data", data}, f.args(path)...)
				code, _, errs := budge(t, args...)
				if enc == "latin1" {
					for _, want := range []string{path + ":1: not valid UTF-8 at byte offset", "iconv -f latin1 -t utf-8"} {
						if code != ExitInvalid || !strings.Contains(errs, want) {
							t.Errorf("exit %d, want %d and %q in: %s", code, ExitInvalid, want, errs)
						}
					}
					return
				}
				if code != ExitOK && code != ExitUnmeasured {
					t.Fatalf("exit %d: %s", code, errs)
				}
				if f.show == "" {
					return
				}
				if _, out, _ := budge(t, "show", "latest", "--dir", store, f.show); !strings.Contains(out, "café") || strings.Contains(out, "\x00") {
					t.Errorf("the session lacks the decoded text:\n%s", out)
				}
			})
		}
	}
}

// A simulator profile file (sim:FILE.yaml) is read through the same check.
func TestFramingSimProfileEncoding(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "judge.yaml")
	os.WriteFile(path, latin1("name: café judge\n"), 0o644)
	code, _, errs := budge(t, "framing", "run", "--dir", t.TempDir(), "--quiet", "--model", "sim:"+path)
	if code != ExitInvalid || !strings.Contains(errs, path+":1: not valid UTF-8 at byte offset") || !strings.Contains(errs, "iconv -f latin1") {
		t.Errorf("exit %d: %s", code, errs)
	}
}
