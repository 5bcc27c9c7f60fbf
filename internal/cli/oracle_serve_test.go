package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// TestOracleOverSimServe: budge sim serve --oracle-deck serves sim:oracle,
// and budge run --model openai-compatible:sim:oracle against it gives the
// per-session results of --model sim:oracle in process, with the report
// saying the model was handed the answer key. A server started without the
// deck stops such a run at the preflight, saying how to serve it.
func TestOracleOverSimServe(t *testing.T) {
	deck := filepath.Join("..", "..", "docs", "examples", "tablet-loan.yaml")
	withKey := simServe(t, "--oracle-deck", deck, "--oracle-deck", "discovery")
	without := simServe(t)
	t.Setenv("OPENAI_COMPATIBLE_API_KEY", "")

	local := t.TempDir()
	if code, out, errs := budge(t, "run", "--deck", deck, "--model", "sim:oracle", "--dir", local, "--quiet"); code != ExitOK {
		t.Fatalf("in process: exit %d\n%s\n%s", code, out, errs)
	}
	remote := t.TempDir()
	code, out, errs := budge(t, "run", "--deck", deck, "--model", "openai-compatible:sim:oracle", "--base-url", withKey, "--dir", remote, "--quiet")
	if code != ExitOK {
		t.Fatalf("over HTTP: exit %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(out, "ANSWER KEY: the model openai-compatible:sim:oracle was handed the deck's answer key") {
		t.Errorf("the report does not say the model was handed the key:\n%s", out)
	}
	if strings.Contains(errs, "cannot apply") {
		t.Errorf("the oracle was taken for a simulator without a rule:\n%s", errs)
	}
	want, got := sessions(t, local), sessions(t, remote)
	if len(want) == 0 || len(got) != len(want) {
		t.Fatalf("%d sessions over HTTP, %d in process", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("session %d differs:\nover HTTP  %s\nin process %s", i, got[i], want[i])
		}
	}

	code, _, errs = budge(t, "run", "--deck", deck, "--model", "openai-compatible:sim:oracle", "--base-url", without, "--dir", t.TempDir(), "--quiet")
	if code != ExitInvalid || !strings.Contains(errs, "--oracle-deck") {
		t.Errorf("without --oracle-deck: exit %d\n%s", code, errs)
	}
	if code, _, errs := budge(t, "sim", "serve", "--addr", "127.0.0.1:0", "--oracle-deck", "no-such-deck"); code != ExitInvalid || !strings.Contains(errs, "--oracle-deck no-such-deck") {
		t.Errorf("a missing deck: exit %d\n%s", code, errs)
	}
}

// simServe starts budge sim serve with args on a free port until the test
// ends, and returns its base URL.
func simServe(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		Main(ctx, append([]string{"sim", "serve", "--addr", "127.0.0.1:0"}, args...), strings.NewReader(""), pw, io.Discard)
		pw.Close()
	}()
	t.Cleanup(func() { cancel(); <-done })
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "listening on http://") {
		t.Fatalf("serve printed %q, %v", line, err)
	}
	go io.Copy(io.Discard, pr)
	return strings.TrimSpace(strings.TrimPrefix(line, "listening on "))
}

// sessions are the exported sessions of the latest run in dir, without
// what names the run or its model.
func sessions(t *testing.T, dir string) []string {
	t.Helper()
	code, out, errs := budge(t, "export", "latest", "--dir", dir, "--format", "jsonl")
	if code != ExitOK {
		t.Fatalf("export: exit %d\n%s", code, errs)
	}
	var rows []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"run_id", "model_and_prompt_fingerprint", "trace_ref"} {
			delete(m, k)
		}
		b, _ := json.Marshal(m)
		rows = append(rows, string(b))
	}
	return rows
}
