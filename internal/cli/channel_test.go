package cli

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"

	"github.com/buildlab/budge/provider/sim"
)

// A run whose evidence reaches the model as user-role text says so in its
// output, its export and every report format, and never calls its
// correction measure verified.
func TestMessageChannelDeviationEverywhere(t *testing.T) {
	t.Parallel()
	hs := simServer(t, sim.ServerOptions{}, nil)
	dir := t.TempDir()
	code, out, errs := budge(t, "run", "--dir", dir, "--model", "openai-compatible:sim", "--base-url", hs.URL+"/v1",
		"--channel", "message", "--seed", "3", "--concurrency", "16", "--quiet")
	if code != ExitOK && code != ExitBlocked {
		t.Fatalf("run exit %d\n%s\n%s", code, out, errs)
	}
	outputs := map[string]string{"run output": out}
	for _, f := range []string{"text", "md", "json", "html"} {
		code, rep, errs := budge(t, "report", "latest", "--dir", dir, "--format", f)
		if code != ExitOK {
			t.Fatalf("report --format %s: exit %d: %s", f, code, errs)
		}
		outputs["report "+f] = rep
	}
	for name, text := range outputs {
		if !strings.Contains(text, "user-role") || !strings.Contains(text, "uptake of user-role evidence") {
			t.Errorf("%s does not carry the message-channel deviation", name)
		}
		if strings.Contains(text, "verified correction uptake") {
			t.Errorf("%s calls the measure verified correction uptake", name)
		}
	}
	var rep struct {
		Measures struct {
			Deviations []string `json:"deviations"`
			Uptake     struct {
				Measure string `json:"measure"`
			} `json:"correction_uptake"`
		} `json:"measures"`
	}
	if err := json.Unmarshal([]byte(outputs["report json"]), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Measures.Deviations) != 1 || rep.Measures.Uptake.Measure != "uptake of user-role evidence" {
		t.Errorf("json report: deviations %q, measure %q", rep.Measures.Deviations, rep.Measures.Uptake.Measure)
	}
	code, exp, errs := budge(t, "export", "latest", "--dir", dir)
	if code != ExitOK {
		t.Fatalf("export: exit %d: %s", code, errs)
	}
	n := 0
	sc := bufio.NewScanner(strings.NewReader(exp))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r struct {
			Deviations []string `json:"run_deviations"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if len(r.Deviations) != 1 || !strings.Contains(r.Deviations[0], "user-role") {
			t.Fatalf("export record %d: run_deviations %q", n, r.Deviations)
		}
		n++
	}
	if n != 416 {
		t.Errorf("%d export records, want 416", n)
	}

	// The tool channel carries no deviation and keeps the verified name.
	dir2 := t.TempDir()
	code, out, errs = budge(t, "run", "--dir", dir2, "--model", "openai-compatible:sim", "--base-url", hs.URL+"/v1",
		"--channel", "tool", "--seed", "3", "--concurrency", "16", "--quiet")
	if code != ExitOK && code != ExitBlocked {
		t.Fatalf("tool run exit %d\n%s", code, errs)
	}
	if strings.Contains(out, "DEVIATION") || !strings.Contains(out, "verified correction uptake") {
		t.Errorf("tool-channel output:\n%s", out)
	}
}
