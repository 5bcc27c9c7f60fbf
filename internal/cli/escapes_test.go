package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// hostileText is what a hostile model, endpoint or deck writes: a window
// title, a cleared screen, a carriage return, a C1 control (CSI), DEL and a
// bidirectional override.
const hostileText = "\x1b]0;owned\x07\x1b[2J\rX\u009b31m\x7f\u202eevil"

// rawControl returns the first control character in out that is not a line
// break or a tab, as a terminal would act on it.
func rawControl(out string) (string, bool) {
	for i, r := range out {
		switch {
		case r == '\n' || r == '\t':
		case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return fmt.Sprintf("%U at byte %d: %q", r, i, out[max(0, i-20):min(len(out), i+20)]), true
		case r == utf8.RuneError && strings.HasPrefix(out[i:], "\x9b"):
			return fmt.Sprintf("raw byte 0x9b at %d", i), true
		}
	}
	return "", false
}

// TestNoRawControlReachesTheTerminal: control characters in what a model
// answers (content, tool arguments, its model id), in a deck (title, case
// text, a problem) and in a data file's words reach the output of show,
// runs, report and deck check only as escapes.
func TestNoRawControlReachesTheTerminal(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "docs", "examples", "tablet-loan.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	yq, _ := json.Marshal(hostileText) // a YAML double-quoted scalar
	deck := strings.Replace(string(src), "title: Field team loaner-tablet allocation (explicit references)", "title: "+string(yq), 1)
	deck = strings.Replace(deck, "name: tablet-loan", "name: tablet-loan-x", 1)
	dir := t.TempDir()
	deckPath := filepath.Join(dir, "deck.yaml")
	if err := os.WriteFile(deckPath, []byte(deck), 0o644); err != nil {
		t.Fatal(err)
	}
	// A deck with a problem that quotes its text.
	badPath := filepath.Join(dir, "bad.yaml")
	bad := strings.Replace(deck, "policy_version: field-loaner-tablet/v1", "policy_version: field-loaner-tablet/v1\n\"surplus"+string(yq[1:])+": 1", 1)
	if err := os.WriteFile(badPath, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}

	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []json.RawMessage `json:"messages"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		msg := map[string]any{"role": "assistant", "content": hostileText + ` {"selection":"` + hostileText + `","record_ids":[],"explanation":"` + hostileText + `"}`}
		finish := "stop"
		if len(req.Messages) < 3 {
			finish = "tool_calls"
			msg["tool_calls"] = []any{map[string]any{"id": "call" + hostileText, "type": "function",
				"function": map[string]any{"name": "get_availability" + hostileText, "arguments": `{"x":"` + strings.ReplaceAll(hostileText, "\x1b", `\u001b`) + `"}`}}}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "cmpl" + hostileText, "object": "chat.completion", "created": 1, "model": "m" + hostileText,
			"system_fingerprint": "fp" + hostileText,
			"choices":            []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":              map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
	}))
	defer hs.Close()

	store := filepath.Join(dir, "store")
	code, out, errs := budge(t, "run", "--dir", store, "--deck", deckPath, "--model", "openai-compatible:hostile"+hostileText, "--base-url", hs.URL+"/v1",
		"--channel", "tool", "--concurrency", "4", "--max-attempts", "1", "--quiet")
	if code != ExitOK && code != ExitBlocked && code != ExitIncomplete {
		t.Fatalf("run exit %d\n%s\n%s", code, out, errs)
	}
	check := func(what, out string) {
		t.Helper()
		if c, bad := rawControl(out); bad {
			t.Errorf("%s prints a raw control character: %s", what, c)
		}
	}
	check("run", out+errs)

	code, out, errs = budge(t, "export", "latest", "--dir", store)
	if code != ExitOK {
		t.Fatalf("export exit %d: %s", code, errs)
	}
	recs := readExport(t, out)
	for _, r := range recs[:2] {
		id := fmt.Sprintf("%s/%s/%s/%s/r%d", r.CaseID, r.Assignment, r.Order, r.Branch, r.Repeat)
		code, out, errs = budge(t, "show", "latest", id, "--dir", store)
		if code != ExitOK {
			t.Fatalf("show %s exit %d: %s", id, code, errs)
		}
		if !strings.Contains(out, `\x1b]0;owned\x07`) {
			t.Errorf("show %s does not show the escaped content:\n%s", id, out)
		}
		check("show", out+errs)
	}
	for _, format := range []string{"text", "md"} {
		code, out, errs = budge(t, "report", "latest", "--dir", store, "--format", format)
		if code != ExitOK && code != ExitBlocked {
			t.Fatalf("report exit %d: %s", code, errs)
		}
		check("report --format "+format, out+errs)
	}
	code, out, errs = budge(t, "runs", "--dir", store)
	if code != ExitOK {
		t.Fatalf("runs exit %d: %s", code, errs)
	}
	check("runs", out+errs)
	code, out, errs = budge(t, "deck", "check", deckPath, badPath)
	if code != ExitInvalid || !strings.Contains(out, "tablet-loan-x") || !strings.Contains(errs, "surplus") {
		t.Errorf("deck check exit %d\n%s\n%s", code, out, errs)
	}
	check("deck check", out+errs)
}
