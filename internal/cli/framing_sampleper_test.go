package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --sample-per gives data sets their own size and stratification field
// (the paper's Table 8); the sampling of every data set is in the manifest
// and every report, a replay keeps it, and an unknown data set or field is
// an error naming what exists.
func TestFramingSamplePerDataset(t *testing.T) {
	t.Parallel()
	bench := benchmarkDir(t)
	data := t.TempDir()
	for _, f := range []string{"advisorqa", "gpqa", "amqa"} {
		abs, _ := filepath.Abs(filepath.Join(bench, f+"_formatted.jsonl"))
		if err := os.Symlink(abs, filepath.Join(data, f+".jsonl")); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	run := func(args ...string) (int, string, string) {
		return budge(t, append([]string{"framing", "run", "--dir", dir, "--quiet", "--resamples", "50", "--data", data}, args...)...)
	}
	code, out, errs := run("--sample-per", "advisorqa=30:label", "--sample-per", "gpqa=21:subdomain", "--sample", "12")
	if code != ExitOK && code != ExitUnmeasured {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"sampled: advisorqa 30 of 300 (--sample-per 30, stratified by label, seed 42)",
		"sampled: gpqa 21 of 134 (--sample-per 21, stratified by subdomain, seed 42)",
		"sampled: amqa 12 of 240 (--sample (pool of data sets without --sample-per) 12, simple random, seed 42)",
		"(63 items,",
	} {
		if !strings.Contains(unwrapped(out), want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	id := runLine.FindStringSubmatch(out)[1]
	for _, format := range []string{"md", "html"} {
		if _, rep, _ := budge(t, "framing", "report", id, "--dir", dir, "--format", format); !strings.Contains(rep, "gpqa 21 of 134 (--sample-per 21, stratified by subdomain, seed 42)") {
			t.Errorf("%s report lacks the sampling", format)
		}
	}
	type drawn struct {
		Dataset, Rule, Stratify string
		Available, Drawn        int
		Seed                    uint64
	}
	var rep struct {
		Run struct{ Sampling []drawn } `json:"run"`
	}
	_, js, _ := budge(t, "framing", "report", id, "--dir", dir, "--format", "json")
	if err := json.Unmarshal([]byte(js), &rep); err != nil || len(rep.Run.Sampling) != 3 {
		t.Fatalf("json sampling %+v (%v)", rep.Run.Sampling, err)
	}
	// The run holds exactly the drawn items.
	_, items, _ := budge(t, "export", id, "--dir", dir)
	sub := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(items), "\n") {
		if strings.Contains(l, `"C1-True"`) && strings.Contains(l, `"gpqa`) {
			sub["gpqa"]++
		}
	}
	if sub["gpqa"] != 21 {
		t.Errorf("%d gpqa items exported, want 21", sub["gpqa"])
	}
	code, out, errs = budge(t, "framing", "run", "--dir", dir, "--quiet", "--replay", id)
	if code != ExitOK && code != ExitUnmeasured || !strings.Contains(out, "sampled: advisorqa 30 of 300 (--sample-per 30, stratified by label, seed 42)") {
		t.Errorf("replay (exit %d) lost the sampling: %s\n%s", code, errs, out)
	}

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--sample-per", "advisor=30"}, ExitInvalid, `no item belongs to data set "advisor"; the data's data sets are: advisorqa, amqa, gpqa`},
		{[]string{"--sample-per", "gpqa=21:level"}, ExitInvalid, `--sample-per gpqa=21:level: no item has the field "level"; the items have: domain, explanation, schema_version, split, subdomain, writer_difficulty`},
		{[]string{"--sample-per", "gpqa"}, ExitInvalid, "want DATASET=N or DATASET=N:FIELD"},
	} {
		if code, _, errs := run(c.args...); code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, want %d and %q in: %s", c.args, code, c.code, c.want, errs)
		}
	}
}
