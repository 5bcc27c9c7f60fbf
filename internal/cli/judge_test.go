package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// budge judge on a framing run codes every flip budge export --format flips
// lists as a deference or skepticism flip, and reports the audit; the judge
// run is stored, so budge report renders it again, identically in JSON.
func TestJudgeFramingRunFromTheCommandLine(t *testing.T) {
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
	// Bad input is a usage error naming the flag; the help has examples.
	if code, _, errs := budge(t, "judge", source, "--dir", dir, "--repeats", "0"); code != ExitInvalid || !strings.Contains(errs, "--repeats") {
		t.Errorf("--repeats 0: exit %d %s", code, errs)
	}
	if code, out, _ := budge(t, "judge", "--help"); code != ExitOK || !strings.Contains(out, "Examples") && !strings.Contains(out, "budge judge latest") {
		t.Errorf("judge --help: exit %d\n%s", code, out)
	}
}
