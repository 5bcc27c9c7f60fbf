package cli

import (
	"context"
	"encoding/json"
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
