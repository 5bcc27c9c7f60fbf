package cli

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestSimServe starts budge sim serve on a free port, runs the deck against
// it through the openai-compatible provider, and stops it.
func TestSimServe(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"sim", "serve", "--addr", "127.0.0.1:0", "--rate-429", "0.1", "--retry-after", "1ms"}, strings.NewReader(""), pw, io.Discard)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "listening on http://") {
		t.Fatalf("serve printed %q, %v", line, err)
	}
	base := strings.TrimSpace(strings.TrimPrefix(line, "listening on "))
	resp, err := http.Get(strings.TrimSuffix(base, "/v1") + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v", err)
	}
	resp.Body.Close()
	dir := t.TempDir()
	code, out, errs := budge(t, "run", "--dir", dir, "--model", "openai-compatible:sim", "--base-url", base, "--quiet", "--retry-base", "1ms", "--max-attempts", "10")
	if code != ExitOK || !strings.Contains(out, "416 complete") || !strings.Contains(out, "rate_limited") {
		t.Fatalf("run against sim serve: exit %d\n%s\n%s", code, out, errs)
	}
	// Replay it: no server needed, same measures.
	cancel()
	select {
	case code := <-done:
		if code != ExitOK {
			t.Errorf("sim serve exited %d", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("sim serve did not stop")
	}
	id := runLine.FindStringSubmatch(out)[1]
	code, rout, errs := budge(t, "run", "--dir", dir, "--replay", id, "--quiet")
	if code != ExitOK || !strings.Contains(rout, "replay of run "+id) {
		t.Fatalf("replay: exit %d\n%s\n%s", code, rout, errs)
	}
	measures := func(s string) string { return s[strings.Index(s, "Measures"):] }
	if measures(rout) != measures(out) {
		t.Errorf("the replay's measures differ from the run's")
	}
}

func TestNetFlagErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--dir", dir, "--resume", "x", "--seed", "3"}, "--resume takes --seed from the recorded run"},
		{[]string{"run", "--dir", dir, "--resume", "x", "--replay", "y"}, "exclude each other"},
		{[]string{"run", "--dir", dir, "--replay", "x", "--cache"}, "no network calls"},
		{[]string{"run", "--dir", dir, "--model", "openai-compatible:m"}, "--base-url"},
		{[]string{"run", "--dir", dir, "--model", "openai:gpt-4o"}, "OPENAI_API_KEY"},
		{[]string{"run", "--dir", dir, "--max-cost", "-1"}, "must not be negative"},
		{[]string{"run", "--dir", dir, "--config", dir + "/none.yaml"}, "config"},
		{[]string{"run", "--dir", dir, "--resume", "nope"}, "no such run"},
		{[]string{"sim", "serve", "--rate-429", "2"}, "must be in [0, 1]"},
		{[]string{"sim"}, "usage: budge sim serve"},
	} {
		t.Setenv("OPENAI_API_KEY", "")
		code, _, errs := budge(t, c.args...)
		if code != ExitInvalid || !strings.Contains(errs, c.want) {
			t.Errorf("budge %s: exit %d, %q; want exit 2 with %q", strings.Join(c.args, " "), code, errs, c.want)
		}
	}
}
