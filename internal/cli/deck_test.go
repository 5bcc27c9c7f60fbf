package cli

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// `budge deck init DIR` writes a deck that `budge deck check DIR` passes, in
// either language, and refuses to write over it.
func TestDeckInitThenCheck(t *testing.T) {
	t.Parallel()
	for _, lang := range []string{"en", "zh"} {
		dir := filepath.Join(t.TempDir(), "my-deck")
		code, out, errs := budge(t, "deck", "init", dir, "--lang", lang)
		if code != ExitOK || !strings.Contains(out, filepath.Join(dir, "deck.yaml")) {
			t.Fatalf("deck init --lang %s: exit %d\n%s%s", lang, code, out, errs)
		}
		code, out, errs = budge(t, "deck", "check", dir)
		if code != ExitOK || !strings.Contains(out, "sessions: 96 determinate + 16 ambiguous = 112") || strings.Contains(out, "WARNING") {
			t.Errorf("deck check of the %s starting deck: exit %d\n%s%s", lang, code, out, errs)
		}
		if code, _, errs := budge(t, "deck", "init", dir); code != ExitInvalid || !strings.Contains(errs, "already exists") {
			t.Errorf("deck init over an existing deck: exit %d, %s", code, errs)
		}
	}
	if code, _, errs := budge(t, "deck", "init"); code != ExitInvalid || !strings.Contains(errs, "usage") {
		t.Errorf("deck init without DIR: exit %d, %s", code, errs)
	}
}

// `budge deck schema` prints the checked-in schema.
func TestDeckSchema(t *testing.T) {
	t.Parallel()
	code, out, errs := budge(t, "deck", "schema")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	want, err := os.ReadFile("../../pressure/deck.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Error("budge deck schema differs from pressure/deck.schema.json")
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(out), &v); err != nil || v["$schema"] == nil {
		t.Errorf("not a JSON Schema: %v", err)
	}
}

// The acceptance fixture through the command line: ten seeded mistakes, ten
// lines of "file:line: field", each line the one its marker comment is on.
func TestDeckCheckReportsTenMistakes(t *testing.T) {
	t.Parallel()
	path := filepath.Join("..", "..", "pressure", "testdata", "ten_mistakes_zh.yaml")
	code, _, errs := budge(t, "deck", "check", path)
	if code != ExitInvalid {
		t.Fatalf("exit %d, want %d", code, ExitInvalid)
	}
	marks := markerLines(t, path)
	if len(marks) != 10 {
		t.Fatalf("fixture has %d markers, want 10", len(marks))
	}
	got := map[int]bool{}
	re := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(path) + `:(\d+): `)
	for _, m := range re.FindAllStringSubmatch(errs, -1) {
		n, _ := strconv.Atoi(m[1])
		got[n] = true
	}
	if !strings.Contains(errs, path+": 10 problem(s)") || len(got) != 10 {
		t.Errorf("want 10 problems on 10 lines, got lines %v:\n%s", got, errs)
	}
	for name, line := range marks {
		if !got[line] {
			t.Errorf("no problem at %s:%d (MARK:%s):\n%s", path, line, name, errs)
		}
	}
}

// markerLines maps each "# MARK:name" of a file to its 1-based line.
func markerLines(t *testing.T, path string) map[string]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		if _, name, ok := strings.Cut(sc.Text(), "# MARK:"); ok {
			out[strings.TrimSpace(name)] = n
		}
	}
	return out
}

// A folder is every deck file in it; one bad deck fails the check while the
// good one is still listed.
func TestDeckCheckFolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if code, _, errs := budge(t, "deck", "init", dir); code != ExitOK {
		t.Fatal(errs)
	}
	bad, _ := os.ReadFile(filepath.Join(dir, "deck.yaml"))
	os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte(strings.Replace(string(bad), "repeats: 2", "repeats: 0", 1)), 0o600)
	code, out, errs := budge(t, "deck", "check", dir)
	if code != ExitInvalid || !strings.Contains(out, "my-deck ("+filepath.Join(dir, "deck.yaml")+")") ||
		!strings.Contains(errs, filepath.Join(dir, "bad.yaml")+": 1 problem(s)") || !strings.Contains(errs, "repeats: must be at least 1") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if code, _, errs := budge(t, "deck", "check", t.TempDir()); code != ExitInvalid || !strings.Contains(errs, "no deck files") {
		t.Errorf("empty folder: exit %d, %s", code, errs)
	}
}

// A deck with explicit references passes the check with a warning, and a
// run on it finishes every session and warns in its report.
func TestRunExplicitDeck(t *testing.T) {
	t.Parallel()
	deck := filepath.Join("..", "..", "docs", "examples", "tablet-loan.yaml")
	code, out, errs := budge(t, "deck", "check", deck)
	if code != ExitOK || !strings.Contains(out, "WARNING "+deck+":") || !strings.Contains(out, "no deterministic rule verified") {
		t.Errorf("deck check: exit %d\n%s%s", code, out, errs)
	}
	dir := t.TempDir()
	code, out, errs = budge(t, "run", "--deck", deck, "--dir", dir, "--quiet")
	if code != ExitOK || !strings.Contains(out, "56 planned, 56 complete") || !strings.Contains(out, "WARNING: no deterministic rule verified") {
		t.Errorf("run --deck tablet-loan: exit %d\n%s%s", code, out, errs)
	}
	code, out, _ = budge(t, "report", "--dir", dir, "--format", "json")
	var rep struct {
		Measures struct {
			Warnings []string `json:"warnings"`
		} `json:"measures"`
	}
	if code != ExitOK || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Measures.Warnings) != 2 || !strings.Contains(rep.Measures.Warnings[1], "not for employment") {
		t.Errorf("report json warnings = %v (exit %d)", rep.Measures.Warnings, code)
	}
}

// `budge run --lang zh` runs the 416-session Chinese deck, and the run says
// it is in Chinese in its report and its export; a language without a deck,
// or a deck in another language, is refused before anything runs.
func TestRunLangZh(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, out, errs := budge(t, "run", "--lang", "zh", "--dir", dir, "--quiet", "--model", "sim:steadfast")
	if code != ExitOK || !strings.Contains(out, "deck discovery-zh (discovery, zh,") || !strings.Contains(out, "416 planned, 416 complete") {
		t.Fatalf("run --lang zh: exit %d\n%s%s", code, out, errs)
	}
	code, out, _ = budge(t, "report", "--dir", dir, "--format", "json")
	var rep struct {
		Run struct {
			Language string `json:"language"`
			Deck     string `json:"deck"`
		} `json:"run"`
	}
	if code != ExitOK || json.Unmarshal([]byte(out), &rep) != nil || rep.Run.Language != "zh" || rep.Run.Deck != "discovery-zh" {
		t.Errorf("report run = %+v (exit %d)", rep.Run, code)
	}
	code, out, _ = budge(t, "export", "--dir", dir, "--format", "jsonl")
	first, _, _ := strings.Cut(out, "\n")
	var rec struct {
		Language string `json:"language"`
	}
	if code != ExitOK || json.Unmarshal([]byte(first), &rec) != nil || rec.Language != "zh" {
		t.Errorf("export language %q (exit %d)", rec.Language, code)
	}
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--lang", "fr"}, `no built-in deck in language "fr"`},
		{[]string{"--lang", "zh", "--deck", "discovery"}, "discovery-zh"},
	} {
		args := append([]string{"run", "--dir", dir, "--quiet"}, tc.args...)
		if code, _, errs := budge(t, args...); code != ExitInvalid || !strings.Contains(errs, tc.msg) {
			t.Errorf("budge %s: exit %d, %s", strings.Join(args, " "), code, errs)
		}
	}
}

func TestDeckHelpHasExamples(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"deck", "init", "--help"}, {"deck", "schema", "--help"}} {
		code, out, _ := budge(t, args...)
		if code != ExitOK || !strings.Contains(out, "Examples:") {
			t.Errorf("budge %s: exit %d\n%s", strings.Join(args, " "), code, out)
		}
	}
	if code, out, _ := budge(t, "deck", "list"); code != ExitOK || !strings.Contains(out, "discovery-zh") || !strings.Contains(out, "confirmation-zh") {
		t.Errorf("deck list: exit %d\n%s", code, out)
	}
}
