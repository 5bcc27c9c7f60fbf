package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/buildlab/budge/pressure"
)

// A deck whose profile ids are "1" and "2" cannot be run: a model answering
// by display position would be scored as if it had chosen a record. deck
// check and run both refuse it, naming file, line, field and the ids, and
// the server (which answers "1", the first profile shown) is never asked.
func TestRunRefusesPositionalIDs(t *testing.T) {
	t.Parallel()
	src, err := pressure.BuiltinDeckBytes("discovery")
	if err != nil {
		t.Fatal(err)
	}
	d, err := pressure.OpenDeck("discovery")
	if err != nil {
		t.Fatal(err)
	}
	p, q := d.Cases[0].ProfileIDs()
	text := strings.NewReplacer(p, "1", q, "2").Replace(string(src))
	path := filepath.Join(t.TempDir(), "positional.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	var asked atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"{\"selection\":\"1\",\"record_ids\":[],\"explanation\":\"the first one\"}"}}]}`))
	}))
	defer srv.Close()

	line := d.Line("$.cases[0].profiles.P.id")
	for _, args := range [][]string{
		{"deck", "check", path},
		{"run", "--deck", path, "--dir", t.TempDir(), "--quiet", "--model", "openai-compatible:m", "--base-url", srv.URL + "/v1"},
	} {
		code, out, errs := budge(t, args...)
		all := out + errs
		if code != ExitInvalid {
			t.Errorf("%s: exit %d, want %d\n%s", args[0]+" "+args[1], code, ExitInvalid, all)
		}
		for _, want := range []string{path + ":" + itoa(line) + ": cases[0].profiles.P.id", `profile id "1"`, `profile id "2"`, "is a number"} {
			if !strings.Contains(all, want) {
				t.Errorf("%s %s: output lacks %q:\n%s", args[0], args[1], want, all)
			}
		}
	}
	if n := asked.Load(); n != 0 {
		t.Errorf("the server was asked %d time(s)", n)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// --identities changes what the model sees and the labels of every report
// format; a run on the placeholder identities says in every format that it
// cannot show an identity asymmetry; sim:oracle's runs say it was handed
// the answer key.
func TestRunIdentities(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if code, out, errs := budge(t, "deck", "freeze", "--dir", dir, "confirmation"); code != ExitOK {
		t.Fatalf("freeze: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs := budge(t, "run", "--dir", dir, "--quiet", "--deck", "confirmation", "--model", "sim:oracle",
		"--identities", "woman, man", "--identity-reviewer", "J. Rivera", "--identity-field", "Gender")
	if code != ExitOK {
		t.Fatalf("run --identities: exit %d\n%s%s", code, out, errs)
	}
	id := runLine.FindStringSubmatch(out)[1]
	d, _ := pressure.OpenDeck("confirmation")
	c := d.Cases[0]
	code, show, _ := budge(t, "show", "--dir", dir, id, c.ID+"/I/P-first/none/r1")
	idP, idQ := c.ProfileIDs()
	for _, want := range []string{"Volunteer " + idP + ": ", "Gender: woman.", "Volunteer " + idQ + ": ", "Gender: man.", `"Gender" field`} {
		if code != ExitOK || !strings.Contains(show, want) {
			t.Errorf("the case message lacks %q (exit %d):\n%s", want, code, show)
		}
	}
	if strings.Contains(show, "Group: X") {
		t.Error("the model still sees the deck's placeholder")
	}
	reports := func(id string) map[string]string {
		m := map[string]string{}
		for _, f := range []string{"text", "md", "json", "html"} {
			code, out, errs := budge(t, "report", "--dir", dir, "--format", f, id)
			if code != ExitOK {
				t.Fatalf("report --format %s: exit %d %s", f, code, errs)
			}
			m[f] = out
		}
		return m
	}
	for f, rep := range reports(id) {
		for _, want := range []string{"woman", "man", "J. Rivera", "answer key", "not a model"} {
			if !strings.Contains(strings.ToLower(unwrapped(rep)), strings.ToLower(want)) {
				t.Errorf("%s report of the declared contrast lacks %q", f, want)
			}
		}
		if strings.Contains(rep, "CANNOT SHOW IDENTITY ASYMMETRY") || strings.Contains(rep, "cannot_show_identity_asymmetry") {
			t.Errorf("%s report of a reviewed contrast says it cannot show an asymmetry", f)
		}
	}
	if !strings.Contains(reports(id)["text"], "toward X (woman)") {
		t.Error("the text report does not print the label beside X")
	}

	code, out, errs = budge(t, "run", "--dir", dir, "--quiet", "--deck", "confirmation")
	if code != ExitOK {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	plain := runLine.FindStringSubmatch(out)[1]
	for f, rep := range reports(plain) {
		want := "CANNOT SHOW IDENTITY ASYMMETRY: the identity values are placeholders"
		if f == "json" {
			var r struct {
				Run struct {
					Identity struct {
						Why string `json:"cannot_show_identity_asymmetry"`
					} `json:"identity_contrast"`
					AnswerKey string `json:"answer_key"`
				} `json:"run"`
			}
			if err := json.Unmarshal([]byte(rep), &r); err != nil {
				t.Fatal(err)
			}
			rep, want = r.Run.Identity.Why, "the identity values are placeholders"
			if r.Run.AnswerKey != "" {
				t.Errorf("a sim:default run says it was handed the answer key")
			}
		}
		if !strings.Contains(rep, want) || !strings.Contains(rep, "no reviewer approved") {
			t.Errorf("%s report of a placeholder run lacks the warning %q", f, want)
		}
	}

	// The declared contrast is the run's: a resume or a replay keeps it.
	code, out, errs = budge(t, "run", "--dir", dir, "--quiet", "--replay", id)
	if code != ExitOK || !strings.Contains(out, `X = "woman"`) || !strings.Contains(out, "ANSWER KEY") {
		t.Errorf("replay of a run with a declared contrast: exit %d\n%s%s", code, out, errs)
	}
	// A declared label that makes a profile id confusable is refused.
	code, out, errs = budge(t, "run", "--dir", dir, "--quiet", "--identities", idP+",man", "--deck", "confirmation")
	if code != ExitInvalid || !strings.Contains(out+errs, "equals the display name") {
		t.Errorf("a label equal to a profile id: exit %d\n%s%s", code, out, errs)
	}
	code, _, errs = budge(t, "run", "--dir", dir, "--quiet", "--identity-reviewer", "R")
	if code != ExitInvalid || !strings.Contains(errs, "goes with --identities") {
		t.Errorf("--identity-reviewer alone: exit %d %s", code, errs)
	}
}
