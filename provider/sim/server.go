package sim

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/internal/jsontext"
	"github.com/buildlab/budge/provider"
)

// Faults is what the simulator server does wrong on purpose. Rates are
// shares of requests in [0, 1]; each request draws once, so the rates add
// up and their sum must not exceed 1.
type Faults struct {
	RateLimit  float64       `json:"rate_429"`    // 429 with Retry-After
	RetryAfter time.Duration `json:"retry_after"` // sent with every 429
	ServerErr  float64       `json:"rate_5xx"`    // 500, 502 and 503 in turn
	Reset      float64       `json:"rate_reset"`  // the connection is reset, no response
	Truncate   float64       `json:"rate_truncate"`
	Malformed  float64       `json:"rate_malformed"` // a 200 whose body is not JSON
	Empty      float64       `json:"rate_empty"`     // a 200 with empty content: a (bad) model answer
	// Messy wraps an answer the way real models do (a reasoning block,
	// prose around it, a fence inside prose, bold markup): the same
	// answer, which a tolerant reader recovers and names the repair of.
	Messy float64 `json:"rate_messy"`
	// Latency is added to every request: fixed, or drawn from a uniform
	// distribution on [Latency-Jitter, Latency+Jitter], or exponential
	// with mean Latency.
	Latency     time.Duration `json:"latency"`
	Jitter      time.Duration `json:"latency_jitter"`
	LatencyDist string        `json:"latency_dist"` // fixed (default), uniform, exponential
	Seed        uint64        `json:"seed"`
}

// Validate reports every problem.
func (f Faults) Validate() []error {
	var errs []error
	sum := 0.0
	for name, v := range map[string]float64{"429": f.RateLimit, "5xx": f.ServerErr, "reset": f.Reset, "truncate": f.Truncate, "malformed": f.Malformed, "empty": f.Empty, "messy": f.Messy} {
		if v < 0 || v > 1 {
			errs = append(errs, fmt.Errorf("fault rate %s must be in [0, 1], got %v", name, v))
		}
		sum += v
	}
	if sum > 1+1e-9 {
		errs = append(errs, fmt.Errorf("fault rates add up to %.3f, more than 1", sum))
	}
	if f.Latency < 0 || f.Jitter < 0 || f.RetryAfter < 0 {
		errs = append(errs, fmt.Errorf("latency, jitter and retry-after must not be negative"))
	}
	switch f.LatencyDist {
	case "", "fixed", "uniform", "exponential":
	default:
		errs = append(errs, fmt.Errorf("latency distribution must be fixed, uniform or exponential, got %q", f.LatencyDist))
	}
	return errs
}

// LogEntry is one line of the server's request log.
type LogEntry struct {
	Seq        int64     `json:"seq"`
	Time       time.Time `json:"time"`
	Model      string    `json:"model"`
	Seed       *int64    `json:"seed,omitempty"`
	Messages   int       `json:"messages"`
	BodySHA    string    `json:"body_sha256"`
	Status     int       `json:"status"`
	Fault      string    `json:"fault,omitempty"`
	DurationMS float64   `json:"duration_ms"`
}

// JudgeModel is the model name the simulated framing judge is served
// under ("judge", "judge:PROFILE"): a model, not a run's protocol.
const JudgeModel = "judge"

// ServerOptions configure a simulator server.
type ServerOptions struct {
	// Models resolves the model named in a request to an in-process
	// provider; nil serves "sim" and "sim:PROFILE".
	Models func(model string) (provider.Provider, error)
	// Judge is the answer table of the simulated framing judge, served as
	// "judge" and "judge:PROFILE" (nil: no judge).
	Judge *Knowledge
	// Oracle is the answer key sim:oracle is handed (record id ->
	// selection, as pressure.Deck.AnswerKey gives it), from the decks the
	// server was started with; nil: sim:oracle is not served, as no model
	// under test is ever handed a key.
	Oracle map[string]string
	Faults Faults
	// Log receives one JSON line per request; OnRequest sees every entry.
	Log       io.Writer
	OnRequest func(LogEntry)
	// Batch sets the batch endpoints' delay, error rate and expiries.
	Batch BatchOptions
	// APIKey, when set, is the key every request must carry (as a bearer
	// token or as x-api-key); any other gets a 401 as an API's would.
	APIKey string
}

// Server is the simulator (or any in-process provider) behind an
// OpenAI-compatible chat completions API, with fault injection and a
// request log. Without faults, a client gets exactly the answers the
// in-process provider gives for the same requests.
type Server struct {
	o      ServerOptions
	mu     sync.Mutex
	rng    *rand.Rand
	models map[string]provider.Provider
	seq    int64
	faults map[string]int
	five   int
	batch  *batches
}

// NewServer returns a server; it checks the faults.
func NewServer(o ServerOptions) (*Server, error) {
	if errs := append(o.Faults.Validate(), o.Batch.Validate()...); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if o.Models == nil {
		o.Models = func(model string) (provider.Provider, error) {
			kind, profile, _ := strings.Cut(model, ":")
			if kind == JudgeModel && o.Judge != nil {
				p, err := LookupFramingProfile(profile)
				if err != nil {
					return nil, err
				}
				return NewJudge(p, o.Judge), nil
			}
			if kind == "sim" && profile == OracleName {
				if o.Oracle == nil {
					return nil, fmt.Errorf("the model `%s` is not served here: it is handed a deck's answer key, so this server serves it only when started with --oracle-deck DECK", model)
				}
				return NewOracle(o.Oracle), nil
			}
			if kind != "sim" {
				return nil, fmt.Errorf("the model `%s` does not exist: this server serves sim and sim:PROFILE (%s), and judge or judge:PROFILE (%s) for framing runs", model, strings.Join(ProfileNames(), ", "), strings.Join(FramingProfileNames(), ", "))
			}
			p, err := LookupProfile(profile)
			if err != nil {
				return nil, err
			}
			if o.Judge != nil && profile == "" {
				// As in process, sim judges a framing prompt (one about
				// an item whose answers the server knows) as the judge.
				j, err := LookupFramingProfile("")
				if err != nil {
					return nil, err
				}
				return either{New(p), NewJudge(j, o.Judge)}, nil
			}
			return New(p), nil
		}
	}
	return &Server{o: o, rng: rand.New(rand.NewPCG(o.Faults.Seed, 0xfa017)), models: map[string]provider.Provider{}, faults: map[string]int{}}, nil
}

// FaultCounts returns how many faults of each kind were injected.
func (s *Server) FaultCounts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.faults))
	for k, v := range s.faults {
		out[k] = v
	}
	return out
}

// Requests returns how many chat requests arrived.
func (s *Server) Requests() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seq
}

// Handler serves POST /v1/chat/completions, GET /v1/models and GET /healthz.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.chat)
	mux.HandleFunc("POST /chat/completions", s.chat)
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		var data []map[string]any
		names := append([]string{"sim"}, ProfileNames()...)
		if s.o.Oracle != nil {
			names = append(names, OracleName)
		}
		for _, n := range names {
			id := n
			if n != "sim" {
				id = "sim:" + n
			}
			data = append(data, map[string]any{"id": id, "object": "model", "owned_by": "budge"})
		}
		writeJSON(w, 200, map[string]any{"object": "list", "data": data}, nil)
	})
	mux.HandleFunc("POST /v1/messages", s.messages)
	s.batchRoutes(mux)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") })
	if s.o.APIKey == "" {
		return mux
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" && !s.authorised(r) {
			if strings.HasPrefix(r.URL.Path, "/v1/messages") {
				writeAnthropicError(w, 401, "authentication_error", "invalid x-api-key")
			} else {
				writeError(w, 401, "invalid_api_key", "Incorrect API key provided.", nil)
			}
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// authorised says the request carries the server's key.
func (s *Server) authorised(r *http.Request) bool {
	key := r.Header.Get("X-Api-Key")
	if b, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		key = b
	}
	return key != "" && subtle.ConstantTimeCompare([]byte(key), []byte(s.o.APIKey)) == 1
}

func (s *Server) model(name string) (provider.Provider, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.models[name]; ok {
		return p, nil
	}
	p, err := s.o.Models(name)
	if err != nil {
		return nil, err
	}
	s.models[name] = p
	return p, nil
}

// draw picks this request's fault and latency.
func (s *Server) draw() (seq int64, fault string, status int, latency time.Duration) {
	f := s.o.Faults
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	u := s.rng.Float64()
	for _, c := range []struct {
		name string
		rate float64
	}{{"429", f.RateLimit}, {"5xx", f.ServerErr}, {"reset", f.Reset}, {"truncate", f.Truncate}, {"malformed", f.Malformed}, {"empty", f.Empty}, {"messy", f.Messy}} {
		if u < c.rate {
			fault = c.name
			break
		}
		u -= c.rate
	}
	if fault != "" {
		s.faults[fault]++
	}
	if fault == "5xx" {
		status = []int{500, 502, 503}[s.five%3]
		s.five++
	}
	latency = f.Latency
	switch f.LatencyDist {
	case "uniform":
		latency += time.Duration((2*s.rng.Float64() - 1) * float64(f.Jitter))
	case "exponential":
		latency = time.Duration(-math.Log(1-s.rng.Float64()) * float64(f.Latency))
	}
	return s.seq, fault, status, max(latency, 0)
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	body, err := readBody(r, 64<<20)
	seq, fault, fstatus, latency := s.draw()
	entry := LogEntry{Seq: seq, Time: start.UTC(), Fault: fault}
	sum := sha256.Sum256(body)
	entry.BodySHA = hex.EncodeToString(sum[:])
	defer func() {
		entry.DurationMS = float64(time.Since(start).Microseconds()) / 1000
		s.record(entry)
	}()
	if err != nil {
		entry.Status = 400
		writeError(w, 400, "invalid_request_error", "could not read the request body", nil)
		return
	}
	req, werr := decodeRequest(body)
	if werr != nil {
		entry.Status = 400
		writeError(w, 400, "invalid_request_error", werr.Error(), nil)
		return
	}
	entry.Model, entry.Seed, entry.Messages = req.Model, req.Settings.Seed, len(req.Messages)
	if latency > 0 {
		t := time.NewTimer(latency)
		select {
		case <-r.Context().Done():
			t.Stop()
			entry.Status = 499
			return
		case <-t.C:
		}
	}
	switch fault {
	case "429":
		h := map[string]string{"Retry-After-Ms": strconv.FormatInt(s.o.Faults.RetryAfter.Milliseconds(), 10),
			"Retry-After": strconv.Itoa(int(math.Ceil(s.o.Faults.RetryAfter.Seconds())))}
		entry.Status = 429
		writeError(w, 429, "rate_limit_exceeded", "Rate limit reached (injected by budge sim serve)", h)
		return
	case "5xx":
		entry.Status = fstatus
		writeError(w, fstatus, "server_error", "The server had an error (injected by budge sim serve)", nil)
		return
	case "reset":
		entry.Status = 0
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			if tc, ok := conn.(*net.TCPConn); ok {
				tc.SetLinger(0)
			}
			conn.Close()
		}
		return
	case "malformed":
		entry.Status = 200
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id": "chatcmpl-broken", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": "{\"selection\": `)
		io.WriteString(w, "\x00\x01}garbage")
		return
	}
	p, err := s.model(req.Model)
	if err != nil {
		entry.Status = 404
		writeError(w, 404, "model_not_found", err.Error(), nil)
		return
	}
	resp, err := p.Chat(r.Context(), req)
	if err != nil {
		var pe *provider.Error
		status := 500
		if errors.As(err, &pe) && pe.Status != 0 {
			status = pe.Status
		}
		entry.Status = status
		writeError(w, status, "server_error", err.Error(), nil)
		return
	}
	switch {
	case fault == "empty":
		resp.Message.Content, resp.Message.ToolCalls = "", nil
		resp.FinishReason, resp.Usage.OutputTokens = "stop", 0
	case fault == "messy" && resp.Message.Content != "" && len(resp.Message.ToolCalls) == 0:
		resp.Message.Content = messy(resp.Message.Content)
	}
	out := encodeResponse(resp, start)
	entry.Status = 200
	w.Header().Set("Content-Type", "application/json")
	if resp.Meta.RequestID != "" {
		w.Header().Set("X-Request-Id", resp.Meta.RequestID)
	}
	if fault == "truncate" {
		w.Header().Set("Content-Length", strconv.Itoa(len(out)))
		w.WriteHeader(200)
		w.Write(out[:len(out)/2])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // closes the connection mid-body, without a log line
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	w.Write(out)
}

// readBody reads a request's body, at most limit bytes, into a buffer of
// its declared length (io.ReadAll would grow one from 512 bytes).
func readBody(r *http.Request, limit int64) ([]byte, error) {
	if n := r.ContentLength; n > 0 && n <= limit {
		b := make([]byte, n)
		if _, err := io.ReadFull(r.Body, b); err != nil {
			return nil, err
		}
		return b, nil
	}
	return io.ReadAll(io.LimitReader(r.Body, limit))
}

func (s *Server) record(e LogEntry) {
	if s.o.OnRequest != nil {
		s.o.OnRequest(e)
	}
	if s.o.Log != nil {
		b, _ := json.Marshal(e)
		s.mu.Lock()
		s.o.Log.Write(append(b, '\n'))
		s.mu.Unlock()
	}
}

func writeError(w http.ResponseWriter, status int, code, msg string, headers map[string]string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": code, "param": nil, "code": code}}, headers)
}

func writeJSON(w http.ResponseWriter, status int, v any, headers map[string]string) {
	for k, val := range headers {
		w.Header().Set(k, val)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// The OpenAI wire format, as much of it as the simulator reads. The server
// decodes it with its own types, not the SDK's, so the client and the
// server are two independent implementations of the format.
type wireRequest struct {
	Model               string              `json:"model"`
	Messages            []wireMessage       `json:"messages"`
	Tools               []wireTool          `json:"tools"`
	ResponseFormat      *wireResponseFormat `json:"response_format"`
	Seed                *int64              `json:"seed"`
	Temperature         *float64            `json:"temperature"`
	MaxTokens           *int                `json:"max_tokens"`
	MaxCompletionTokens *int                `json:"max_completion_tokens"`
	Stream              bool                `json:"stream"`
}

type wireTool struct {
	Type     string           `json:"type"`
	Function wireFunctionDecl `json:"function"`
}

type wireFunctionDecl struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

type wireResponseFormat struct {
	Type       string          `json:"type"`
	JSONSchema *wireJSONSchema `json:"json_schema"`
}

type wireJSONSchema struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict bool            `json:"strict"`
}

type wireMessage struct {
	Role       string         `json:"role"`
	Content    any            `json:"content"` // a string, null or text parts: decoded in one pass
	Refusal    *string        `json:"refusal"`
	ToolCallID string         `json:"tool_call_id"`
	Name       string         `json:"name"`
	ToolCalls  []wireToolCall `json:"tool_calls"`
}

type wireToolCall struct {
	ID       string           `json:"id"`
	Type     string           `json:"type"`
	Function wireFunctionCall `json:"function"`
}

type wireFunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

func decodeRequest(body []byte) (*chat.Request, error) {
	var w wireRequest
	if !decodeWire(body, &w) {
		w = wireRequest{}
		if err := json.Unmarshal(body, &w); err != nil {
			return nil, fmt.Errorf("request body is not valid JSON: %v", err)
		}
	}
	if w.Stream {
		return nil, fmt.Errorf("stream: streaming is not supported by budge sim serve")
	}
	if w.Model == "" || len(w.Messages) == 0 {
		return nil, fmt.Errorf("model and messages are required")
	}
	req := &chat.Request{Model: w.Model}
	for i, m := range w.Messages {
		cm := chat.Message{Role: chat.Role(m.Role), ToolCallID: m.ToolCallID}
		switch cm.Role {
		case chat.System, chat.User, chat.Assistant, chat.ToolRole:
		case "developer":
			cm.Role = chat.System
		default:
			return nil, fmt.Errorf("messages[%d].role: unknown role %q", i, m.Role)
		}
		text, err := contentText(m.Content)
		if err != nil {
			return nil, fmt.Errorf("messages[%d].content: %v", i, err)
		}
		cm.Content = text
		if m.Refusal != nil {
			cm.Refusal = *m.Refusal
		}
		for _, tc := range m.ToolCalls {
			args := json.RawMessage(tc.Function.Arguments)
			if !json.Valid(args) {
				b, _ := json.Marshal(tc.Function.Arguments)
				args = b
			}
			cm.ToolCalls = append(cm.ToolCalls, chat.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: args})
		}
		req.Messages = append(req.Messages, cm)
	}
	for _, t := range w.Tools {
		req.Tools = append(req.Tools, chat.Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	if rf := w.ResponseFormat; rf != nil && rf.Type == "json_schema" && rf.JSONSchema != nil {
		req.ResponseFormat = &chat.ResponseFormat{Name: rf.JSONSchema.Name, Schema: rf.JSONSchema.Schema, Strict: rf.JSONSchema.Strict}
	}
	req.Settings = chat.Settings{Temperature: w.Temperature, Seed: w.Seed}
	if w.MaxTokens != nil {
		req.Settings.MaxTokens = *w.MaxTokens
	} else if w.MaxCompletionTokens != nil {
		req.Settings.MaxTokens = *w.MaxCompletionTokens
	}
	return req, nil
}

// contentText reads a message content: a string, null, or an array of text parts.
func contentText(c any) (string, error) {
	switch v := c.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case []any:
		var b strings.Builder
		for _, p := range v {
			part, ok := p.(map[string]any)
			if !ok {
				return "", fmt.Errorf("must be a string or an array of text parts")
			}
			text, _ := part["text"].(string)
			b.WriteString(text)
		}
		return b.String(), nil
	}
	return "", fmt.Errorf("must be a string or an array of text parts")
}

// encodeResponse writes a chat completion as json.Marshal wrote the
// map of it the server once built (keys in sorted order, strings escaped
// as json.Marshal escapes them; a test holds the bytes equal), without
// reflection: it was a tenth of what the server spent on a call.
func encodeResponse(r *chat.Response, now time.Time) []byte {
	finish := r.FinishReason
	if finish == "" {
		finish = "stop"
	}
	m := r.Message
	n := 320 + len(m.Content) + len(m.Refusal) + len(r.Meta.ModelID) + len(r.Meta.Fingerprint) + len(r.Meta.RequestID)
	for _, tc := range m.ToolCalls {
		n += 64 + len(tc.ID) + len(tc.Name) + 2*len(tc.Arguments)
	}
	b := make([]byte, 0, n)
	b = append(b, `{"choices":[{"finish_reason":`...)
	b = jsontext.AppendString(b, finish)
	b = append(b, `,"index":0,"logprobs":null,"message":{"role":"assistant","content":`...)
	if m.Content != "" || len(m.ToolCalls) == 0 {
		b = jsontext.AppendString(b, m.Content)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"refusal":`...)
	if m.Refusal != "" {
		b = jsontext.AppendString(b, m.Refusal)
	} else {
		b = append(b, "null"...)
	}
	if len(m.ToolCalls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i, tc := range m.ToolCalls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"id":`...)
			b = jsontext.AppendString(b, tc.ID)
			b = append(b, `,"type":"function","function":{"name":`...)
			b = jsontext.AppendString(b, tc.Name)
			b = append(b, `,"arguments":`...)
			b = jsontext.AppendString(b, string(tc.Arguments))
			b = append(b, "}}"...)
		}
		b = append(b, ']')
	}
	b = append(b, `}}],"created":`...)
	b = strconv.AppendInt(b, now.Unix(), 10)
	b = append(b, `,"id":`...)
	b = jsontext.AppendString(b, "chatcmpl-"+strings.TrimPrefix(r.Meta.RequestID, "sim-"))
	b = append(b, `,"model":`...)
	b = jsontext.AppendString(b, r.Meta.ModelID)
	b = append(b, `,"object":"chat.completion","system_fingerprint":`...)
	b = jsontext.AppendString(b, r.Meta.Fingerprint)
	b = append(b, `,"usage":{"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(r.Usage.OutputTokens), 10)
	b = append(b, `,"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(r.Usage.InputTokens), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(r.Usage.InputTokens+r.Usage.OutputTokens), 10)
	return append(b, "}}"...)
}

// Serve runs a server on addr until ctx is done. ready, when set, is called
// with the address actually bound (addr may name port 0).
func (s *Server) Serve(ctx context.Context, addr string, ready func(net.Addr)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 30 * time.Second}
	if ready != nil {
		ready(ln.Addr())
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		return nil
	case err := <-done:
		return err
	}
}

// messy wraps an answer in one of the ways real models wrap theirs, chosen
// by the answer itself (so concurrency does not change which).
func messy(answer string) string {
	h := fnv.New32a()
	io.WriteString(h, answer)
	switch h.Sum32() % 4 {
	case 0:
		return "<think>\nThe user wants a recommendation. Let me check the registry records before I answer.\n</think>\n" + answer
	case 1:
		return "Here is my recommendation based on the registry:\n\n" + answer + "\n\nLet me know if anything changes."
	case 2:
		return "Sure. After checking the records:\n```json\n" + answer + "\n```\nThat is my answer."
	}
	return "**" + answer + "**"
}

// either is the simulator that answers a framing judgment as the judge and
// everything else as the pressure simulator: a judgment is a request
// without tools whose first user message names an item the judge knows.
type either struct {
	sim   provider.Provider
	judge *Judge
}

func (e either) Info() provider.Info { return e.sim.Info() }

func (e either) Chat(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	if len(req.Tools) == 0 {
		for _, m := range req.Messages {
			if m.Role == chat.User {
				if e.judge.read(m.Content).known {
					return e.judge.Chat(ctx, req)
				}
				break
			}
		}
	}
	return e.sim.Chat(ctx, req)
}
