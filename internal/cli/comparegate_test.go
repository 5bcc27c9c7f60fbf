package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runID runs budge run with args in dir and returns the run id.
func runID(t *testing.T, dir string, args ...string) string {
	t.Helper()
	code, out, errs := budge(t, append([]string{"run", "--dir", dir, "--quiet", "--concurrency", "16"}, args...)...)
	m := runLine.FindStringSubmatch(out)
	if code != ExitOK || m == nil {
		t.Fatalf("run %q: exit %d\n%.600s\n%s", args, code, out, errs)
	}
	return m[1]
}

// compareJSON is the verdict, warnings and advice of each pair.
type compareJSON struct {
	Comparisons []struct {
		Comparison *struct {
			Verdict string   `json:"verdict"`
			Reasons []string `json:"reasons"`
		} `json:"comparison"`
		Warnings []string `json:"warnings"`
		Advice   string   `json:"advice"`
	} `json:"comparisons"`
}

func compareAsJSON(t *testing.T, dir string, args ...string) (int, compareJSON, string) {
	t.Helper()
	code, out, errs := budge(t, append([]string{"compare", "--dir", dir, "--format", "json"}, args...)...)
	var c compareJSON
	if err := json.Unmarshal([]byte(out), &c); err != nil || len(c.Comparisons) == 0 || c.Comparisons[0].Comparison == nil {
		t.Fatalf("compare %q json: exit %d, %v\n%.400s\n%s", args, code, err, out, errs)
	}
	return code, c, errs
}

// compare --fail-on-reject is a gate: a simulator far more moved by
// pressure than the default exits 7 after writing the report, naming the
// rejected pair; without the flag the same pair exits 0. (The verdicts
// themselves are study.TestCompareVerdictsOfProfiles; the advice and
// warnings study.TestCompareConfirmationAdvice.)
func TestCompareFailOnReject(t *testing.T) {
	dir := t.TempDir()
	base := runID(t, dir)
	worse := runID(t, dir, "--model", "sim:pushover")
	code, c, errs := compareAsJSON(t, dir, "--fail-on-reject", base, worse)
	if v := c.Comparisons[0].Comparison; code != ExitRejected || v.Verdict != "worse" || !strings.Contains(errs, "--fail-on-reject: the change is rejected ("+base+" → "+worse+": worse)") {
		t.Errorf("pushover after default: exit %d, verdict %q, stderr %q; want 7, worse, naming the pair", code, v.Verdict, errs)
	}
	if code, out, _ := budge(t, "compare", "--dir", dir, base, worse); code != ExitOK || !strings.Contains(out, "worse") {
		t.Errorf("without --fail-on-reject: exit %d, want 0 and the report", code)
	}
	// A run compared with itself is refused (exit 2), by id or through two
	// arguments that name the same run, and nothing is written.
	for _, args := range [][]string{{worse, worse}, {"latest", "latest"}, {"latest", worse}} {
		code, out, errs := budge(t, append([]string{"compare", "--dir", dir, "--fail-on-reject"}, args...)...)
		if code != ExitInvalid || !strings.Contains(errs, "run "+worse+" is compared with itself") || out != "" {
			t.Errorf("compare %q: exit %d, stdout %.100q, stderr %q; want exit 2 and a clear error", args, code, out, errs)
		}
	}
}

// Exit code 7 is documented where a user looks: compare --help and the
// exit-code table of docs/operations.md, next to every other code.
func TestExitCodesDocumented(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(readme), "## Exit codes")
	if i < 0 {
		t.Fatal("docs/operations.md has no exit-code section")
	}
	table := string(readme[i:])
	for _, code := range []int{ExitOK, ExitError, ExitInvalid, ExitIncomplete, ExitBlocked, ExitSelfTest, ExitUnmeasured, ExitRejected} {
		if !strings.Contains(table, fmt.Sprintf("\n| %d | ", code)) {
			t.Errorf("the exit-code table of docs/operations.md has no row for %d", code)
		}
	}
	if !strings.Contains(table, "| 7 | `budge compare --fail-on-reject`") {
		t.Error("the exit-code row for 7 does not name compare --fail-on-reject")
	}
	_, help, _ := budge(t, "compare", "--help")
	if !strings.Contains(help, "7 --fail-on-reject") || !strings.Contains(help, "-fail-on-reject") {
		t.Errorf("compare --help does not document exit 7:\n%s", help)
	}
}
