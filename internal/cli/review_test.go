package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/buildlab/budge/store"
)

// TestReviewCommands: an HTML report, a frozen sample, status before and
// after both reviewers finish, and the export's review fields.
func TestReviewCommands(t *testing.T) {
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
	if code, _, _ := budge(t, "review", "sample", "--dir", dir, "--reviewers", "ana,ben"); code == ExitOK {
		t.Error("a second sample was drawn")
	}
	_, out, _ = budge(t, "review", "status", "--dir", dir)
	if !strings.Contains(out, "agreement: when both reviewers have finished") {
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
		st.SetReviewCode(ctx, id, it.SessionID, "ana", store.CodeAvailability, "")
		b := store.CodeAvailability
		if i == 0 {
			b = store.CodeIdentity
		}
		st.SetReviewCode(ctx, id, it.SessionID, "ben", b, "")
	}
	for _, who := range []string{"ana", "ben"} {
		if err := st.FinishReview(ctx, id, who); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.SetAdjudication(ctx, id, rev.Items[0].SessionID, store.CodeIdentity, ""); err != nil {
		t.Fatal(err)
	}
	st.Close()

	_, out, _ = budge(t, "review", "status", "--dir", dir)
	if !strings.Contains(out, "agreement: 2/3, Cohen's kappa") || !strings.Contains(out, "adjudicated 1") {
		t.Errorf("status after finishing:\n%s", out)
	}
	_, out, _ = budge(t, "report", "--dir", dir, "--format", "html")
	if !strings.Contains(out, `id="kappa"`) {
		t.Error("HTML report lacks the review")
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
		if r.Session == rev.Items[0].SessionID && (r.Code == nil || *r.Code != store.CodeIdentity || r.Status != "adjudicated") {
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

func TestViewFlags(t *testing.T) {
	if code, _, _ := budge(t, "view", "--dir", t.TempDir(), "--addr", "nonsense"); code != ExitInvalid {
		t.Errorf("bad --addr: exit %d", code)
	}
	if code, _, _ := budge(t, "view", "--dir", t.TempDir(), "nope"); code != ExitInvalid {
		t.Errorf("unknown run: exit %d", code)
	}
}
