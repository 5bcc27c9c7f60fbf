package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

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
