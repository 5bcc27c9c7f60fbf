package cli

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestPreflightStopsABadEndpoint: a wrong model name, a wrong port, a wrong
// key and a URL that is no API each stop budge run with exit 2 in seconds,
// quoting the cause, with no run stored.
func TestPreflightStopsABadEndpoint(t *testing.T) {
	t.Setenv("BUDGE_TEST_SIM_KEY", "right-key-123")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	go func() {
		Main(ctx, []string{"sim", "serve", "--addr", "127.0.0.1:0", "--api-key-env", "BUDGE_TEST_SIM_KEY"}, strings.NewReader(""), pw, io.Discard)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "listening on http://") {
		t.Fatalf("serve printed %q, %v", line, err)
	}
	base := strings.TrimSpace(strings.TrimPrefix(line, "listening on "))
	plain := httptest.NewServer(http.FileServer(http.Dir(t.TempDir())))
	defer plain.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String() + "/v1"
	l.Close()
	for _, c := range []struct {
		name, model, url, key string
		want                  []string
	}{
		{"wrong model", "my-chat-model", base, "right-key-123", []string{`the model "my-chat-model" does not exist`, "model_not_found", "the server lists: sim"}},
		{"wrong port", "sim", closed, "right-key-123", []string{"nothing listens at " + closed, "connection refused", "check the host and port"}},
		{"wrong key", "sim", base, "wrong-key", []string{"refused the key", "Incorrect API key provided", "OPENAI_COMPATIBLE_API_KEY"}},
		{"no key", "sim", base, "", []string{"refused the key", "set OPENAI_COMPATIBLE_API_KEY"}},
		{"plain HTTP server", "sim", plain.URL + "/v1", "right-key-123", []string{"is not an OpenAI-compatible server", "404"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("OPENAI_COMPATIBLE_API_KEY", c.key)
			dir := t.TempDir()
			start := time.Now()
			code, out, errs := budge(t, "run", "--dir", dir, "--model", "openai-compatible:"+c.model, "--base-url", c.url, "--quiet")
			took := time.Since(start)
			if code != ExitInvalid || took > 5*time.Second {
				t.Fatalf("exit %d after %s, want exit 2 within 5s\n%s\n%s", code, took, out, errs)
			}
			for _, w := range c.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errs)
				}
			}
			if strings.Contains(errs, "right-key-123") || strings.Contains(errs, "wrong-key") {
				t.Errorf("a key reached stderr:\n%s", errs)
			}
			if _, runs, _ := budge(t, "runs", "--dir", dir); strings.Contains(runs, "pressure") {
				t.Errorf("a run was stored:\n%s", runs)
			}
		})
	}
	// The right key passes, and --no-preflight skips the check (the run's
	// calls then fail with the server's words in the store).
	t.Setenv("OPENAI_COMPATIBLE_API_KEY", "right-key-123")
	if code, out, errs := budge(t, "run", "--dir", t.TempDir(), "--model", "openai-compatible:sim", "--base-url", base, "--quiet"); code != ExitOK {
		t.Fatalf("right key: exit %d\n%s\n%s", code, out, errs)
	}
	t.Setenv("OPENAI_COMPATIBLE_API_KEY", "wrong-key")
	code, out, errs := budge(t, "run", "--dir", t.TempDir(), "--model", "openai-compatible:sim", "--base-url", base, "--quiet", "--no-preflight", "--max-attempts", "1")
	if code != ExitIncomplete || strings.Contains(errs, "preflight") {
		t.Fatalf("--no-preflight: exit %d, want 3 without a preflight\n%s\n%s", code, out, errs)
	}
}
