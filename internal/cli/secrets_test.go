package cli

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/buildlab/budge/provider/sim"
)

const fakeKey = "fake-budge-key-0123456789abcdefghijKLMNOP"

// leaks reports where any 10-character piece of the key appears in b.
func leaks(b []byte) bool {
	for i := 0; i+10 <= len(fakeKey); i++ {
		if bytes.Contains(b, []byte(fakeKey[i:i+10])) {
			return true
		}
	}
	return false
}

// hostile serves next, except that it checks the key and, now and then,
// answers with errors that echo the key back: a 429 naming it, a 401
// showing it masked, an HTML 500 page quoting the header.
func hostile(t *testing.T, next http.Handler) http.Handler {
	var n atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization") + r.Header.Get("X-Api-Key")
		if !strings.Contains(auth, fakeKey) {
			w.WriteHeader(401)
			fmt.Fprintf(w, `{"error":{"message":"no key"}}`)
			return
		}
		switch k := n.Add(1); {
		case k%7 == 0:
			w.Header().Set("Retry-After-Ms", "1")
			w.WriteHeader(429)
			fmt.Fprintf(w, `{"error":{"message":"Rate limit reached for key %s","type":"requests","code":"rate_limit_exceeded"}}`, fakeKey)
		case k%13 == 0:
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(500)
			fmt.Fprintf(w, "<html><head><title>500 Internal Server Error</title></head><body>Authorization: %s</body></html>", auth)
		case k%11 == 0:
			// A 200 answer that echoes the key: in the content, the model
			// name and the response id.
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			answer := fmt.Sprintf(`{\"selection\": \"needs-human-choice\", \"record_ids\": [], \"explanation\": \"called with key %s\"}`, fakeKey)
			if strings.HasSuffix(r.URL.Path, "/messages") {
				fmt.Fprintf(w, `{"id":"msg_%s","type":"message","role":"assistant","model":"claude-test","content":[{"type":"text","text":"%s"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":5}}`, fakeKey, answer)
				return
			}
			fmt.Fprintf(w, `{"id":"chatcmpl-%s","object":"chat.completion","created":1,"model":"sim","system_fingerprint":"%s","choices":[{"index":0,"message":{"role":"assistant","content":"%s"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`, fakeKey, fakeKey, answer)
		case k%29 == 0:
			w.WriteHeader(401)
			fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s. Also %s...%s","type":"invalid_request_error","code":"invalid_api_key"}}`, fakeKey, fakeKey[:12], fakeKey[len(fakeKey)-6:])
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// anthropicAnswers answers every Messages request with a fixed answer.
func anthropicAnswers() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Request-Id", "req_test")
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[{"type":"text","text":"{\"selection\": \"needs-human-choice\", \"record_ids\": [], \"explanation\": \"x\"}"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":5}}`)
	})
}

// TestNoKeyOnDisk: after runs with a fake key against servers that echo it
// back in their errors, no piece of the key is anywhere in the run
// directory (database, WAL, artifacts, log, manifest, cache), in the run's
// output, or in the reports, exports and transcripts.
func TestNoKeyOnDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole deck twice")
	}
	t.Setenv("OPENAI_COMPATIBLE_API_KEY", fakeKey)
	t.Setenv("ANTHROPIC_API_KEY", fakeKey)
	s, err := sim.NewServer(sim.ServerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	oa := httptest.NewServer(hostile(t, s.Handler()))
	defer oa.Close()
	an := httptest.NewServer(hostile(t, anthropicAnswers()))
	defer an.Close()
	dir := t.TempDir()
	var out bytes.Buffer
	for _, args := range [][]string{
		{"run", "--dir", dir, "--model", "openai-compatible:sim", "--base-url", oa.URL + "/v1", "--max-attempts", "6", "--retry-base", "1ms", "--cache", "--concurrency", "16"},
		{"show", "--dir", dir, "latest", "robotics-arm/I/P-first/authority/r1"},
		{"report", "--dir", dir, "latest", "--format", "html"},
		{"deck", "freeze", "--dir", dir, "confirmation"},
		{"run", "--dir", dir, "--deck", "confirmation", "--model", "anthropic:claude-test", "--base-url", an.URL, "--max-attempts", "6", "--retry-base", "1ms", "--concurrency", "16"},
		{"report", "--dir", dir, "latest", "--format", "json"},
		{"report", "--dir", dir, "latest", "--format", "html"},
		{"export", "--dir", dir, "latest", "--format", "jsonl"},
		{"runs", "--dir", dir},
	} {
		code, o, e := budge(t, args...)
		out.WriteString(o + e)
		if code != ExitOK && code != ExitIncomplete {
			t.Fatalf("budge %s: exit %d\n%s", strings.Join(args, " "), code, e)
		}
	}
	if !strings.Contains(out.String(), "auth") {
		t.Errorf("the 401s should show as auth failures somewhere in the output")
	}
	if leaks(out.Bytes()) {
		t.Errorf("the key leaked into the output")
	}
	if !strings.Contains(out.String(), "[redacted]") {
		t.Errorf("no answer echoing the key reached the output redacted: the test did not exercise the 200 echo")
	}
	files := 0
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if leaks(b) {
			t.Errorf("the key is in %s", path)
		}
		return nil
	})
	if files < 5 {
		t.Errorf("only %d files in the run directory", files)
	}
}
