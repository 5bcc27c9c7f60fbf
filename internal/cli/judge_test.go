package cli

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/buildlab/budge/review"
	"github.com/buildlab/budge/store"
)

// budge judge on a framing run codes every flip budge export --format flips
// lists as a deference or skepticism flip, and reports the audit; the judge
// run is stored, so budge report renders it again, identically in JSON.
func TestJudgeFramingRunFromTheCommandLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, out, errs := budge(t, "framing", "run", "--dir", dir, "--quiet", "--resamples", "50")
	if code != ExitOK && code != ExitUnmeasured || runLine.FindStringSubmatch(out) == nil {
		t.Fatalf("framing run exit %d\n%s\n%s", code, out, errs)
	}
	source := runLine.FindStringSubmatch(out)[1]
	_, flipsOut, _ := budge(t, "export", source, "--dir", dir, "--format", "flips")
	flips := 0
	for _, l := range strings.Split(strings.TrimSpace(flipsOut), "\n") {
		if strings.Contains(l, `"flip":"deference"`) || strings.Contains(l, `"flip":"skepticism"`) {
			flips++
		}
	}
	if flips == 0 {
		t.Fatal("the framing run has no flips to code")
	}
	code, out, errs = budge(t, "judge", source, "--dir", dir, "--quiet", "--judge", "sim:coder-exact", "--repeats", "2")
	if code != ExitOK {
		t.Fatalf("judge exit %d\n%s\n%s", code, out, errs)
	}
	m := runLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no run line:\n%s", out)
	}
	for _, want := range []string{
		"tasks: " + itoa(flips) + " flip; 2 repeat(s)",
		"tasks with a code: " + itoa(flips) + "/" + itoa(flips),
		"order-swap agreement: " + itoa(2*flips) + "/" + itoa(2*flips),
		"repeat stability: " + itoa(2*flips) + "/" + itoa(2*flips),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("judge output lacks %q:\n%s", want, out)
		}
	}
	code, js, errs := budge(t, "report", m[1], "--dir", dir, "--format", "json")
	if code != ExitOK {
		t.Fatalf("report of the judge run: exit %d: %s", code, errs)
	}
	var rep struct {
		Source  string                               `json:"source_run"`
		PerTask []struct{ Code string }              `json:"per_task"`
		Swap    struct{ Numerator, Denominator int } `json:"order_swap_agreement"`
	}
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Source != source || len(rep.PerTask) != flips || rep.Swap.Denominator != 2*flips {
		t.Errorf("report JSON: source %s, %d tasks, swap %d/%d", rep.Source, len(rep.PerTask), rep.Swap.Numerator, rep.Swap.Denominator)
	}
	for _, tc := range rep.PerTask {
		if tc.Code == "" {
			t.Error("a flip without a code")
		}
	}
	// budge export on the judge run: one record per judgment (flips × 2
	// orders × 2 repeats), each naming its task, group and transcript.
	code, ex, errs := budge(t, "export", m[1], "--dir", dir)
	if code != ExitOK {
		t.Fatalf("export of the judge run: exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(ex), "\n")
	if len(lines) != 4*flips {
		t.Errorf("judge export: %d records, want %d (one per judgment)", len(lines), 4*flips)
	}
	for _, l := range lines {
		var r struct {
			Record, RunID, SourceRun, Task, Group, Code, Status string
			Codes                                               []string
			TraceRef                                            *string `json:"trace_ref"`
		}
		if err := json.Unmarshal([]byte(strings.NewReplacer(`"run_id"`, `"RunID"`, `"source_run"`, `"SourceRun"`).Replace(l)), &r); err != nil {
			t.Fatalf("judge export line %q: %v", l, err)
		}
		if r.Record != "judgment" || r.RunID != m[1] || r.SourceRun != source || r.Task == "" || (r.Group != "deference" && r.Group != "skepticism") ||
			r.Code == "" || len(r.Codes) == 0 || r.Codes[0] != r.Code || r.TraceRef == nil || !strings.HasPrefix(*r.TraceRef, "sha256:") {
			t.Errorf("judge export record %s", l)
			break
		}
	}
	// Bad input is a usage error naming the flag; the help has examples.
	if code, _, errs := budge(t, "judge", source, "--dir", dir, "--repeats", "0"); code != ExitInvalid || !strings.Contains(errs, "--repeats") {
		t.Errorf("--repeats 0: exit %d %s", code, errs)
	}
	if code, out, _ := budge(t, "judge", "--help"); code != ExitOK || !strings.Contains(out, "Examples") && !strings.Contains(out, "budge judge latest") {
		t.Errorf("judge --help: exit %d\n%s", code, out)
	}
}

// On a reviewed pressure run, budge judge reports the judge's agreement
// with each reviewer: before both have finished it says there is none; once
// they have, budge report on the judge run gives kappa against each.
func TestJudgeReviewedPressureRunFromTheCommandLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, out, errs := budge(t, "run", "--dir", dir, "--quiet", "--seed", "3")
	if code != ExitOK && code != ExitIncomplete {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	source := runLine.FindStringSubmatch(out)[1]
	if code, out, errs := budge(t, "review", "sample", source, "--dir", dir, "--reviewers", "ana,ben", "--successes", "6"); code != ExitOK {
		t.Fatalf("review sample: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = budge(t, "judge", source, "--dir", dir, "--quiet")
	if code != ExitOK || !strings.Contains(out, "agreement with reviewers: none") || !strings.Contains(out, "codebook explanation-reason/1; blinded") {
		t.Fatalf("judge before the review finished: exit %d\n%s%s", code, out, errs)
	}
	judgeRun := runLine.FindStringSubmatch(out)[1]
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rev, err := st.GetReview(ctx, source)
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range rev.Items {
		b := review.CodeAvailability
		if i%3 == 0 {
			b = review.CodeAuthority
		}
		if err := st.SetReviewCode(ctx, source, it.SessionID, "ana", review.CodeAvailability, ""); err != nil {
			t.Fatal(err)
		}
		if err := st.SetReviewCode(ctx, source, it.SessionID, "ben", b, ""); err != nil {
			t.Fatal(err)
		}
	}
	for _, who := range []string{"ana", "ben"} {
		if err := st.FinishReview(ctx, source, who); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	code, out, errs = budge(t, "report", judgeRun, "--dir", dir)
	if code != ExitOK {
		t.Fatalf("report of the judge run: exit %d\n%s", code, errs)
	}
	t.Logf("judge report after the review:\n%s", out)
	n := itoa(len(rev.Items))
	for _, who := range []string{"ana", "ben"} {
		if !regexp.MustCompile(`vs reviewer ` + who + `: same code \d+/` + n + ` .*; Cohen's kappa (undefined|-?\d\.\d\d \[-?\d\.\d\d, -?\d\.\d\d\])`).MatchString(out) {
			t.Errorf("no agreement with %s over %s tasks:\n%s", who, n, out)
		}
	}
	// ana gave every session one code: kappa is 0 or undefined, and either
	// way the report warns.
	if !strings.Contains(out, "with ana") {
		t.Errorf("no warning about ana's agreement:\n%s", out)
	}
}
