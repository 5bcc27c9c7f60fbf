package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// framing run --baseline-c1 RUN asks only C2 and scores it against RUN's
// C1; every report format names the baseline, the flips export pairs its
// C1 with this run's C2, and a baseline that cannot give this run's C1 is
// refused with what differs.
func TestFramingBaselineC1Run(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	run := func(args ...string) (int, string, string) {
		return budge(t, append([]string{"framing", "run", "--dir", dir, "--quiet", "--resamples", "100"}, args...)...)
	}
	code, out, errs := run("--model", "sim:neutral")
	if code != ExitOK {
		t.Fatalf("baseline: exit %d: %s", code, errs)
	}
	base := runLine.FindStringSubmatch(out)[1]
	code, out, errs = run("--baseline-c1", base)
	if code != ExitOK {
		t.Fatalf("fixed-C1 run: exit %d: %s", code, errs)
	}
	fixed := runLine.FindStringSubmatch(out)[1]
	for _, want := range []string{"C1 from run " + base + " (model sim:neutral, fingerprint ", "108 C1 sessions on 54 items matched by content", "(C1 mode: fixed-c1)", "sessions: 108 planned"} {
		if !strings.Contains(unwrapped(out), want) {
			t.Errorf("text report lacks %q:\n%s", want, out)
		}
	}
	for _, format := range []string{"md", "html"} {
		_, rep, errs := budge(t, "framing", "report", fixed, "--dir", dir, "--format", format)
		if !strings.Contains(rep, "C1 from run "+base) {
			t.Errorf("%s report lacks the baseline: %s", format, errs)
		}
	}
	_, rep, _ := budge(t, "framing", "report", fixed, "--dir", dir, "--format", "json")
	var j struct {
		Run struct {
			BaselineC1 struct{ Run, Fingerprint string } `json:"baseline_c1"`
		} `json:"run"`
	}
	if err := json.Unmarshal([]byte(rep), &j); err != nil || j.Run.BaselineC1.Run != base || j.Run.BaselineC1.Fingerprint == "" {
		t.Errorf("json report baseline %+v (%v)", j.Run.BaselineC1, err)
	}
	_, flips, _ := budge(t, "export", fixed, "--dir", dir, "--format", "flips")
	if n := strings.Count(flips, `"record":"flip_pair"`); n != 108 || strings.Count(flips, `"c1_run":"`+base+`"`) != 108 {
		t.Errorf("%d flip pairs, want 108 (54 items × 2 pairs), each with its C1 from %s", n, base)
	}

	// Without --data or a sampling flag the run takes the baseline's own
	// items; with --data it must give the same ones.
	code, out, errs = run("--model", "sim:neutral", "--sample", "24", "--stratify", "domain")
	if code != ExitOK && code != ExitUnmeasured {
		t.Fatalf("sampled baseline: exit %d: %s", code, errs)
	}
	sampled := runLine.FindStringSubmatch(out)[1]
	code, out, errs = run("--baseline-c1", sampled)
	if code != ExitOK && code != ExitUnmeasured || !strings.Contains(unwrapped(out), "(24 items,") || !strings.Contains(unwrapped(out), "48 C1 sessions on 24 items") ||
		!strings.Contains(unwrapped(out), "sampled: social 4 of 12 (--sample (pool of data sets without --sample-per) 24, stratified by domain, seed 42)") {
		t.Errorf("run on the baseline's items: exit %d: %s\n%s", code, errs, out)
	}
	if code, _, errs := run("--baseline-c1", sampled, "--data", "sample"); code != ExitInvalid || !strings.Contains(errs, "0 of this run's 54 are not in run "+sampled+"") ||
		!strings.Contains(errs, "used --data sample --sample 24 --stratify \"domain\" --sample-seed 42") {
		t.Errorf("other items: exit %d: %s", code, errs)
	}

	// The pressure run is not a framing run; the fixed run has no C1 of
	// its own.
	code, out, _ = budge(t, "run", "--dir", dir, "--quiet")
	pressure := runLine.FindStringSubmatch(out)[1]
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--baseline-c1", base, "--sample", "20"}, "items (matched by content): 0 of this run's 20 are not in run " + base + ", and 34 of its 54 are not in this run"},
		{[]string{"--baseline-c1", base, "--templates", "budge-plain"}, "template sets: this run budge-plain"},
		{[]string{"--baseline-c1", base, "--labels", "ab"}, "label sets: this run ab (A / B)"},
		{[]string{"--baseline-c1", base, "--mitigation", "be-honest", "--mitigation-mode", "joint"}, "mitigation mode joint runs C1 under each mitigation"},
		{[]string{"--baseline-c1", fixed}, "has no C1 answers of its own (it takes them from run " + base + ")"},
		{[]string{"--baseline-c1", pressure}, "is a pressure run, not a framing run"},
		{[]string{"--baseline-c1", "nosuchrun"}, `no such run "nosuchrun"`},
	} {
		code, _, errs := run(c.args...)
		if code != ExitInvalid || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, want %d and %q in: %s", c.args, code, ExitInvalid, c.want, errs)
		}
	}
}
