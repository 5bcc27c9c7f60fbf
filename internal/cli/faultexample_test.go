package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The README's fault-injection example, as written: the simulator server
// with 20% 429s, 5% 5xx, 2% resets and 2% truncated bodies, and budge run
// at its default settings (only the server's Retry-After is shortened, to
// keep the test quick; waiting one out costs no attempt). The run
// completes, counts one failed attempt per injected fault, and has the
// measures of the in-process run without faults. (The same fault mix at
// the default attempts is runner.TestFaultMixCompletes, on a fake clock;
// its attempt counts are study.TestFaultInjectionAcceptance.)
func TestREADMEFaultInjectionExample(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 416 sessions through an HTTP server with faults")
	}
	t.Parallel() // mostly waiting out retry delays
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reqLog := filepath.Join(t.TempDir(), "req.jsonl")
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"sim", "serve", "--addr", "127.0.0.1:0", "--rate-429", "0.2", "--rate-5xx", "0.05", "--rate-reset", "0.02",
			"--rate-truncate", "0.02", "--request-log", reqLog, "--retry-after", "1ms"}, strings.NewReader(""), pw, io.Discard)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "listening on http://") {
		t.Fatalf("serve printed %q, %v", line, err)
	}
	go io.Copy(io.Discard, pr)
	base := strings.TrimSpace(strings.TrimPrefix(line, "listening on "))
	dir := t.TempDir()
	start := time.Now()
	code, out, errs := budge(t, "run", "--dir", dir, "--model", "openai-compatible:sim", "--base-url", base, "--quiet")
	took := time.Since(start)
	cancel()
	<-done
	if code != ExitOK || !strings.Contains(out, "416 planned, 416 complete, 0 failed (transport), 0 missing") {
		t.Fatalf("the README example at default settings: exit %d\n%.1200s\n%s", code, out, errs)
	}
	faults := map[string]int{}
	f, err := os.Open(reqLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	requests := 0
	for sc.Scan() {
		var r struct {
			Fault string `json:"fault"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("request log: %v", err)
		}
		requests++
		if r.Fault != "" {
			faults[r.Fault]++
		}
	}
	injected := faults["429"] + faults["5xx"] + faults["reset"] + faults["truncate"]
	if faults["429"] == 0 || faults["5xx"] == 0 || faults["reset"] == 0 || faults["truncate"] == 0 {
		t.Fatalf("faults injected %v", faults)
	}
	want := fmt.Sprintf("attempts %d (%d failed, %d retries)", requests, injected, injected)
	if !strings.Contains(out, want) {
		t.Errorf("report does not count one failed attempt per injected fault (%q, faults %v):\n%.900s", want, faults, out)
	}
	t.Logf("%d requests, faults %v, %s", requests, faults, took.Round(time.Second))

	// The same seed in process, without faults: the same measures.
	code, clean, errs := budge(t, "run", "--dir", dir, "--quiet")
	if code != ExitOK {
		t.Fatalf("in-process run: exit %d %s", code, errs)
	}
	measures := func(s string) string { return s[strings.Index(s, "Measures"):] }
	if measures(clean) != measures(out) {
		t.Errorf("the measures with faults differ from the in-process run's")
	}
}
