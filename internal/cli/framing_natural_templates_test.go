package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Naturalistic items are rendered with the template set the user chose:
// a set without a naturalistic pair is refused up front, naming the set
// and the files it lacks, never quietly replaced by budge's wording.
func TestFramingNaturalisticItemsUseTheChosenTemplates(t *testing.T) {
	t.Parallel()
	paper := filepath.Join("..", "..", "..", "shared", "data", "dialdefer", "prompts")
	if _, err := os.Stat(paper); err != nil {
		t.Skipf("reference data absent (%v)", err)
	}
	store := t.TempDir()
	code, _, errs := budge(t, "framing", "run", "--dir", store, "--quiet", "--data", "sample", "--templates", paper)
	for _, want := range []string{"6 naturalistic item(s)", "template set prompts", "has no naturalistic pair (n1_statement.tmpl and n2_dialogue.tmpl"} {
		if code != ExitInvalid || !strings.Contains(errs, want) {
			t.Errorf("exit %d, want %d and %q in: %s", code, ExitInvalid, want, errs)
		}
	}
	if _, out, _ := budge(t, "runs", "--dir", store); strings.Contains(out, "framing") {
		t.Errorf("a refused run was stored:\n%s", out)
	}

	// A directory that gives the pair is used for those items.
	dir := filepath.Join(t.TempDir(), "mine")
	os.MkdirAll(dir, 0o755)
	for _, f := range []string{"c1_statement.tmpl", "c2_dialogue.tmpl"} {
		b, _ := os.ReadFile(filepath.Join(paper, f))
		os.WriteFile(filepath.Join(dir, f), b, 0o644)
	}
	os.WriteFile(filepath.Join(dir, "n1_statement.tmpl"), []byte("MINE-N1 {dialogue}\nClaim: {answer}\nReply in JSON with chosen_answer 1 (correct) or 2.\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "n2_dialogue.tmpl"), []byte("MINE-N2 {dialogue}\n{judger}: {answer}\nIs {judger} right? Reply in JSON with chosen_answer 1 or 2.\n"), 0o644)
	for _, c := range []struct{ set, session, want string }{
		{dir, "sample-conflicts-01/mine/-/none/C1-True", "MINE-N1 "},
		{dir, "sample-conflicts-01/mine/speakers/none/C2-Correct", "MINE-N2 "},
		{"budge-plain", "sample-conflicts-01/budge-plain/-/none/C1-True", "Is the statement right?"},
		{"budge-formal", "sample-conflicts-01/budge-formal/speakers/none/C2-Correct", "final message is correct"},
	} {
		store := t.TempDir()
		code, _, errs := budge(t, "framing", "run", "--dir", store, "--quiet", "--resamples", "50", "--data", "sample", "--templates", c.set)
		if code != ExitOK && code != ExitUnmeasured {
			t.Fatalf("%s: exit %d: %s", c.set, code, errs)
		}
		if _, out, _ := budge(t, "show", "latest", "--dir", store, c.session); !strings.Contains(out, c.want) {
			t.Errorf("%s: session %s lacks %q:\n%s", c.set, c.session, c.want, out)
		}
	}
}
