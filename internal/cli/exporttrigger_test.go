package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/review"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
)

type triggerRec struct {
	Session string   `json:"session_id"`
	Trigger []string `json:"decision_trigger"`
}

// exportTriggers reads the export of the latest run in dir: the sessions
// with a decision trigger, and how many sessions each reason names.
func exportTriggers(t *testing.T, dir string) (sessions []string, counts map[string]int) {
	t.Helper()
	code, out, errs := budge(t, "export", "--dir", dir, "latest")
	if code != ExitOK {
		t.Fatalf("export: exit %d %s", code, errs)
	}
	counts = map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r triggerRec
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.Trigger == nil {
			t.Fatalf("record without a decision_trigger list (%v): %.300s", err, sc.Text())
		}
		if len(r.Trigger) > 0 {
			sessions = append(sessions, r.Session)
		}
		for _, reason := range r.Trigger {
			counts[reason]++
		}
	}
	slices.Sort(sessions)
	return sessions, counts
}

// reportDecision is the latest run's decision as the JSON report has it.
func reportDecision(t *testing.T, dir string) (sessions, reasons []string, count int) {
	t.Helper()
	code, out, errs := budge(t, "report", "--dir", dir, "latest", "--format", "json")
	var rep struct {
		Decision struct {
			Reasons  []string `json:"reasons"`
			Sessions []string `json:"triggering_sessions"`
			Count    int      `json:"triggering_session_count"`
		} `json:"decision"`
	}
	if code != ExitOK || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("report json: exit %d %s", code, errs)
	}
	d := rep.Decision
	return d.Sessions, d.Reasons, d.Count
}

func checkTriggersMatch(t *testing.T, what, dir string) map[string]int {
	t.Helper()
	got, counts := exportTriggers(t, dir)
	// The report names the first ListedTriggers by id and counts them all.
	want, reasons, n := reportDecision(t, dir)
	if len(want) == 0 || len(got) != n || !slices.Equal(got[:min(len(got), pressure.ListedTriggers)], want) {
		t.Errorf("%s: export names %d triggering sessions, the report counts %d and names %d:\nexport %q\nreport %q", what, len(got), n, len(want), got, want)
	}
	var fromExport []string
	for r, n := range counts {
		fromExport = append(fromExport, fmt.Sprintf("%s: %d session(s)", r, n))
	}
	slices.Sort(fromExport)
	if !slices.Equal(fromExport, reasons) {
		t.Errorf("%s: reasons counted from the export\n %q\nthe report's\n %q", what, fromExport, reasons)
	}
	return counts
}

// "budge export lists them all": the export's decision_trigger field names
// exactly the decision's triggering sessions, with the same reasons and
// counts, on both evidence channels and with a reviewer-agreed exception.
func TestExportDecisionTrigger(t *testing.T) {
	dir := t.TempDir()
	runID(t, dir, "--model", "sim:pushover") // far more than the report's dozen
	counts := checkTriggersMatch(t, "pushover", dir)
	if counts["unsupported reversal (authority)"] == 0 || counts["verified correction not applied"] == 0 {
		t.Errorf("pushover: reasons %v", counts)
	}

	msg := t.TempDir()
	runID(t, msg, "--channel", "message")
	counts = checkTriggersMatch(t, "message channel", msg)
	if counts["user-role evidence not applied"] == 0 || counts["verified correction not applied"] != 0 {
		t.Errorf("message channel: reasons %v; want user-role evidence wording", counts)
	}

	// A steadfast run with one session both reviewers code as an invented
	// exception: it is the one triggering session, in the export too.
	rev := t.TempDir()
	id := runID(t, rev, "--model", "sim:steadfast")
	if code, out, errs := budge(t, "review", "sample", "--dir", rev, "--reviewers", "ana,ben", "--successes", "3", "--seed", "5"); code != ExitOK {
		t.Fatalf("review sample: exit %d %s %s", code, out, errs)
	}
	ctx := context.Background()
	st, err := store.Open(rev)
	if err != nil {
		t.Fatal(err)
	}
	state, err := review.Load(ctx, st, id)
	if err != nil || state.Review == nil || len(state.Review.Items) == 0 {
		t.Fatalf("review: %v", err)
	}
	target := state.Review.Items[0].SessionID
	for _, who := range []string{"ana", "ben"} {
		for _, it := range state.Review.Items {
			code := review.CodeAvailability
			if it.SessionID == target {
				code = review.CodeException
			}
			if err := st.SetReviewCode(ctx, id, it.SessionID, who, code, ""); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.FinishReview(ctx, id, who); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	counts = checkTriggersMatch(t, "reviewed exception", rev)
	if counts[study.ReviewedException] != 1 {
		t.Errorf("reviewed exception: reasons %v", counts)
	}
}
