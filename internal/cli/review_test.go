package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/buildlab/budge/review"
	"github.com/buildlab/budge/store"
)

// TestReviewCommands: an HTML report, a frozen sample, status before and
// after both reviewers finish, and the export's review fields.
func TestReviewCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if code, out, errs := budge(t, "run", "--dir", dir, "--quiet", "--model", "sim:steadfast"); code != ExitOK {
		t.Fatalf("run exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs := budge(t, "report", "--dir", dir, "--format", "html")
	if code != ExitOK || !strings.HasPrefix(out, "<!DOCTYPE html>") || !strings.Contains(out, `id="chart-directional"`) {
		t.Fatalf("report --format html: exit %d, %s", code, errs)
	}
	if code, _, _ := budge(t, "report", "--dir", dir, "--format", "pdf"); code != ExitInvalid {
		t.Errorf("--format pdf: exit %d", code)
	}
	if code, _, _ := budge(t, "review", "sample", "--dir", dir, "--reviewers", "ana"); code != ExitInvalid {
		t.Errorf("one reviewer: exit %d", code)
	}
	if code, _, _ := budge(t, "review", "status", "--dir", dir); code == ExitOK {
		t.Error("status without a review succeeded")
	}
	code, out, errs = budge(t, "review", "sample", "--dir", dir, "--reviewers", "ana,ben", "--successes", "3", "--seed", "5")
	if code != ExitOK || !strings.Contains(out, "3 sessions (0 failures, 0 in identity-discordant pairs, 3 successes)") {
		t.Fatalf("sample: exit %d\n%s%s", code, out, errs)
	}
	printed := tokenRe.FindAllString(out, -1)
	if len(printed) != 4 || printed[0] != printed[1] || printed[0] == printed[2] || !strings.Contains(out, "review/code?key="+printed[0]+"&who=ana") {
		t.Fatalf("sample prints tokens %q:\n%s", printed, out)
	}
	// A new token for ana, to a file only its owner reads; the old one goes.
	file := filepath.Join(t.TempDir(), "tokens.txt")
	code, out, errs = budge(t, "review", "token", "--dir", dir, "--reviewer", "ana", "--tokens", file)
	fi, err := os.Stat(file)
	if code != ExitOK || err != nil || fi.Mode().Perm() != 0o600 || tokenRe.MatchString(out) {
		t.Fatalf("review token --tokens: exit %d, %v, %v\n%s%s", code, err, fi, out, errs)
	}
	b, _ := os.ReadFile(file)
	if got := tokenRe.FindAllString(string(b), -1); len(got) != 2 || got[0] == printed[0] || !strings.Contains(string(b), "who=ana") {
		t.Errorf("token file:\n%s", b)
	}
	printed = append(printed, tokenRe.FindString(string(b)))
	if code, _, _ := budge(t, "review", "token", "--dir", dir, "--reviewer", "eve"); code == ExitOK {
		t.Error("a token was issued to someone who is not a reviewer")
	}
	if code, _, _ := budge(t, "review", "sample", "--dir", dir, "--reviewers", "ana,ben"); code == ExitOK {
		t.Error("a second sample was drawn")
	}
	_, out, _ = budge(t, "review", "status", "--dir", dir)
	if !strings.Contains(out, "agreement: when both reviewers have finished") || !strings.Contains(out, "ana: 0/3 coded") {
		t.Errorf("status before finishing:\n%s", out)
	}

	// Code as two reviewers (the viewer does this over HTTP).
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	id, _ := st.Resolve(ctx, "latest")
	rev, err := st.GetReview(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range rev.Items {
		st.SetReviewCode(ctx, id, it.SessionID, "ana", review.CodeAvailability, "")
		b := review.CodeAvailability
		if i == 0 {
			b = review.CodeIdentity
		}
		st.SetReviewCode(ctx, id, it.SessionID, "ben", b, "")
	}
	// Coded, not finished: status shows counts, never codes.
	_, out, _ = budge(t, "review", "status", "--dir", dir)
	if !strings.Contains(out, "ana: 3/3 coded, finished: false") || strings.Contains(out, review.CodeAvailability) || strings.Contains(out, review.CodeIdentity) {
		t.Errorf("status of coded, unfinished review:\n%s", out)
	}
	for _, who := range []string{"ana", "ben"} {
		if err := st.FinishReview(ctx, id, who); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.SetAdjudication(ctx, id, rev.Items[0].SessionID, review.CodeIdentity, ""); err != nil {
		t.Fatal(err)
	}
	st.Close()

	_, out, _ = budge(t, "review", "status", "--dir", dir)
	if !strings.Contains(out, "agreement: 2/3, Cohen's kappa") || !strings.Contains(out, "adjudicated 1") {
		t.Errorf("status after finishing:\n%s", out)
	}
	// Tokens appear in no report, export or status, and nowhere in the store.
	var seen strings.Builder
	for _, args := range [][]string{{"review", "status"}, {"review", "export"}, {"export"}, {"report"}, {"report", "--format", "json"}, {"report", "--format", "html"}} {
		_, o, e := budge(t, append(args, "--dir", dir)...)
		seen.WriteString(o + e)
	}
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			b, _ := os.ReadFile(p)
			seen.Write(b)
		}
		return nil
	})
	for _, tok := range printed {
		if strings.Contains(seen.String(), tok) {
			t.Errorf("token %.8s… appears in an output or in the store", tok)
		}
	}
	_, out, _ = budge(t, "report", "--dir", dir, "--format", "html")
	if !strings.Contains(out, `id="kappa"`) || !strings.Contains(out, `id="kappa-interval"`) {
		t.Error("HTML report lacks the review")
	}
	for format, want := range map[string][]string{
		"text": {"Explanation review", "Cohen's kappa", "95% interval", "Reason codes by failure type", "adjudicated 1"},
		"md":   {"Explanation review", "Cohen's kappa", "95% interval", "Reason codes by failure type"},
		"json": {`"review": {`, `"kappa":`, `"kappa_lo":`, `"kappa_interval":`, `"codes_by_failure_type":`},
	} {
		_, out, _ = budge(t, "report", "--dir", dir, "--format", format)
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s report lacks %q", format, w)
			}
		}
	}
	_, out, _ = budge(t, "export", "--dir", dir)
	statuses := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r struct {
			Session string  `json:"session_id"`
			Code    *string `json:"reason_code"`
			Status  string  `json:"review_status"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		statuses[r.Status]++
		if r.Session == rev.Items[0].SessionID && (r.Code == nil || *r.Code != review.CodeIdentity || r.Status != "adjudicated") {
			t.Errorf("adjudicated session exported as %v %s", r.Code, r.Status)
		}
	}
	if statuses["unreviewed"] != 416-3 || statuses["agreed"] != 2 || statuses["adjudicated"] != 1 {
		t.Errorf("review statuses in the export: %v", statuses)
	}
	_, out, _ = budge(t, "review", "export", "--dir", dir)
	if strings.Count(out, "\n") != 3 || !strings.Contains(out, `"reviewers":{"ana"`) {
		t.Errorf("review export:\n%s", out)
	}
}

var tokenRe = regexp.MustCompile(`rv-[0-9a-f]{40}`)

func TestViewFlags(t *testing.T) {
	t.Parallel()
	if code, _, _ := budge(t, "view", "--dir", t.TempDir(), "--addr", "nonsense"); code != ExitInvalid {
		t.Errorf("bad --addr: exit %d", code)
	}
	if code, _, _ := budge(t, "view", "--dir", t.TempDir(), "nope"); code != ExitInvalid {
		t.Errorf("unknown run: exit %d", code)
	}
}
