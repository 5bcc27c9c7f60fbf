package study

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
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

// The integration test against a real inference server: Ollama, built from
// the Go module proxy (.ci/ollama.sh), serving a tiny random-weight model
// that gguf_test.go writes. The model's answers mean nothing; the test
// asserts what a real server guarantees: well-formed responses, a status
// for every session, the provider's metadata stored, answers cut by the
// token limit handled as answers, schema-valid JSON whenever a
// json_schema-constrained answer finished, and a replay with the server
// gone.

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

// A writer of tiny random-weight GGUF models, so the Ollama integration test
// needs no downloaded model: GGUF v3, F32 tensors, a llama architecture of
// 2 blocks of width 64, and a SentencePiece vocabulary of the control
// tokens, the 256 byte tokens and printable ASCII, enough to spell any JSON.
// The model says nothing sensible; the test only relies on what a real
// server guarantees.

// GGUF value types.
const (
	ggufUint32  = 4
	ggufInt32   = 5
	ggufFloat32 = 6
	ggufString  = 8
	ggufArray   = 9
)

const ggufAlignment = 32

type ggufKV struct {
	key string
	typ uint32
	val any
}

type ggufTensor struct {
	name string
	dims []uint64 // ggml order: dims[0] varies fastest
	data []float32
}

type ggufWriter struct {
	w   *bufio.Writer
	n   int64
	err error
}

func (g *ggufWriter) write(v any) {
	if g.err != nil {
		return
	}
	g.err = binary.Write(g.w, binary.LittleEndian, v)
	g.n += int64(binary.Size(v))
}

func (g *ggufWriter) str(s string) {
	g.write(uint64(len(s)))
	if g.err == nil {
		_, g.err = io.WriteString(g.w, s)
		g.n += int64(len(s))
	}
}

func (g *ggufWriter) value(typ uint32, v any) {
	switch typ {
	case ggufString:
		g.str(v.(string))
	case ggufArray:
		switch a := v.(type) {
		case []string:
			g.write(uint32(ggufString))
			g.write(uint64(len(a)))
			for _, s := range a {
				g.str(s)
			}
		case []float32:
			g.write(uint32(ggufFloat32))
			g.write(uint64(len(a)))
			g.write(a)
		case []int32:
			g.write(uint32(ggufInt32))
			g.write(uint64(len(a)))
			g.write(a)
		default:
			g.err = fmt.Errorf("gguf: unsupported array %T", v)
		}
	default:
		g.write(v)
	}
}

func (g *ggufWriter) pad() {
	for g.n%ggufAlignment != 0 {
		g.write(uint8(0))
	}
}

// writeGGUF writes a GGUF v3 file.
func writeGGUF(path string, kvs []ggufKV, tensors []ggufTensor) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	g := &ggufWriter{w: bufio.NewWriter(f)}
	g.write([4]byte{'G', 'G', 'U', 'F'})
	g.write(uint32(3))
	g.write(uint64(len(tensors)))
	g.write(uint64(len(kvs)))
	for _, kv := range kvs {
		g.str(kv.key)
		g.write(kv.typ)
		g.value(kv.typ, kv.val)
	}
	var off uint64
	for _, t := range tensors {
		g.str(t.name)
		g.write(uint32(len(t.dims)))
		for _, d := range t.dims {
			g.write(d)
		}
		g.write(uint32(0)) // GGML_TYPE_F32
		g.write(off)
		size := uint64(len(t.data) * 4)
		off += (size + ggufAlignment - 1) / ggufAlignment * ggufAlignment
	}
	g.pad()
	for _, t := range tensors {
		g.write(t.data)
		g.pad()
	}
	if g.err == nil {
		g.err = g.w.Flush()
	}
	if err := f.Close(); g.err == nil {
		g.err = err
	}
	return g.err
}

// wordPieces returns SentencePiece tokens for the words of a text: every
// prefix of "▁word", so that the tokenizer's merges (highest score first,
// each merge must make a token) reach the whole word. Prompts made of these
// words then cost a token a word instead of a token a character.
func wordPieces(text string, limit int) []string {
	seen := map[string]bool{}
	var out []string
	for _, w := range strings.Fields(text) {
		r := []rune("▁" + w)
		for n := 2; n <= len(r) && n <= 16; n++ {
			p := string(r[:n])
			if !seen[p] && len(out) < limit {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// tinyLlama writes a random-weight llama model of about 600 KB (more with a
// corpus: its words become tokens). With chatML, the file carries a ChatML
// chat template.
func tinyLlama(path string, seed uint64, chatML bool, corpus ...string) error {
	const (
		embd   = 64
		blocks = 2
		ff     = 128
		heads  = 4
	)
	// Vocabulary: <unk> <s> </s>, the byte tokens, then "▁" and printable
	// ASCII, with descending scores.
	tokens := []string{"<unk>", "<s>", "</s>"}
	types := []int32{2, 3, 3}
	for b := 0; b < 256; b++ {
		tokens = append(tokens, fmt.Sprintf("<0x%02X>", b))
		types = append(types, 6)
	}
	tokens = append(tokens, "▁")
	types = append(types, 1)
	for c := 33; c < 127; c++ {
		tokens = append(tokens, string(rune(c)))
		types = append(types, 1)
	}
	scores := make([]float32, len(tokens))
	for i := range scores {
		scores[i] = -float32(i)
	}
	have := map[string]bool{}
	for _, tok := range tokens {
		have[tok] = true
	}
	for _, p := range wordPieces(strings.Join(corpus, " "), 12000) {
		if !have[p] {
			tokens = append(tokens, p)
			types = append(types, 1)
			scores = append(scores, float32(len([]rune(p)))) // longer pieces merge first
		}
	}
	vocab := uint64(len(tokens))
	kvs := []ggufKV{
		{"general.architecture", ggufString, "llama"},
		{"general.name", ggufString, "budge-tiny-random"},
		{"general.alignment", ggufUint32, uint32(ggufAlignment)},
		{"llama.context_length", ggufUint32, uint32(4096)},
		{"llama.embedding_length", ggufUint32, uint32(embd)},
		{"llama.block_count", ggufUint32, uint32(blocks)},
		{"llama.feed_forward_length", ggufUint32, uint32(ff)},
		{"llama.attention.head_count", ggufUint32, uint32(heads)},
		{"llama.attention.head_count_kv", ggufUint32, uint32(heads)},
		{"llama.attention.layer_norm_rms_epsilon", ggufFloat32, float32(1e-5)},
		{"llama.rope.dimension_count", ggufUint32, uint32(embd / heads)},
		{"llama.vocab_size", ggufUint32, uint32(vocab)},
		{"tokenizer.ggml.model", ggufString, "llama"},
		{"tokenizer.ggml.tokens", ggufArray, tokens},
		{"tokenizer.ggml.scores", ggufArray, scores},
		{"tokenizer.ggml.token_type", ggufArray, types},
		{"tokenizer.ggml.unknown_token_id", ggufUint32, uint32(0)},
		{"tokenizer.ggml.bos_token_id", ggufUint32, uint32(1)},
		{"tokenizer.ggml.eos_token_id", ggufUint32, uint32(2)},
	}
	if chatML {
		kvs = append(kvs, ggufKV{"tokenizer.chat_template", ggufString,
			"{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"})
	}
	rng := rand.New(rand.NewPCG(seed, 0x99f))
	random := func(n uint64) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = float32(rng.NormFloat64() * 0.05)
		}
		return out
	}
	ones := func(n uint64) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = 1
		}
		return out
	}
	// Dimension 0 of every embedding is large, so it stays positive through
	// the residual stream and the final norm: the output weights in that
	// dimension act as a bias per token. Closing a string, an array or an
	// object, and ending, are favoured, so that a json_schema-constrained
	// answer finishes in a few tokens instead of running to the limit.
	embed, output := random(embd*vocab), random(embd*vocab)
	for t := uint64(0); t < vocab; t++ {
		embed[t*embd] = 3
		output[t*embd] = 0
	}
	for i, tok := range tokens {
		switch tok {
		case `"`, "</s>":
			output[uint64(i)*embd] = 1
		case "]", "}":
			output[uint64(i)*embd] = 0.6
		case ",":
			output[uint64(i)*embd] = 0.3
		}
	}
	tensors := []ggufTensor{
		{"token_embd.weight", []uint64{embd, vocab}, embed},
		{"output_norm.weight", []uint64{embd}, ones(embd)},
		{"output.weight", []uint64{embd, vocab}, output},
	}
	for b := 0; b < blocks; b++ {
		p := fmt.Sprintf("blk.%d.", b)
		tensors = append(tensors,
			ggufTensor{p + "attn_norm.weight", []uint64{embd}, ones(embd)},
			ggufTensor{p + "attn_q.weight", []uint64{embd, embd}, random(embd * embd)},
			ggufTensor{p + "attn_k.weight", []uint64{embd, embd}, random(embd * embd)},
			ggufTensor{p + "attn_v.weight", []uint64{embd, embd}, random(embd * embd)},
			ggufTensor{p + "attn_output.weight", []uint64{embd, embd}, random(embd * embd)},
			ggufTensor{p + "ffn_norm.weight", []uint64{embd}, ones(embd)},
			ggufTensor{p + "ffn_gate.weight", []uint64{embd, ff}, random(embd * ff)},
			ggufTensor{p + "ffn_up.weight", []uint64{embd, ff}, random(embd * ff)},
			ggufTensor{p + "ffn_down.weight", []uint64{ff, embd}, random(ff * embd)},
		)
	}
	return writeGGUF(path, kvs, tensors)
}
