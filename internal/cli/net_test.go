package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/provider/sim"
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

// TestHugeToolArgumentsEndTheirSessions: an endpoint that answers every
// turn of one case with a tool call carrying about 7 MiB of arguments (just
// under the response limit, and incompressible) ends those sessions with
// kind session_too_large, within bounded memory and disk; the sessions of
// the other cases are answered as usual.
func TestHugeToolArgumentsEndTheirSessions(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("moves a few hundred megabytes")
	}
	deckPath, d := awkwardDeck(t)
	hostileP, hostileQ := d.Cases[0].ProfileIDs()
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/"
	big := make([]byte, 7<<20)
	for i := range big {
		big[i] = alphabet[rng.IntN(len(alphabet))]
	}
	args, _ := json.Marshal(map[string]string{"note": string(big)})
	// The hostile answer, encoded once (the server's own memory stays
	// small): a tool call whose arguments are args.
	huge, _ := json.Marshal(map[string]any{"id": "cmpl-huge", "object": "chat.completion", "created": 1, "model": "huge",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "tool_calls", "message": map[string]any{"role": "assistant", "content": nil,
			"tool_calls": []any{map[string]any{"id": "call_huge", "type": "function",
				"function": map[string]any{"name": pressure.ToolAvailability, "arguments": string(args)}}}}}},
		"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
	big, args = nil, nil
	var calls, hugeCalls atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		conv, err := conversation(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(conv, hostileP) && strings.Contains(conv, hostileQ) {
			hugeCalls.Add(1)
			w.Write(huge)
			return
		}
		id, _ := meantID(d, conv)
		json.NewEncoder(w).Encode(map[string]any{"id": fmt.Sprintf("cmpl-%d", n), "object": "chat.completion", "created": 1, "model": "huge",
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": answerJSON(id)}, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
	}))
	defer hs.Close()

	// The memory the process takes from the system, sampled while the run
	// goes (test and server included).
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if used := ms.Sys - ms.HeapReleased; used > peak.Load() {
				peak.Store(used)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	dir := t.TempDir()
	start := time.Now()
	code, out, errs := budge(t, "run", "--dir", dir, "--deck", deckPath, "--model", "openai-compatible:huge", "--base-url", hs.URL+"/v1",
		"--channel", "tool", "--concurrency", "8", "--max-attempts", "1", "--quiet")
	close(stop)
	<-sampled
	elapsed := time.Since(start)
	// The hostile case's sessions failed: the run is incomplete.
	if code != ExitIncomplete {
		t.Fatalf("run exit %d, want %d\n%s\n%s", code, ExitIncomplete, out, errs)
	}
	var disk int64
	filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			if fi, err := e.Info(); err == nil {
				disk += fi.Size()
			}
		}
		return nil
	})
	t.Logf("%d calls (%d answered with 7 MiB of tool arguments) in %v; peak memory %d MB, store %d MB",
		calls.Load(), hugeCalls.Load(), elapsed.Round(time.Millisecond), peak.Load()>>20, disk>>20)
	if p := peak.Load(); p >= 300<<20 {
		t.Errorf("peak memory %d MB, want under 300 MB", p>>20)
	}
	if disk >= 200<<20 {
		t.Errorf("store %d MB, want under 200 MB", disk>>20)
	}

	code, out, errs = budge(t, "export", "latest", "--dir", dir)
	if code != ExitOK {
		t.Fatalf("export exit %d: %s", code, errs)
	}
	hostile, others := 0, 0
	for _, r := range readExport(t, out) {
		if r.CaseID == d.Cases[0].ID {
			if hostile == 0 {
				t.Logf("%s: %v", r.InitialStatus, deref(r.InitialProb))
			}
			hostile++
			if !strings.HasPrefix(fmt.Sprint(deref(r.InitialProb)), "session_too_large: ") {
				t.Errorf("%s/%s/%s: initial %s (%v), want failed with session_too_large", r.CaseID, r.Assignment, r.Branch, r.InitialStatus, deref(r.InitialProb))
			}
			continue
		}
		others++
		if r.InitialStatus != "correct" {
			t.Errorf("%s/%s/%s: initial %s (%v), want correct", r.CaseID, r.Assignment, r.Branch, r.InitialStatus, deref(r.InitialProb))
		}
	}
	if hostile == 0 || others == 0 {
		t.Fatalf("%d sessions of the hostile case, %d of the others", hostile, others)
	}
}

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

// A run whose evidence reaches the model as user-role text says so in its
// output, its export and every report format, and never calls its
// correction measure verified. (The simulator in process answers as over
// HTTP: study's TestHTTPSimulatorEqualsInProcess. A tool-channel run's
// output, without the deviation: TestRunThenReportAndExport.)
func TestMessageChannelDeviationEverywhere(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, out, errs := budge(t, "run", "--dir", dir, "--model", "sim", "--channel", "message", "--seed", "3", "--concurrency", "16", "--quiet")
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
}
