package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
)

// budge compare --format html writes the run diff as one self-contained
// file: no script and no resource from anywhere (everything inline), the
// verdict budge compare computes, and every session whose scored outcome
// differs between the two runs as a changed cell.
func TestCompareHTMLIsSelfContainedAndShowsChangedCells(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var ids []string
	for _, model := range []string{"sim", "sim:steadfast"} {
		code, out, errs := budge(t, "run", "--dir", dir, "--quiet", "--seed", "11", "--model", model)
		m := runLine.FindStringSubmatch(out + errs)
		if code != ExitOK || m == nil {
			t.Fatalf("run %s: exit %d\n%s\n%s", model, code, out, errs)
		}
		ids = append(ids, m[1])
	}
	file := filepath.Join(dir, "diff.html")
	if code, out, errs := budge(t, "compare", "--dir", dir, "--format", "html", "-o", file, ids[0], ids[1]); code != ExitOK {
		t.Fatalf("compare --format html: exit %d\n%s\n%s", code, out, errs)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)

	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`(?i)<script`), regexp.MustCompile(`(?i)<link`), regexp.MustCompile(`(?i)<img`),
		regexp.MustCompile(`(?i)\ssrc\s*=`), regexp.MustCompile(`(?i)href\s*=\s*"?(https?:)?//`),
		regexp.MustCompile(`(?i)url\(`), regexp.MustCompile(`(?i)@import`),
	} {
		if loc := bad.FindStringIndex(page); loc != nil {
			t.Errorf("the file is not self-contained: %q at byte %d", page[loc[0]:min(len(page), loc[1]+40)], loc[0])
		}
	}
	if !strings.Contains(page, "<style>") {
		t.Error("the file has no inline style sheet")
	}

	// The verdict is budge compare's own.
	code, js, errs := budge(t, "compare", "--dir", dir, "--format", "json", ids[0], ids[1])
	if code != ExitOK {
		t.Fatalf("compare json: exit %d %s", code, errs)
	}
	var cmp struct {
		Sections []struct {
			Comparison struct {
				Verdict string `json:"verdict"`
				Text    string `json:"text"`
			} `json:"comparison"`
		} `json:"comparisons"`
	}
	if err := json.Unmarshal([]byte(js), &cmp); err != nil || len(cmp.Sections) != 1 || cmp.Sections[0].Comparison.Verdict == "" {
		t.Fatalf("compare json: %v\n%.300s", err, js)
	}
	if v := cmp.Sections[0].Comparison.Verdict; !strings.Contains(page, "Verdict ("+v+")") {
		t.Errorf("the file lacks the verdict %q", v)
	}
	if !strings.Contains(page, "McNemar exact p") {
		t.Error("the file lacks the paired tests")
	}

	// Every session whose first answer, final answer or reversal differs
	// is a changed cell; one that is scored the same in every field is not.
	outs := [2]map[string]pressure.Outcome{}
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i, id := range ids {
		outs[i] = map[string]pressure.Outcome{}
		err := study.EachOutcome(context.Background(), st, id, func(o *pressure.Outcome, _ string) error {
			outs[i][o.ID()] = *o
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	rowRe := regexp.MustCompile(`<tr class="(changed|same)"><td class="key"><code>([^<]+)</code>`)
	rows := map[string]string{}
	for _, m := range rowRe.FindAllStringSubmatch(page, -1) {
		rows[m[2]] = m[1]
	}
	if len(rows) != len(outs[0]) || len(rows) != 416 {
		t.Fatalf("the file shows %d cells; the runs have %d and %d sessions", len(rows), len(outs[0]), len(outs[1]))
	}
	changed, same := 0, 0
	for id, b := range outs[0] {
		a := outs[1][id]
		differs := b.InitialStatus != a.InitialStatus || b.Reversal.Value != a.Reversal.Value || b.Initial.Selection != a.Initial.Selection ||
			(b.FinalStatus == nil) != (a.FinalStatus == nil) || (b.FinalStatus != nil && *b.FinalStatus != *a.FinalStatus)
		switch {
		case differs && rows[id] != "changed":
			t.Errorf("session %s differs (reversal %s → %s) but is shown as %q", id, b.Reversal.Value, a.Reversal.Value, rows[id])
		case differs:
			changed++
		case rows[id] == "same":
			same++
		}
	}
	if changed == 0 || same == 0 {
		t.Errorf("%d changed and %d unchanged sessions: the profiles should differ in some sessions, not all", changed, same)
	}
	n := strings.Count(page, `<tr class="changed">`)
	if !strings.Contains(page, "416 cells, "+itoa(n)+" changed") {
		t.Errorf("the file does not count its %d changed cells of 416", n)
	}
}

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
	t.Parallel()
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
	t.Parallel()
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
