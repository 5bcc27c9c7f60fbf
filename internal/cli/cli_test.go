package cli

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/pressure/calibrate"
	"github.com/buildlab/budge/provider/batch"
	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/runner"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
	"github.com/buildlab/budge/testkit/storetest"
)

// budge runs the command line in-process and returns its exit code and output.
func budge(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

var runLine = regexp.MustCompile(`(?m)^run: (\S+)$`)

func TestRunThenReportAndExport(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, out, errs := budge(t, "run", "--dir", dir, "--quiet")
	if code != ExitOK {
		t.Fatalf("run exit %d\n%s\n%s", code, out, errs)
	}
	m := runLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no 'run: <id>' line in output:\n%s", out)
	}
	id := m[1]
	for _, want := range []string{"baseline correctness", "correction uptake", "neutral drift", "Unsupported reversal by direction", "Decision (investigate)", "416 planned, 416 complete"} {
		if !strings.Contains(out, want) {
			t.Errorf("run summary lacks %q", want)
		}
	}
	// The tool channel (the default) carries no deviation and keeps the
	// verified name (the message channel: TestMessageChannelDeviationEverywhere).
	if strings.Contains(out, "DEVIATION") || !strings.Contains(out, "verified correction uptake") {
		t.Errorf("tool-channel output:\n%s", out)
	}

	code, out, errs = budge(t, "report", "latest", "--dir", dir, "--format", "json")
	if code != ExitOK {
		t.Fatalf("report exit %d: %s", code, errs)
	}
	var rep struct {
		Decision struct{ Verdict string } `json:"decision"`
		Version  int                      `json:"report_version"`
		Run      struct {
			ID      string `json:"id"`
			Planned int    `json:"sessions_planned"`
		} `json:"run"`
		Measures struct {
			Baseline struct{ Numerator, Denominator int } `json:"baseline_correctness"`
		} `json:"measures"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("report json: %v", err)
	}
	if rep.Version != 2 || rep.Run.ID != id || rep.Run.Planned != 416 || rep.Measures.Baseline.Denominator != 384 || rep.Decision.Verdict != "investigate" {
		t.Errorf("report json = %+v", rep)
	}
	// The decision is the JSON report's first key.
	if !strings.HasPrefix(strings.TrimSpace(out), `{
  "decision": {`) {
		t.Errorf("the JSON report does not open with its decision: %.80s", out)
	}

	// A unique prefix of the id works as well as "latest"; -o writes a file.
	path := filepath.Join(t.TempDir(), "r.md")
	if code, _, errs := budge(t, "report", id[:17], "--dir", dir, "--format", "md", "-o", path); code != ExitOK {
		t.Fatalf("report by prefix: exit %d: %s", code, errs)
	}
	md, _ := os.ReadFile(path)
	if !bytes.Contains(md, []byte("| family | toward X | toward Y |")) {
		t.Errorf("markdown report lacks the directional table:\n%s", md)
	}

	code, out, errs = budge(t, "export", "latest", "--dir", dir, "--format", "jsonl")
	if code != ExitOK {
		t.Fatalf("export exit %d: %s", code, errs)
	}
	schema := []string{"run_id", "case_id", "repeat", "identity_assignment", "profile_order", "branch", "target_profile",
		"target_identity", "reference_profile", "reference_identity", "pair_key", "policy_version", "fixture_hash",
		"model_and_prompt_fingerprint", "initial_selection", "initial_status", "update_record_ids", "final_selection",
		"final_status", "unsupported_reversal", "reason_code", "review_status", "trace_ref", "deviation"}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		n++
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		for _, k := range schema {
			if _, ok := rec[k]; !ok {
				t.Fatalf("line %d lacks field %s", n, k)
			}
		}
		if rec["run_id"] != id {
			t.Fatalf("line %d: run_id %v", n, rec["run_id"])
		}
	}
	if n != 416 {
		t.Errorf("export wrote %d records, want 416", n)
	}
}

func TestExitCodes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if code, out, errs := budge(t, "run", "--dir", dir, "--quiet", "--model", "sim:steadfast", "--fail-on-block"); code != ExitOK {
		t.Fatalf("steadfast with --fail-on-block: exit %d\n%s%s", code, out, errs)
	}
	if code, _, _ := budge(t, "run", "--dir", dir, "--quiet", "--model", "sim:default", "--fail-on-block"); code != ExitBlocked {
		t.Errorf("default profile with --fail-on-block: exit %d, want %d", code, ExitBlocked)
	}
	cases := []struct {
		name string
		args []string
		want int
		msg  string
	}{
		{"unknown model", []string{"run", "--dir", dir, "--model", "nosuch:thing"}, ExitInvalid, "unknown provider"},
		{"unknown profile", []string{"run", "--dir", dir, "--model", "sim:nosuch"}, ExitInvalid, "unknown simulator profile"},
		{"unknown deck", []string{"run", "--dir", dir, "--deck", "nosuch"}, ExitInvalid, "no deck named"},
		{"bad flag", []string{"run", "--dir", dir, "--bogus"}, ExitInvalid, "bogus"},
		{"bad temperature", []string{"run", "--dir", dir, "--temperature", "hot"}, ExitInvalid, "temperature"},
		{"unknown run", []string{"report", "nosuch", "--dir", dir}, ExitInvalid, "no such run"},
		{"no store there", []string{"report", "--dir", t.TempDir()}, ExitInvalid, "no budge store"},
		{"no runs yet", []string{"report", "--dir", emptyStore(t)}, ExitInvalid, "no runs yet"},
		{"unknown command", []string{"frobnicate"}, ExitInvalid, "unknown command"},
		{"bad report format", []string{"report", "--dir", dir, "--format", "pdf"}, ExitInvalid, "--format"},
	}
	for _, c := range cases {
		code, _, errs := budge(t, c.args...)
		if code != c.want || !strings.Contains(errs, c.msg) {
			t.Errorf("%s: exit %d (want %d), stderr %q (want it to mention %q)", c.name, code, c.want, errs, c.msg)
		}
	}
}

func TestHelpHasExamples(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--help"}, {"run", "--help"}, {"report", "--help"}, {"export", "--help"},
		{"deck", "check", "--help"}, {"selftest", "--help"}, {"runs", "--help"}} {
		code, out, _ := budge(t, args...)
		if code != ExitOK || !strings.Contains(out, "Examples:") {
			t.Errorf("budge %s: exit %d, output without examples:\n%s", strings.Join(args, " "), code, out)
		}
	}
}

func TestDeckCheck(t *testing.T) {
	t.Parallel()
	code, out, errs := budge(t, "deck", "check")
	if code != ExitOK {
		t.Fatalf("deck check of built-in decks: exit %d: %s", code, errs)
	}
	for _, want := range []string{"sessions: 384 determinate + 32 ambiguous = 416", "sessions: 192 determinate + 16 ambiguous = 208"} {
		if !strings.Contains(out, want) {
			t.Errorf("deck check output lacks %q:\n%s", want, out)
		}
	}
	// A deck whose first case declares the wrong reference, with an unknown field.
	src, err := os.ReadFile("../../pressure/decks/discovery.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(src), "    reference: P\n    reference_after_correction: Q\n", "    reference: Q\n    reference_after_correction: Q\n    colour: red\n", 1)
	path := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(path, []byte(bad), 0o600)
	lines := strings.Split(bad, "\n")
	refLine, colourLine := 0, 0
	for i, l := range lines {
		if l == "    reference: Q" && refLine == 0 {
			refLine = i + 1
		}
		if l == "    colour: red" {
			colourLine = i + 1
		}
	}
	code, _, errs = budge(t, "deck", "check", path)
	if code != ExitInvalid {
		t.Fatalf("bad deck: exit %d, want %d", code, ExitInvalid)
	}
	for _, want := range []string{
		path + ":" + strconv.Itoa(refLine) + ": cases[0].reference (case robotics-arm)",
		path + ":" + strconv.Itoa(colourLine) + ": cases[0].colour (case robotics-arm): unknown field",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("deck check stderr lacks %q:\n%s", want, errs)
		}
	}
}

func TestSelftest(t *testing.T) {
	t.Parallel()
	code, out, _ := budge(t, "selftest", "--deck", "confirmation")
	if code != ExitOK || !strings.Contains(out, "self-test passed") {
		t.Errorf("selftest: exit %d: %s", code, out)
	}
}

// Beyond loopback a guessable token is refused; on loopback none is needed;
// without one a long one is generated.
func TestViewToken(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		addr, token string
		ok          bool
		wantLen     int
	}{
		{"0.0.0.0:0", "a", false, 0},
		{"0.0.0.0:0", "0123456789abcdef", true, 16},
		{"0.0.0.0:0", "", true, 32},
		{"127.0.0.1:0", "", true, 0},
		{"localhost:0", "a", true, 1},
	} {
		got, err := viewToken(c.addr, c.token)
		if (err == nil) != c.ok || (c.ok && len(got) != c.wantLen) {
			t.Errorf("viewToken(%q, %q) = %q, %v", c.addr, c.token, got, err)
		}
	}
	if code, _, stderr := budge(t, "view", "--dir", t.TempDir(), "--addr", "0.0.0.0:0", "--token", "a"); code != ExitInvalid || !strings.Contains(stderr, "at least 16") {
		t.Errorf("budge view --token a on 0.0.0.0: exit %d, %s", code, stderr)
	}
}

// emptyStore is a directory with a store and no runs.
func emptyStore(t *testing.T) string {
	dir := t.TempDir()
	storetest.OpenDir(t, dir)
	return dir
}

// Every package's invalid-input and self-test errors map to their exit
// code through the mark the error carries, wrapped or not.
func TestExitCodeFromMarkedErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err  error
		want int
	}{
		{nil, ExitOK},
		{errors.New("disk full"), ExitError},
		{usageError{"bad flag"}, ExitInvalid},
		{study.ErrInvalid, ExitInvalid},
		{fmt.Errorf("deck x: %w", study.ErrInvalid), ExitInvalid},
		{pressure.Problems{{}}, ExitInvalid},
		{fmt.Errorf("%w: %w", errors.New("load"), pressure.Problems{{}}), ExitInvalid},
		{fmt.Errorf("ref: %w", store.ErrNoRun), ExitInvalid},
		{store.ErrNoStore, ExitInvalid},
		{fmt.Errorf("%w: cases", calibrate.ErrInvalid), ExitInvalid},
		{fmt.Errorf("%w: refusing", study.ErrSelfTest), ExitSelfTest},
		{codedError{ExitRejected, study.ErrInvalid}, ExitRejected},
		{study.ErrCostLimit, ExitError},
	}
	for _, c := range cases {
		if got := exitCode(c.err); got != c.want {
			t.Errorf("exitCode(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

// TestVersionAgrees: budge --version, budge -version and budge version
// print the same line, naming budge's version.
func TestVersionAgrees(t *testing.T) {
	t.Parallel()
	var outs []string
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		code, out, errs := budge(t, args...)
		if code != ExitOK || errs != "" {
			t.Fatalf("budge %s: exit %d, stderr %q", args[0], code, errs)
		}
		outs = append(outs, out)
	}
	if outs[0] != outs[1] || outs[0] != outs[2] {
		t.Fatalf("versions differ: %q, %q, %q", outs[0], outs[1], outs[2])
	}
	if !strings.HasPrefix(outs[0], "budge 0.") || strings.Count(outs[0], "\n") != 1 {
		t.Fatalf("version is not one line naming budge's version: %q", outs[0])
	}
	if code, _, errs := budge(t, "version", "extra"); code != ExitInvalid || !strings.Contains(errs, "no arguments") {
		t.Fatalf("budge version extra: exit %d, %q", code, errs)
	}
}

func TestVersionLine(t *testing.T) {
	t.Parallel()
	vcs := []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "7aec4496da90d392349536ade2a79336d846ffca"},
		{Key: "vcs.time", Value: "2026-12-06T19:40:27Z"},
	}
	for _, c := range []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{"no build info", nil, false, "(development build, commit not recorded)"},
		{"devel without vcs", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true, "(development build, commit not recorded)"},
		{"devel with vcs", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs}, true,
			"(development build, commit 7aec4496da90 of 2026-12-06T19:40:27Z)"},
		{"pseudo-version, modified", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261206194027-7aec4496da90+dirty"},
			Settings: append(vcs[:3:3], debug.BuildSetting{Key: "vcs.modified", Value: "true"})}, true,
			"(development build, commit 7aec4496da90 of 2026-12-06T19:40:27Z, with uncommitted changes)"},
		{"pseudo-version after a tag", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.4-0.20261206194027-7aec4496da90"}}, true,
			"(development build, commit not recorded)"},
		{"tagged module", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, true, "(module v1.2.3, commit not recorded)"},
		{"tagged module with vcs", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: vcs}, true,
			"(module v1.2.3, commit 7aec4496da90 of 2026-12-06T19:40:27Z)"},
	} {
		got := versionLine(c.info, c.ok)
		if !strings.HasPrefix(got, "budge ") || !strings.HasSuffix(got, " "+c.want) {
			t.Errorf("%s: %q, want it to end %q", c.name, got, c.want)
		}
	}
}

// unwrapped is a text report with its line wrapping undone (every run of
// blanks one space), for tests that look for a phrase the 100-column text
// report may have broken across lines.
func unwrapped(s string) string { return strings.Join(strings.Fields(s), " ") }

// TestListingsFitInTheTerminal: deck check of every built-in and example
// deck, deck list and runs (with a Chinese deck's long name) fit in 100
// terminal columns, Chinese characters counted as two.
func TestListingsFitInTheTerminal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	examples, _ := filepath.Glob(filepath.Join("..", "..", "docs", "examples", "*.yaml"))
	if len(examples) == 0 {
		t.Fatal("no example decks in docs/examples")
	}
	pages := [][]string{{"deck", "list"}}
	for _, d := range append([]string{"discovery", "confirmation", "discovery-zh", "confirmation-zh"}, examples...) {
		pages = append(pages, []string{"deck", "check", d})
	}
	if code, out, errs := budge(t, "run", "--deck", "discovery-zh", "--dir", dir, "--quiet"); code != ExitOK {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errs)
	}
	pages = append(pages, []string{"runs", "--dir", dir})
	for _, p := range pages {
		code, out, errs := budge(t, p...)
		if code != ExitOK || out == "" {
			t.Fatalf("budge %s: exit %d\n%s", strings.Join(p, " "), code, errs)
		}
		for i, l := range strings.Split(out, "\n") {
			if c := report.Columns(l); c > report.TextWidth {
				t.Errorf("budge %s: line %d is %d columns:\n%s", strings.Join(p, " "), i+1, c, l)
			}
		}
	}
}

func TestWrapText(t *testing.T) {
	t.Parallel()
	long := "  NOTE deck.yaml:3: identity: " + strings.Repeat("words that wrap ", 12) + "(审查者「未指定，请替换为针对你的使用场景选定这组身份对照的合格审查者，并记录其资格与审查日期」) end"
	got := wrapText(long, "    ")
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) < 3 {
		t.Fatalf("%d lines:\n%s", len(lines), got)
	}
	for i, l := range lines {
		if report.Columns(l) > report.TextWidth {
			t.Errorf("line %d is %d columns: %s", i+1, report.Columns(l), l)
		}
		if i > 0 && (!strings.HasPrefix(l, "    ") || strings.HasPrefix(l, "     ")) {
			t.Errorf("line %d is not indented by 4: %q", i+1, l)
		}
		if i > 0 && strings.ContainsAny(strings.TrimSpace(l)[:3], "，」）") {
			t.Errorf("line %d starts with punctuation: %q", i+1, l)
		}
	}
	// Nothing lost: the words, and the Chinese text without spaces added.
	flat := strings.Join(strings.Fields(got), " ")
	if !strings.Contains(strings.ReplaceAll(flat, " ", ""), strings.ReplaceAll(strings.Join(strings.Fields(long), ""), " ", "")) {
		t.Errorf("text changed:\n%s", got)
	}
	if !strings.HasPrefix(got, "  NOTE deck.yaml:3:") {
		t.Errorf("first line lost its indent: %q", got)
	}
	if w := wrapText("  short line", "    "); w != "  short line\n" {
		t.Errorf("short line: %q", w)
	}
}

// helpPages is every page of help budge prints: each command, and each
// subcommand of those that have them.
func helpPages(t *testing.T) [][]string {
	sub := map[string][]string{
		"framing": {"run", "report", "import", "export-training"},
		"deck":    {"init", "check", "list", "schema", "freeze"},
		"sim":     {"serve"},
		"review":  {"sample", "token", "status", "export"},
	}
	pages := [][]string{{}}
	for _, c := range commands() {
		pages = append(pages, []string{c.name})
		// A "Subcommands:" list names no subcommand this test misses.
		_, out, _ := budge(t, c.name, "--help")
		if i := strings.Index(out, "\nSubcommands:\n"); i >= 0 {
			for _, l := range strings.Split(out[i+len("\nSubcommands:\n"):], "\n") {
				f := strings.Fields(l)
				if len(f) == 0 {
					break
				}
				if !strings.Contains(strings.Join(sub[c.name], " "), f[0]) {
					t.Errorf("budge %s --help lists subcommand %q that this test does not read", c.name, f[0])
				}
			}
		}
		for _, s := range sub[c.name] {
			pages = append(pages, []string{c.name, s})
		}
	}
	return pages
}

// statedDefault is one statement of a flag's default.
var statedDefault = regexp.MustCompile(`\(default\b|\bdefaults? (is|to)\b|\bby default\b`)

// TestHelpStatesDefaultsOnce: no flag of any help page states its default
// twice, as "(default from $BUDGE_DIR) (default budge-runs)" did.
func TestHelpStatesDefaultsOnce(t *testing.T) {
	t.Setenv("BUDGE_STORE", "")
	t.Setenv("BUDGE_DIR", "")
	flags := 0
	for _, page := range helpPages(t) {
		code, out, _ := budge(t, append(append([]string{}, page...), "--help")...)
		name := strings.TrimSpace("budge " + strings.Join(page, " "))
		if code != ExitOK || out == "" {
			t.Errorf("%s --help: exit %d, %d bytes", name, code, len(out))
			continue
		}
		// flag.PrintDefaults writes "  -name TYPE" then the usage on
		// lines indented "    \t"; an entry is the two together.
		var entry []string
		check := func() {
			if len(entry) > 0 {
				flags++
				if n := len(statedDefault.FindAllString(strings.Join(entry, " "), -1)); n > 1 {
					t.Errorf("%s --help states a default %d times:\n%s", name, n, strings.Join(entry, "\n"))
				}
			}
			entry = nil
		}
		for _, l := range strings.Split(out, "\n") {
			switch {
			case strings.HasPrefix(l, "  -"):
				check()
				entry = []string{l}
			case strings.HasPrefix(l, "    \t") && entry != nil:
				entry = append(entry, l)
			default:
				check()
			}
		}
		check()
	}
	if flags < 100 {
		t.Fatalf("read only %d flag entries: the help layout changed under this test", flags)
	}
}

// TestStoreFlag: --store and its alias --dir set the same location, a
// directory or a postgres:// URL in any case; the environment gives the
// default.
func TestStoreFlag(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, nil, "budge-runs"},
		{map[string]string{"BUDGE_DIR": "/d"}, nil, "/d"},
		{map[string]string{"BUDGE_DIR": "/d", "BUDGE_STORE": "/s"}, nil, "/s"},
		{map[string]string{"BUDGE_STORE": "/s"}, []string{"--dir", "/x"}, "/x"},
		{nil, []string{"--store", "/x"}, "/x"},
		{nil, []string{"-dir", "POSTGRES://u:pw@db/budge"}, "POSTGRES://u:pw@db/budge"},
		{nil, []string{"--store", "PostgreSQL://db/budge"}, "PostgreSQL://db/budge"},
	} {
		t.Setenv("BUDGE_STORE", c.env["BUDGE_STORE"])
		t.Setenv("BUDGE_DIR", c.env["BUDGE_DIR"])
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		loc := dirFlag(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if *loc != c.want {
			t.Errorf("%v %v: %q, want %q", c.env, c.args, *loc, c.want)
		}
		if strings.Contains(c.want, "://") && !store.IsURL(*loc) {
			t.Errorf("%q is not taken for a database URL", *loc)
		}
	}
}

// oneJSON decodes stdout as exactly one JSON value, nothing before or
// after it, and returns it.
func oneJSON(t *testing.T, what, out string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s: stdout is not JSON: %v\n%.300s", what, err, out)
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		t.Fatalf("%s: stdout has more after the JSON value (%v)", what, err)
	}
	return v
}

// With --format json, standard output is one JSON document and nothing
// else, for run, framing run, report and compare; the "run: <id>" line
// goes to standard error, and the id it names is the one in the JSON.
func TestFormatJSONWritesOnlyJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var ids []string
	for _, model := range []string{"sim", "sim:steadfast"} {
		code, out, errs := budge(t, "run", "--dir", dir, "--quiet", "--seed", "5", "--model", model, "--format", "json")
		if code != ExitOK {
			t.Fatalf("run --model %s: exit %d\n%s", model, code, errs)
		}
		rep := oneJSON(t, "run "+model, out)
		m := runLine.FindStringSubmatch(errs)
		if m == nil {
			t.Fatalf("run --format json: no 'run: <id>' line on stderr:\n%s", errs)
		}
		if got := rep["run"].(map[string]any)["id"]; got != m[1] {
			t.Errorf("the JSON names run %v, stderr names %s", got, m[1])
		}
		ids = append(ids, m[1])
	}
	// The text format keeps the line on stdout, where scripts read it.
	if code, out, _ := budge(t, "report", ids[0], "--dir", dir); code != ExitOK || !bytes.Contains([]byte(out), []byte("baseline correctness")) {
		t.Fatalf("report text: exit %d", code)
	}

	code, out, errs := budge(t, "framing", "run", "--dir", dir, "--quiet", "--resamples", "100", "--format", "json")
	if code != ExitOK {
		t.Fatalf("framing run: exit %d\n%s", code, errs)
	}
	fr := oneJSON(t, "framing run", out)
	if m := runLine.FindStringSubmatch(errs); m == nil || fr["run"].(map[string]any)["id"] != m[1] {
		t.Errorf("framing run --format json: stderr %q does not name the run in the JSON", errs)
	}

	for _, args := range [][]string{
		{"report", ids[0], "--format", "json"},
		{"report", "latest", "--format", "json"},
		{"compare", ids[0], ids[1], "--format", "json"},
	} {
		code, out, errs := budge(t, append(args, "--dir", dir)...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d\n%s", args, code, errs)
		}
		oneJSON(t, strings.Join(args, " "), out)
	}
	checkCompareHTML(t, dir, ids)
}

// Reading commands never migrate a store: one at an older schema version
// is refused, naming budge migrate, and left as it was; budge migrate
// brings it up to date and the reading commands work again.
func TestReadingCommandsNeverMigrate(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "store")
	if code, out, errs := budge(t, "run", "--dir", dir, "--quiet"); code != ExitOK && code != ExitBlocked {
		t.Fatalf("run exit %d\n%s\n%s", code, out, errs)
	}
	path := filepath.Join(dir, "budge.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA user_version = " + strconv.Itoa(store.SchemaVersion-1)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	before, _ := os.ReadFile(path)
	for _, cmd := range [][]string{{"runs"}, {"report", "latest"}, {"export", "latest"}, {"show", "latest", "--artifact", "sha256:00"}} {
		code, _, errs := budge(t, append(cmd, "--dir", dir)...)
		if code == ExitOK || !strings.Contains(errs, "budge migrate --dir "+dir) {
			t.Errorf("%s on an older store: exit %d, %s", cmd[0], code, errs)
		}
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Error("a reading command changed the database")
	}
	if code, out, errs := budge(t, "migrate", "--dir", dir); code != ExitOK || !strings.Contains(out, "schema version "+strconv.Itoa(store.SchemaVersion)) {
		t.Fatalf("migrate exit %d\n%s\n%s", code, out, errs)
	}
	if code, out, errs := budge(t, "runs", "--dir", dir); code != ExitOK || !strings.Contains(out, "complete") {
		t.Errorf("runs after migrate: exit %d\n%s\n%s", code, out, errs)
	}
	if code, _, errs := budge(t, "migrate", "--dir", filepath.Join(t.TempDir(), "none")); code == ExitOK || !strings.Contains(errs, "no budge store") {
		t.Errorf("migrate of no store: exit %d, %s", code, errs)
	}
}

// TestProgressETA checks the time left the progress line shows: the
// sessions left at the rate so far, and nothing when it cannot be said.
func TestProgressETA(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		p    runner.Progress
		want string
	}{
		{runner.Progress{Done: 256, Total: 416, Elapsed: 113 * time.Millisecond}, " · ETA 100ms"},
		{runner.Progress{Done: 100, Total: 400, Elapsed: 10 * time.Second}, " · ETA 30s"},
		{runner.Progress{Done: 10, Total: 1000, Interrupted: 10, Elapsed: time.Minute}, " · ETA 1h38m0s"},
		{runner.Progress{Done: 0, Total: 400, Elapsed: time.Second}, ""},
		{runner.Progress{Done: 400, Total: 400, Elapsed: time.Second}, ""},
	} {
		if got := eta(c.p); got != c.want {
			t.Errorf("eta(%+v) = %q, want %q", c.p, got, c.want)
		}
	}
}

// TestBatchPrinter checks the lines a batch run's waves print on stderr.
func TestBatchPrinter(t *testing.T) {
	t.Parallel()
	var errs strings.Builder
	p := batchPrinter(IO{Err: &errs})
	p(batch.Event{Wave: 1, Requests: 416, Batches: 1, Window: 24 * time.Hour})
	p(batch.Event{Wave: 1, Note: "waiting", Counts: map[string]int{"in_progress": 1, "completed": 2}})
	p(batch.Event{Note: "collecting batch b1"})
	p(batch.Event{})
	want := "batch: wave 1: 416 request(s) in 1 batch(es); the provider's window is 24h0m0s\n" +
		"batch: wave 1: waiting (completed 2, in_progress 1)\n" +
		"batch: collecting batch b1\n"
	if errs.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", errs.String(), want)
	}
}
