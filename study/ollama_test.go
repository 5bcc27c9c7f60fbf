package study

// The integration test against a real inference server: Ollama, built from
// the Go module proxy (.ci/ollama.sh), serving a tiny random-weight model
// that gguf_test.go writes. The model's answers mean nothing; the test
// asserts what a real server guarantees: well-formed responses, a status
// for every session, the provider's metadata stored, answers cut by the
// token limit handled as answers, schema-valid JSON whenever a
// json_schema-constrained answer finished, and a replay with the server
// gone.

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/provider/endpoint"
	"github.com/buildlab/budge/testkit/storetest"
)

// TestTinyGGUF checks the generator itself (no server needed).
func TestTinyGGUF(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	if err := tinyLlama(path, 1, true); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b[:4]) != "GGUF" || binary.LittleEndian.Uint32(b[4:]) != 3 {
		t.Fatalf("header % x", b[:8])
	}
	if n := binary.LittleEndian.Uint64(b[8:]); n != 3+2*9 {
		t.Errorf("%d tensors", n)
	}
	if len(b) < 400_000 || len(b) > 900_000 || len(b)%ggufAlignment != 0 {
		t.Errorf("size %d", len(b))
	}
	again := filepath.Join(t.TempDir(), "again.gguf")
	tinyLlama(again, 1, true)
	if c, _ := os.ReadFile(again); !bytes.Equal(c, b) {
		t.Errorf("the generator is not deterministic")
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startOllama serves a tiny model named budge-tiny and returns the host.
func startOllama(t *testing.T, bin string) (host string, stop func()) {
	t.Helper()
	dir := t.TempDir()
	model := filepath.Join(dir, "tiny.gguf")
	deckText, _ := pressure.BuiltinDeckBytes("discovery")
	if err := tinyLlama(model, 7, true, string(deckText)); err != nil {
		t.Fatal(err)
	}
	host = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	env := append(os.Environ(), "OLLAMA_HOST="+host, "OLLAMA_MODELS="+filepath.Join(dir, "models"), "HOME="+dir)
	logf, _ := os.Create(filepath.Join(dir, "serve.log"))
	serve := exec.Command(bin, "serve")
	serve.Env, serve.Stdout, serve.Stderr = env, logf, logf
	// Its own process group: ollama serve starts runner processes, and they
	// must go with it.
	serve.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := serve.Start(); err != nil {
		t.Fatalf("ollama serve: %v", err)
	}
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			syscall.Kill(-serve.Process.Pid, syscall.SIGTERM)
			done := make(chan struct{})
			go func() { serve.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
			}
			syscall.Kill(-serve.Process.Pid, syscall.SIGKILL)
			<-done
			killUnder(dir) // runners that left the group
			logf.Close()
		}
	}
	t.Cleanup(stop)
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get("http://" + host + "/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("ollama serve did not answer on %s:\n%s", host, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
	mf := filepath.Join(dir, "Modelfile")
	// One thread: ggml's threads spin while they wait, and on a small
	// machine that is busy with other work two threads run the tiny model
	// ten times slower than one.
	os.WriteFile(mf, []byte("FROM "+model+"\nPARAMETER num_thread 1\n"), 0o600)
	create := exec.Command(bin, "create", "budge-tiny", "-f", mf)
	create.Env = env
	if out, err := create.CombinedOutput(); err != nil {
		t.Fatalf("ollama create: %v\n%s", err, out)
	}
	return host, stop
}

// killUnder kills the processes whose command line names a path under dir:
// the runner processes ollama serve started for this test's models.
func killUnder(dir string) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmd, []byte(dir)) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// miniDeck writes a small deck cut from the discovery deck: its first case
// whose reference is P, its first whose reference is Q and its first
// ambiguous case, once: 56 sessions.
func miniDeck(t *testing.T, dir string) string {
	t.Helper()
	src, err := pressure.BuiltinDeckBytes("discovery")
	if err != nil {
		t.Fatal(err)
	}
	head, body, ok := strings.Cut(string(src), "\ncases:\n")
	if !ok {
		t.Fatal("discovery deck: no cases")
	}
	head = strings.Replace(head, "\nrepeats: 2\n", "\nrepeats: 1\n", 1)
	head = strings.Replace(head, "\nname: discovery\n", "\nname: ollama-mini\n", 1)
	blocks := strings.Split(body, "\n  - id: ")
	seen := map[string]bool{}
	var keep []string
	for i, b := range blocks {
		if i > 0 {
			b = "  - id: " + b
		}
		key := ""
		for _, line := range strings.Split(b, "\n") {
			if l := strings.TrimSpace(line); strings.HasPrefix(l, "reference: ") && strings.HasPrefix(line, "    reference") {
				key = l
			}
		}
		if key != "" && !seen[key] {
			seen[key] = true
			keep = append(keep, strings.TrimRight(b, "\n"))
		}
	}
	path := filepath.Join(dir, "mini.yaml")
	os.WriteFile(path, []byte(head+"\ncases:\n"+strings.Join(keep, "\n")+"\n"), 0o600)
	deck, err := pressure.OpenDeck(path)
	if err != nil {
		t.Fatalf("mini deck: %v", err)
	}
	if n := len(pressure.Plan(deck)); n != 56 {
		t.Fatalf("mini deck has %d sessions, want 56", n)
	}
	return path
}

func TestOllamaIntegration(t *testing.T) {
	bin := os.Getenv("BUDGE_OLLAMA")
	if bin == "" {
		t.Skip("skipped: the Ollama integration test needs an ollama binary; set BUDGE_OLLAMA=/path/to/ollama " +
			"(.ci/ollama.sh builds one from the module proxy; .ci/run builds it and sets the variable)")
	}
	t.Parallel()
	deck := miniDeck(t, t.TempDir())
	host, stop := startOllama(t, bin)
	ctx := context.Background()
	st := storetest.Open(t)
	temp := 0.0
	o := DefaultPressureOptions()
	o.Deck, o.Model, o.Channel, o.Seed, o.Concurrency, o.MaxTokens, o.Temperature = deck, "ollama:budge-tiny", "message", 5, 2, 96, &temp
	o.Endpoint = endpoint.Options{Env: endpoint.Env{OllamaHost: host}, Concurrency: 2, Timeout: time.Minute}
	o.Retry = provider.RetryPolicy{MaxAttempts: 3, BaseDelay: 50 * time.Millisecond, MaxDelay: time.Second}
	res, err := As[*PressureResult](Start(ctx, st, o))
	if err != nil {
		t.Fatal(err)
	}
	c := res.Manifest.Counts
	t.Logf("ollama run: %+v, failures %v", c, res.Manifest.Net.FailedByKind)
	if c.Missing != 0 || c.Complete+c.Failed != c.Planned || c.Complete == 0 {
		t.Fatalf("every session must end with a status: %+v", c)
	}
	valid := []pressure.Status{pressure.Correct, pressure.Incorrect, pressure.NeedsHuman, pressure.Refusal, pressure.SchemaInvalid, pressure.Transport}
	for _, oc := range outcomesOf(t, res) {
		if !slices.Contains(valid, oc.InitialStatus) {
			t.Errorf("%s: initial status %q", oc.ID(), oc.InitialStatus)
		}
	}
	if len(res.Manifest.Reported.ModelIDs) == 0 || !strings.Contains(res.Manifest.Reported.ModelIDs[0], "budge-tiny") {
		t.Errorf("reported model ids %v", res.Manifest.Reported.ModelIDs)
	}
	sessions, err := st.Sessions(ctx, res.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	finishes := map[string]int{}
	schemaChecked := 0
	for _, se := range sessions {
		var spec pressure.Spec
		json.Unmarshal(se.Spec, &spec)
		for _, a := range se.Attempts {
			if a.Outcome != "ok" {
				continue
			}
			finishes[a.FinishReason]++
			if a.ModelID == "" || a.RequestID == "" || a.InputTokens == 0 {
				t.Errorf("%s: metadata not stored: %+v", se.ID, a)
			}
			body, err := st.Artifact(ctx, res.Run.ID, a.ResponseSHA)
			if err != nil || !json.Valid(body) {
				t.Fatalf("%s: response artifact: %v", se.ID, err)
			}
			// A json_schema-constrained answer that finished is
			// schema-valid JSON: the server's guarantee, not the model's.
			if a.FinishReason == "stop" {
				var cc struct {
					Choices []struct {
						Message struct{ Content string } `json:"message"`
					} `json:"choices"`
				}
				json.Unmarshal(body, &cc)
				var ans struct {
					Selection *string  `json:"selection"`
					RecordIDs []string `json:"record_ids"`
					Expl      *string  `json:"explanation"`
				}
				if err := json.Unmarshal([]byte(cc.Choices[0].Message.Content), &ans); err != nil || ans.Selection == nil || ans.Expl == nil {
					t.Errorf("%s: a finished json_schema answer is not schema-valid JSON: %q", se.ID, cc.Choices[0].Message.Content)
				}
				schemaChecked++
			}
		}
	}
	t.Logf("finish reasons %v; %d finished answers checked against the schema", finishes, schemaChecked)
	for f := range finishes {
		if f != "stop" && f != "length" {
			t.Errorf("unexpected finish reason %q", f)
		}
	}

	// Answers cut by the token limit are answers: scored, never retried.
	if c.Retries != 0 || c.FailedAttempts != 0 {
		t.Errorf("no call to a healthy local server should fail: %+v %v", c, res.Manifest.Net.FailedByKind)
	}
	for i, oc := range outcomesOf(t, res) {
		if oc.InitialStatus == pressure.Transport {
			t.Errorf("%s: a transport failure from a healthy server", oc.ID())
		}
		if a := sessions[i].Attempts; a[0].FinishReason == "length" && oc.InitialStatus != pressure.SchemaInvalid {
			t.Errorf("%s: an answer cut by the token limit is %s, want schema-invalid", oc.ID(), oc.InitialStatus)
		}
	}
	p4, err := endpoint.Open("ollama:budge-tiny", o.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	short, err := p4.Chat(ctx, &chat.Request{Model: "ollama:budge-tiny", Messages: []chat.Message{{Role: chat.User, Content: "Answer at length."}},
		Settings: chat.Settings{MaxTokens: 4, Temperature: &temp}, ResponseFormat: pressure.AnswerFormat(res.Deck.CaseByID(outcomesOf(t, res)[0].Case), pressure.PFirst)})
	if err != nil || short.FinishReason != "length" || short.Usage.OutputTokens > 4 {
		t.Errorf("4 max tokens: %+v %v", short, err)
	}

	// A model whose template has no tools: the server refuses tool
	// requests, and that is a bad request, not retried.
	p, err := endpoint.Open("ollama:budge-tiny", o.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	req := &chat.Request{Model: "ollama:budge-tiny", Messages: []chat.Message{{Role: chat.User, Content: "hi"}},
		Tools:    []chat.Tool{{Name: "get_availability", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}},
		Settings: chat.Settings{MaxTokens: 8}}
	if _, err := p.Chat(ctx, req); err != nil {
		var pe *provider.Error
		if !errors.As(err, &pe) || pe.Kind != provider.BadRequest {
			t.Errorf("tools on a model without tools: %v", err)
		}
		t.Logf("tools: %v", err)
	}

	// The server goes away; the run replays from the store.
	stop()
	rep, err := As[*PressureResult](Replay(ctx, st, res.Run.ID, DefaultPressureOptions().Control))
	if err != nil {
		t.Fatal(err)
	}
	sameOutcomes(t, "replay of the ollama run", rep, res)
	if rep.Run.Status != res.Run.Status {
		t.Errorf("replay status %s, run %s", rep.Run.Status, res.Run.Status)
	}
}
