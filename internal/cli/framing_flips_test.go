package cli

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"
)

// The flip list agrees with the report's flip lists, arm by arm, and puts
// both answers' reasoning side by side.
func TestFramingExportFlipsMatchReport(t *testing.T) {
	t.Parallel()
	t.Run("default", func(t *testing.T) { testFlipsMatchReport(t, "sim") })
	t.Run("messy", func(t *testing.T) { testFlipsMatchReport(t, "sim:messy") })
}

func testFlipsMatchReport(t *testing.T, model string) {
	dir := t.TempDir()
	if code, out, errs := budge(t, "framing", "run", "--dir", dir, "--quiet", "--resamples", "50", "--mitigation", "be-honest", "--model", model); code != ExitOK && code != ExitIncomplete && code != ExitUnmeasured {
		t.Fatalf("framing run exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs := budge(t, "export", "latest", "--dir", dir, "--format", "flips")
	if code != ExitOK {
		t.Fatalf("export flips exit %d: %s", code, errs)
	}
	got := map[string][]string{}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines {
		var r struct {
			Record, Item, Arm, Flip, Pair, C1Arm string
			C1, C2                               struct{ Condition, Reasoning string }
		}
		if err := json.Unmarshal([]byte(strings.NewReplacer(`"item_id"`, `"item"`, `"c1_arm"`, `"c1arm"`).Replace(l)), &r); err != nil {
			t.Fatal(err)
		}
		if r.Record != "flip_pair" || r.C1Arm != "none" || model == "sim" && (r.C1.Reasoning == "" || r.C2.Reasoning == "") {
			t.Errorf("record %s", l)
		}
		if want := map[string]string{"true-correct": "C1-True/C2-Correct", "false-incorrect": "C1-False/C2-Incorrect"}[r.Pair]; want != r.C1.Condition+"/"+r.C2.Condition {
			t.Errorf("pair %s has %s/%s", r.Pair, r.C1.Condition, r.C2.Condition)
		}
		if r.Flip == "deference" || r.Flip == "skepticism" {
			got[r.Arm+" "+r.Flip] = append(got[r.Arm+" "+r.Flip], r.Item)
		}
	}
	// 54 items (48 questions, 6 conflicts) × 2 arms × 2 pairs.
	if len(lines) != 54*2*2 {
		t.Errorf("%d flip records, want %d", len(lines), 54*2*2)
	}

	_, out, _ = budge(t, "report", "latest", "--dir", dir, "--format", "json")
	var rep struct {
		Measures struct {
			Arms []struct {
				Mitigation string
				Domains    map[string]struct {
					Deference  []string `json:"deference_flips"`
					Skepticism []string `json:"skepticism_flips"`
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{}
	for _, a := range rep.Measures.Arms {
		for _, c := range a.Domains {
			want[a.Mitigation+" deference"] = append(want[a.Mitigation+" deference"], c.Deference...)
			want[a.Mitigation+" skepticism"] = append(want[a.Mitigation+" skepticism"], c.Skepticism...)
		}
	}
	for k := range want {
		sort.Strings(want[k])
		sort.Strings(got[k])
		if strings.Join(want[k], ",") != strings.Join(got[k], ",") {
			t.Errorf("%s flips: export %v, report %v", k, got[k], want[k])
		}
	}
	if model == "sim" && len(want["none deference"]) == 0 {
		t.Error("the default simulated judge made no deference flip")
	}
}
