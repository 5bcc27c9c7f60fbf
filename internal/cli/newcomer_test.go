package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A model named without its provider gets a suggestion, before any network
// call or key lookup.
func TestModelWithoutProviderSuggests(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for model, want := range map[string]string{
		"gpt-4o":            "did you mean --model openai:gpt-4o?",
		"claude-sonnet-4-5": "did you mean --model anthropic:claude-sonnet-4-5?",
		"pushover":          "did you mean --model sim:pushover?",
	} {
		code, _, errs := budge(t, "run", "--dir", dir, "--quiet", "--model", model)
		if code != ExitInvalid || !strings.Contains(errs, want) {
			t.Errorf("--model %s: exit %d, %q; want exit 2 with %q", model, code, errs, want)
		}
	}
	code, _, errs := budge(t, "framing", "run", "--dir", dir, "--quiet", "--model", "gpt-4o")
	if code != ExitInvalid || !strings.Contains(errs, "openai:gpt-4o") {
		t.Errorf("framing run --model gpt-4o: exit %d, %q", code, errs)
	}
}

// --deck DIR runs the one deck file in the folder, and names the files
// when there are several or none; deck check DIR goes into subfolders and
// names the YAML files that are not decks.
func TestDeckFolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	decks := filepath.Join(t.TempDir(), "decks")
	if code, _, errs := budge(t, "deck", "init", decks); code != ExitOK {
		t.Fatalf("deck init: exit %d %s", code, errs)
	}
	// A simulator profile beside the deck is not a deck.
	profile := filepath.Join(decks, "profile.yaml")
	if err := os.WriteFile(profile, []byte("name: pushy\ncorrection_uptake: 0.5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := budge(t, "run", "--dir", dir, "--deck", decks, "--quiet", "--concurrency", "16")
	if code != ExitOK || !strings.Contains(out, "deck my-deck (discovery, en,") || !strings.Contains(out, "112 planned, 112 complete") {
		t.Errorf("run --deck DIR: exit %d\n%.500s\n%s", code, out, errs)
	}
	if code, out, _ := budge(t, "export", "--dir", dir, "latest", "--format", "jsonl"); code != ExitOK || !strings.Contains(out, `"session_id"`) {
		t.Errorf("export after run --deck DIR: exit %d %.200s", code, out)
	}

	// A second deck in a subfolder, with a mistake: check finds it and
	// fails naming it; --deck DIR is now ambiguous.
	src, err := os.ReadFile(filepath.Join(decks, "deck.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	nested := filepath.Join(decks, "zh", "deck.yaml")
	if err := os.MkdirAll(filepath.Dir(nested), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(nested, []byte(strings.Replace(string(src), "repeats:", "repeatz:", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs = budge(t, "deck", "check", decks)
	if code != ExitInvalid || !strings.Contains(errs, nested+": ") || !strings.Contains(errs, "repeatz") ||
		!strings.Contains(errs, profile+": skipped, not a deck file") || !strings.Contains(out, filepath.Join(decks, "deck.yaml")) {
		t.Errorf("deck check DIR with a broken nested deck: exit %d\n%s\n%s", code, out, errs)
	}
	code, _, errs = budge(t, "run", "--dir", dir, "--deck", decks, "--quiet")
	if code != ExitInvalid || !strings.Contains(errs, "2 deck files: "+filepath.Join(decks, "deck.yaml")+", "+nested) {
		t.Errorf("run --deck DIR with two decks: exit %d %q", code, errs)
	}
	empty := t.TempDir()
	code, _, errs = budge(t, "run", "--dir", dir, "--deck", empty, "--quiet")
	if code != ExitInvalid || !strings.Contains(errs, "no deck file") || !strings.Contains(errs, "budge deck init "+empty) {
		t.Errorf("run --deck EMPTYDIR: exit %d %q", code, errs)
	}
}

// calibrate --sweep --svg writes the sweep's plot (it was ignored): power
// and false positives against the number of cases, naming the same
// smallest design as the table.
func TestCalibrateSweepSVG(t *testing.T) {
	t.Parallel()
	svg := filepath.Join(t.TempDir(), "power.svg")
	code, out, errs := budge(t, "calibrate", "--sweep", "--replications", "30", "--resamples", "100", "--svg", svg)
	if code != ExitOK {
		t.Fatalf("calibrate --sweep --svg: exit %d %s", code, errs)
	}
	// Progress on stderr, one line per design, with the time left.
	if !strings.Contains(errs, "sweep: design 1/8 · 8/300 cases' work (3%)") || !strings.Contains(errs, "left") ||
		!strings.Contains(errs, "sweep: design 8/8 · 300/300 cases' work (100%)") || strings.Contains(out, "sweep: design") {
		t.Errorf("sweep progress on stderr:\n%s", errs)
	}
	if _, _, errs := budge(t, "calibrate", "--sweep", "--replications", "5", "--resamples", "20", "--quiet"); errs != "" {
		t.Errorf("--quiet: stderr %q", errs)
	}
	b, err := os.ReadFile(svg)
	if err != nil {
		t.Fatalf("no SVG written: %v", err)
	}
	s := string(b)
	if !strings.HasPrefix(s, "<svg ") || strings.Count(s, "<polyline") != 2 || !strings.Contains(s, "determinate cases in the design") ||
		strings.Count(s, "false positives ") < 8 {
		t.Errorf("sweep SVG:\n%.600s", s)
	}
	// The table's "Smallest design ...: 32 determinate cases × 2 repeats"
	// and the plot's "smallest design ...: 32 cases × 2 repeats" agree.
	i := strings.Index(out, "Smallest design with at least 80% power: ")
	if i < 0 {
		if !strings.Contains(out, "No design up to 96 cases") || !strings.Contains(s, "no design up to 96 cases reaches 80% power") {
			t.Errorf("neither names a smallest design, and they do not agree on none:\n%s\n%.600s", out, s)
		}
		return
	}
	cases := strings.Fields(out[i+len("Smallest design with at least 80% power: "):])[0]
	if !strings.Contains(s, "smallest design with 80% power: "+cases+" cases × 2 repeats") {
		t.Errorf("the plot does not name the table's smallest design (%s cases):\n%.600s", cases, s)
	}
}
