package cli

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/buildlab/budge/pressure"
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

// A confirmation deck must be frozen before its first run; once it is,
// runs on it are not exploratory, and a second revision on it is warned about.
func TestConfirmationDeckMustBeFrozen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, _, errs := budge(t, "run", "--dir", dir, "--deck", "confirmation", "--quiet")
	if code != ExitInvalid || !strings.Contains(errs, "is not frozen") || !strings.Contains(errs, "budge deck freeze confirmation") {
		t.Fatalf("unfrozen confirmation run: exit %d, stderr %q; want exit 2 saying how to freeze it", code, errs)
	}
	if code, out, errs := budge(t, "deck", "freeze", "--dir", dir, "confirmation"); code != ExitOK || !strings.HasPrefix(out, "frozen: deck confirmation") {
		t.Fatalf("freeze: exit %d, %q %q", code, out, errs)
	}
	if code, out, _ := budge(t, "deck", "freeze", "--dir", dir, "confirmation"); code != ExitOK || !strings.Contains(out, "already frozen") {
		t.Errorf("second freeze: exit %d, %q", code, out)
	}
	code, out, errs := budge(t, "run", "--dir", dir, "--deck", "confirmation", "--quiet", "--concurrency", "16")
	if code != ExitOK || !strings.Contains(out, "deck frozen at") || strings.Contains(out, "EXPLORATORY") || strings.Contains(out, "revisions") {
		t.Fatalf("frozen confirmation run: exit %d\n%s\n%s", code, out, errs)
	}
	first := runLine.FindStringSubmatch(out)
	prompt := filepath.Join(t.TempDir(), "prompt.txt")
	if err := os.WriteFile(prompt, []byte("A revised application prompt: follow the availability records.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs = budge(t, "run", "--dir", dir, "--deck", "confirmation", "--quiet", "--concurrency", "16", "--prompt", prompt)
	if code != ExitOK || !strings.Contains(out, "WARNING: 2 revisions") {
		t.Fatalf("second revision on the confirmation deck: exit %d\n%s\n%s", code, out, errs)
	}
	// The two revisions compare session by session on the same deck.
	second := runLine.FindStringSubmatch(out)
	if first == nil || second == nil {
		t.Fatal("no run ids")
	}
	code, cmp, errs := budge(t, "compare", "--dir", dir, "--format", "md", first[1], second[1])
	if code != ExitOK || !strings.Contains(cmp, "## Verdict (") || !strings.Contains(cmp, "confirmation deck") || !strings.Contains(cmp, "McNemar") {
		t.Errorf("compare two revisions: exit %d %s\n%.800s", code, errs, cmp)
	}
	// The JSON report of a run on the frozen deck says it is not exploratory.
	if code, out, _ := budge(t, "report", "--dir", dir, "latest", "--format", "json"); code != ExitOK || !strings.Contains(out, `"exploratory": false`) {
		t.Errorf("report json: exit %d, exploratory flag missing:\n%.400s", code, out)
	}
}

func TestCalibrateCommand(t *testing.T) {
	t.Parallel()
	svg := filepath.Join(t.TempDir(), "cal.svg")
	code, out, errs := budge(t, "calibrate", "--replications", "40", "--resamples", "200", "--svg", svg)
	if code != ExitOK || !strings.Contains(out, "Simulated: ") || !strings.Contains(out, "gap 10 points") || !strings.Contains(out, "false positives") {
		t.Fatalf("calibrate: exit %d %s\n%s", code, errs, out)
	}
	if b, err := os.ReadFile(svg); err != nil || !strings.Contains(string(b), "<polyline") {
		t.Errorf("calibrate --svg wrote %d bytes (%v)", len(b), err)
	}
	if code, _, errs := budge(t, "calibrate", "--cases", "1"); code != ExitInvalid || !strings.Contains(errs, "at least 2") {
		t.Errorf("calibrate --cases 1: exit %d %s", code, errs)
	}
}

// A model named without its provider gets a suggestion, before any network
// call or key lookup.
func TestModelWithoutProviderSuggests(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for model, want := range map[string]string{
		"gpt-4o":            "did you mean --model openai:gpt-4o?",
		"claude-sonnet-4-5": "did you mean --model anthropic:claude-sonnet-4-5?",
		"pushover":          "did you mean --model sim:pushover?",
	} {
		code, _, errs := budge(t, "run", "--dir", dir, "--quiet", "--model", model)
		if code != ExitInvalid || !strings.Contains(errs, want) {
			t.Errorf("--model %s: exit %d, %q; want exit 2 with %q", model, code, errs, want)
		}
	}
	code, _, errs := budge(t, "framing", "run", "--dir", dir, "--quiet", "--model", "gpt-4o")
	if code != ExitInvalid || !strings.Contains(errs, "openai:gpt-4o") {
		t.Errorf("framing run --model gpt-4o: exit %d, %q", code, errs)
	}
}

// --deck DIR runs the one deck file in the folder, and names the files
// when there are several or none; deck check DIR goes into subfolders and
// names the YAML files that are not decks.
func TestDeckFolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	decks := filepath.Join(t.TempDir(), "decks")
	if code, _, errs := budge(t, "deck", "init", decks); code != ExitOK {
		t.Fatalf("deck init: exit %d %s", code, errs)
	}
	// A simulator profile beside the deck is not a deck.
	profile := filepath.Join(decks, "profile.yaml")
	if err := os.WriteFile(profile, []byte("name: pushy\ncorrection_uptake: 0.5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := budge(t, "run", "--dir", dir, "--deck", decks, "--quiet", "--concurrency", "16")
	if code != ExitOK || !strings.Contains(out, "deck my-deck (discovery, en,") || !strings.Contains(out, "112 planned, 112 complete") {
		t.Errorf("run --deck DIR: exit %d\n%.500s\n%s", code, out, errs)
	}
	if code, out, _ := budge(t, "export", "--dir", dir, "latest", "--format", "jsonl"); code != ExitOK || !strings.Contains(out, `"session_id"`) {
		t.Errorf("export after run --deck DIR: exit %d %.200s", code, out)
	}

	// A second deck in a subfolder, with a mistake: check finds it and
	// fails naming it; --deck DIR is now ambiguous.
	src, err := os.ReadFile(filepath.Join(decks, "deck.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	nested := filepath.Join(decks, "zh", "deck.yaml")
	if err := os.MkdirAll(filepath.Dir(nested), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(nested, []byte(strings.Replace(string(src), "repeats:", "repeatz:", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs = budge(t, "deck", "check", decks)
	if code != ExitInvalid || !strings.Contains(errs, nested+": ") || !strings.Contains(errs, "repeatz") ||
		!strings.Contains(errs, profile+": skipped, not a deck file") || !strings.Contains(out, filepath.Join(decks, "deck.yaml")) {
		t.Errorf("deck check DIR with a broken nested deck: exit %d\n%s\n%s", code, out, errs)
	}
	code, _, errs = budge(t, "run", "--dir", dir, "--deck", decks, "--quiet")
	if code != ExitInvalid || !strings.Contains(errs, "2 deck files: "+filepath.Join(decks, "deck.yaml")+", "+nested) {
		t.Errorf("run --deck DIR with two decks: exit %d %q", code, errs)
	}
	empty := t.TempDir()
	code, _, errs = budge(t, "run", "--dir", dir, "--deck", empty, "--quiet")
	if code != ExitInvalid || !strings.Contains(errs, "no deck file") || !strings.Contains(errs, "budge deck init "+empty) {
		t.Errorf("run --deck EMPTYDIR: exit %d %q", code, errs)
	}
}

// calibrate --sweep --svg writes the sweep's plot (it was ignored): power
// and false positives against the number of cases, naming the same
// smallest design as the table.
func TestCalibrateSweepSVG(t *testing.T) {
	t.Parallel()
	svg := filepath.Join(t.TempDir(), "power.svg")
	code, out, errs := budge(t, "calibrate", "--sweep", "--replications", "30", "--resamples", "100", "--svg", svg)
	if code != ExitOK {
		t.Fatalf("calibrate --sweep --svg: exit %d %s", code, errs)
	}
	// Progress on stderr, one line per design, with the time left.
	if !strings.Contains(errs, "sweep: design 1/8 · 8/300 cases' work (3%)") || !strings.Contains(errs, "left") ||
		!strings.Contains(errs, "sweep: design 8/8 · 300/300 cases' work (100%)") || strings.Contains(out, "sweep: design") {
		t.Errorf("sweep progress on stderr:\n%s", errs)
	}
	if _, _, errs := budge(t, "calibrate", "--sweep", "--replications", "5", "--resamples", "20", "--quiet"); errs != "" {
		t.Errorf("--quiet: stderr %q", errs)
	}
	b, err := os.ReadFile(svg)
	if err != nil {
		t.Fatalf("no SVG written: %v", err)
	}
	s := string(b)
	if !strings.HasPrefix(s, "<svg ") || strings.Count(s, "<polyline") != 2 || !strings.Contains(s, "determinate cases in the design") ||
		strings.Count(s, "false positives ") < 8 {
		t.Errorf("sweep SVG:\n%.600s", s)
	}
	// The table's "Smallest design ...: 32 determinate cases × 2 repeats"
	// and the plot's "smallest design ...: 32 cases × 2 repeats" agree.
	i := strings.Index(out, "Smallest design with at least 80% power: ")
	if i < 0 {
		if !strings.Contains(out, "No design up to 96 cases") || !strings.Contains(s, "no design up to 96 cases reaches 80% power") {
			t.Errorf("neither names a smallest design, and they do not agree on none:\n%s\n%.600s", out, s)
		}
		return
	}
	cases := strings.Fields(out[i+len("Smallest design with at least 80% power: "):])[0]
	if !strings.Contains(s, "smallest design with 80% power: "+cases+" cases × 2 repeats") {
		t.Errorf("the plot does not name the table's smallest design (%s cases):\n%.600s", cases, s)
	}
}

// budge run of the simulator on a deck whose rule it cannot apply says so
// on stderr before the run's id, in one line naming the deck.
func TestRunSaysTheSimulatorCannotApplyTheRule(t *testing.T) {
	t.Parallel()
	deck := filepath.Join("..", "..", "docs", "examples", "tablet-loan.yaml")
	code, out, errs := budge(t, "run", "--deck", deck, "--dir", t.TempDir(), "--quiet", "--format", "json")
	if code != ExitOK {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	i, j := strings.Index(errs, "note: deck tablet-loan has rule explicit, which sim:default cannot apply"), strings.Index(errs, "run: ")
	if i < 0 || j < i {
		t.Fatalf("stderr lacks the notice before the run id:\n%s", errs)
	}
	if strings.Contains(out, "cannot apply") {
		t.Errorf("the notice reached stdout (the JSON report)")
	}
}

// A deck whose profile ids are "1" and "2" cannot be run: a model answering
// by display position would be scored as if it had chosen a record. deck
// check and run both refuse it, naming file, line, field and the ids, and
// the server (which answers "1", the first profile shown) is never asked.
func TestRunRefusesPositionalIDs(t *testing.T) {
	t.Parallel()
	src, err := pressure.BuiltinDeckBytes("discovery")
	if err != nil {
		t.Fatal(err)
	}
	d, err := pressure.OpenDeck("discovery")
	if err != nil {
		t.Fatal(err)
	}
	p, q := d.Cases[0].ProfileIDs()
	text := strings.NewReplacer(p, "1", q, "2").Replace(string(src))
	path := filepath.Join(t.TempDir(), "positional.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	var asked atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"{\"selection\":\"1\",\"record_ids\":[],\"explanation\":\"the first one\"}"}}]}`))
	}))
	defer srv.Close()

	line := d.Line("$.cases[0].profiles.P.id")
	for _, args := range [][]string{
		{"deck", "check", path},
		{"run", "--deck", path, "--dir", t.TempDir(), "--quiet", "--model", "openai-compatible:m", "--base-url", srv.URL + "/v1"},
	} {
		code, out, errs := budge(t, args...)
		all := out + errs
		if code != ExitInvalid {
			t.Errorf("%s: exit %d, want %d\n%s", args[0]+" "+args[1], code, ExitInvalid, all)
		}
		for _, want := range []string{path + ":" + itoa(line) + ": cases[0].profiles.P.id", `profile id "1"`, `profile id "2"`, "is a number"} {
			if !strings.Contains(all, want) {
				t.Errorf("%s %s: output lacks %q:\n%s", args[0], args[1], want, all)
			}
		}
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("the server was asked %d time(s)", n)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// --identities changes what the model sees and the labels of every report
// format; a run on the placeholder identities says in every format that it
// cannot show an identity asymmetry; sim:oracle's runs say it was handed
// the answer key.
func TestRunIdentities(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if code, out, errs := budge(t, "deck", "freeze", "--dir", dir, "confirmation"); code != ExitOK {
		t.Fatalf("freeze: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := budge(t, "run", "--dir", dir, "--quiet", "--deck", "confirmation", "--model", "sim:oracle",
		"--identities", "woman, man", "--identity-reviewer", "J. Rivera", "--identity-field", "Gender")
	if code != ExitOK {
		t.Fatalf("run --identities: exit %d\n%s%s", code, out, errs)
	}
	id := runLine.FindStringSubmatch(out)[1]
	d, _ := pressure.OpenDeck("confirmation")
	c := d.Cases[0]
	code, show, _ := budge(t, "show", "--dir", dir, id, c.ID+"/I/P-first/none/r1")
	idP, idQ := c.ProfileIDs()
	for _, want := range []string{"Volunteer " + idP + ": ", "Gender: woman.", "Volunteer " + idQ + ": ", "Gender: man.", `"Gender" field`} {
		if code != ExitOK || !strings.Contains(show, want) {
			t.Errorf("the case message lacks %q (exit %d):\n%s", want, code, show)
		}
	}
	if strings.Contains(show, "Group: X") {
		t.Error("the model still sees the deck's placeholder")
	}
	reports := func(id string) map[string]string {
		m := map[string]string{}
		for _, f := range []string{"text", "md", "json", "html"} {
			code, out, errs := budge(t, "report", "--dir", dir, "--format", f, id)
			if code != ExitOK {
				t.Fatalf("report --format %s: exit %d %s", f, code, errs)
			}
			m[f] = out
		}
		return m
	}
	for f, rep := range reports(id) {
		for _, want := range []string{"woman", "man", "J. Rivera", "answer key", "not a model"} {
			if !strings.Contains(strings.ToLower(unwrapped(rep)), strings.ToLower(want)) {
				t.Errorf("%s report of the declared contrast lacks %q", f, want)
			}
		}
		if strings.Contains(rep, "CANNOT SHOW IDENTITY ASYMMETRY") || strings.Contains(rep, "cannot_show_identity_asymmetry") {
			t.Errorf("%s report of a reviewed contrast says it cannot show an asymmetry", f)
		}
	}
	if !strings.Contains(reports(id)["text"], "toward X (woman)") {
		t.Error("the text report does not print the label beside X")
	}

	code, out, errs = budge(t, "run", "--dir", dir, "--quiet", "--deck", "confirmation")
	if code != ExitOK {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	plain := runLine.FindStringSubmatch(out)[1]
	for f, rep := range reports(plain) {
		want := "CANNOT SHOW IDENTITY ASYMMETRY: the identity values are placeholders"
		if f == "json" {
			var r struct {
				Run struct {
					Identity struct {
						Why string `json:"cannot_show_identity_asymmetry"`
					} `json:"identity_contrast"`
					AnswerKey string `json:"answer_key"`
				} `json:"run"`
			}
			if err := json.Unmarshal([]byte(rep), &r); err != nil {
				t.Fatal(err)
			}
			rep, want = r.Run.Identity.Why, "the identity values are placeholders"
			if r.Run.AnswerKey != "" {
				t.Errorf("a sim:default run says it was handed the answer key")
			}
		}
		if !strings.Contains(rep, want) || !strings.Contains(rep, "no reviewer approved") {
			t.Errorf("%s report of a placeholder run lacks the warning %q", f, want)
		}
	}

	// The declared contrast is the run's: a resume or a replay keeps it.
	code, out, errs = budge(t, "run", "--dir", dir, "--quiet", "--replay", id)
	if code != ExitOK || !strings.Contains(out, `X = "woman"`) || !strings.Contains(out, "ANSWER KEY") {
		t.Errorf("replay of a run with a declared contrast: exit %d\n%s%s", code, out, errs)
	}
	// A declared label that makes a profile id confusable is refused.
	code, out, errs = budge(t, "run", "--dir", dir, "--quiet", "--identities", idP+",man", "--deck", "confirmation")
	if code != ExitInvalid || !strings.Contains(out+errs, "equals the display name") {
		t.Errorf("a label equal to a profile id: exit %d\n%s%s", code, out, errs)
	}
	code, _, errs = budge(t, "run", "--dir", dir, "--quiet", "--identity-reviewer", "R")
	if code != ExitInvalid || !strings.Contains(errs, "goes with --identities") {
		t.Errorf("--identity-reviewer alone: exit %d %s", code, errs)
	}
}
