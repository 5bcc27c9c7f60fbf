package sim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/provider/openai"
	"github.com/buildlab/budge/provider/sim"
	"github.com/buildlab/budge/testkit/providertest"
)

func serve(t *testing.T, o sim.ServerOptions) (*sim.Server, string) {
	t.Helper()
	s, hs, _ := providertest.SimServer(t, o)
	return s, hs.URL
}

func client(t *testing.T, url string) *openai.Provider {
	t.Helper()
	p, err := openai.New(openai.Config{Name: "openai-compatible", Model: "sim", BaseURL: url + "/v1", Tools: true})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestServerAnswersLikeInProcess: the same request gets the same answer
// over HTTP as in process, tool calls and usage included.
func TestServerAnswersLikeInProcess(t *testing.T) {
	_, url := serve(t, sim.ServerOptions{})
	p := client(t, url)
	providertest.Basic(t, p, providertest.Request())
	local, _ := sim.LookupProfile("default")
	req := providertest.Request()
	req.Messages = req.Messages[:2] // the model has not read the registry yet: it calls the tool
	want, err := sim.New(local).Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Message.ToolCalls) != 1 || got.Message.ToolCalls[0].ID != want.Message.ToolCalls[0].ID ||
		string(got.Message.ToolCalls[0].Arguments) != string(want.Message.ToolCalls[0].Arguments) ||
		got.FinishReason != want.FinishReason || got.Usage != want.Usage || got.Meta.ModelID != want.Meta.ModelID || got.Meta.RequestID != want.Meta.RequestID {
		t.Errorf("over HTTP %+v\nin process %+v", got, want)
	}
}

// send sends req to the server: the status and body of its reply.
func send(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// call sends a request of method to url with body (nil: none) of content
// type ctype ("": none), as http.Get and http.Post do.
func call(t *testing.T, method, url, ctype string, body io.Reader) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	return send(t, req)
}

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	return call(t, "POST", url+"/v1/chat/completions", "application/json", strings.NewReader(body))
}

func TestServerRequests(t *testing.T) {
	var log bytes.Buffer
	_, url := serve(t, sim.ServerOptions{Log: &log})
	// Content as text parts, a developer message, max_completion_tokens.
	status, body := post(t, url, `{"model":"sim:stubborn","seed":3,"max_completion_tokens":50,"messages":[{"role":"developer","content":"sys"},{"role":"user","content":[{"type":"text","text":"hello"}]}]}`)
	if status != 200 || !strings.Contains(body, `"budge-sim-stubborn"`) || !strings.Contains(body, `"chat.completion"`) {
		t.Errorf("%d %s", status, body)
	}
	for req, want := range map[string]int{
		`{"model":"gpt-4","messages":[{"role":"user","content":"x"}]}`:             404,
		`{"model":"sim","stream":true,"messages":[{"role":"user","content":"x"}]}`: 400,
		`{"model":"sim","messages":[{"role":"robot","content":"x"}]}`:              400,
		`{"model":"sim","messages":[]}`:                                            400,
		`{"model":`:                                                                400,
	} {
		if status, body := post(t, url, req); status != want || !strings.Contains(body, `"error"`) {
			t.Errorf("%s: %d %s, want %d", req, status, body, want)
		}
	}
	resp, err := http.Get(url + "/v1/models")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("models: %v", err)
	}
	resp.Body.Close()
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 6 {
		t.Fatalf("%d log lines, want 6", len(lines))
	}
	var e sim.LogEntry
	if err := json.Unmarshal([]byte(lines[0]), &e); err != nil || e.Seq != 1 || e.Model != "sim:stubborn" || e.Seed == nil || *e.Seed != 3 || e.Status != 200 || len(e.BodySHA) != 64 {
		t.Errorf("log entry %s: %+v %v", lines[0], e, err)
	}
}

// TestServerFaults: each injected fault reaches the client as the failure
// it imitates, and the server counts what it injected.
func TestServerFaults(t *testing.T) {
	for _, c := range []struct {
		f    sim.Faults
		kind provider.Kind
	}{
		{sim.Faults{RateLimit: 1, RetryAfter: 1500 * time.Millisecond}, provider.RateLimited},
		{sim.Faults{ServerErr: 1}, provider.Transient},
		{sim.Faults{Reset: 1}, provider.ConnReset},
		{sim.Faults{Truncate: 1}, provider.Malformed},
		{sim.Faults{Malformed: 1}, provider.Malformed},
	} {
		s, url := serve(t, sim.ServerOptions{Faults: c.f})
		_, err := client(t, url).Chat(context.Background(), providertest.Request())
		var pe *provider.Error
		if !errors.As(err, &pe) || pe.Kind != c.kind {
			t.Errorf("%+v: %v, want %s", c.f, err, c.kind)
			continue
		}
		if c.kind == provider.RateLimited && pe.RetryAfter != 1500*time.Millisecond {
			t.Errorf("Retry-After %v", pe.RetryAfter)
		}
		if n := s.Requests(); n != 1 {
			t.Errorf("%+v: %d requests", c.f, n)
		}
	}
	_, url := serve(t, sim.ServerOptions{Faults: sim.Faults{Empty: 1}})
	resp, err := client(t, url).Chat(context.Background(), providertest.Request())
	if err != nil || resp.Message.Content != "" || len(resp.Message.ToolCalls) != 0 {
		t.Errorf("empty content is an answer: %+v %v", resp, err)
	}
	// Rates are honoured and drawn from the seed.
	s, url := serve(t, sim.ServerOptions{Faults: sim.Faults{RateLimit: 0.3, ServerErr: 0.1, Seed: 4}})
	p := client(t, url)
	for range 400 {
		p.Chat(context.Background(), &chat.Request{Model: "sim", Messages: []chat.Message{{Role: chat.User, Content: "x"}}})
	}
	f := s.FaultCounts()
	if f["429"] < 90 || f["429"] > 150 || f["5xx"] < 20 || f["5xx"] > 60 {
		t.Errorf("fault counts %v for rates 0.3 and 0.1 of 400", f)
	}
	// The operator's summary at shutdown says the same counts.
	want := fmt.Sprintf("served 400 chat requests; faults planted: 429 %d, 5xx %d", f["429"], f["5xx"])
	if got := s.Summary(); got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
}

func TestFaultsValidate(t *testing.T) {
	for _, f := range []sim.Faults{{RateLimit: 0.7, ServerErr: 0.5}, {Reset: -0.1}, {LatencyDist: "normal"}, {Latency: -time.Second}} {
		if errs := f.Validate(); len(errs) == 0 {
			t.Errorf("%+v accepted", f)
		}
	}
}

func TestServerLatency(t *testing.T) {
	_, url := serve(t, sim.ServerOptions{Faults: sim.Faults{Latency: 60 * time.Millisecond}})
	start := time.Now()
	if _, err := client(t, url).Chat(context.Background(), providertest.Request()); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 60*time.Millisecond {
		t.Errorf("answered in %v with 60ms latency", el)
	}
}

// A batch fault spec (budge sim serve --batch-faults) sets every fault the
// batch conformance scenarios plant, and a bad one is refused naming it.
func TestBatchFaultSpec(t *testing.T) {
	var o sim.BatchOptions
	if err := o.SetFaults("fail-downloads=2, cut-downloads=1,lose-create=1+3,fail=2,hold=1,fail-code=quota,max-bytes=400000,cancel-done=0.5,move-results"); err != nil {
		t.Fatal(err)
	}
	want := sim.BatchOptions{FailDownloads: 2, CutDownloads: 1, LoseCreate: []int{1, 3}, Fail: []int{2}, Hold: []int{1}, FailCode: "quota", MaxBytes: 400000, CancelDone: 0.5, MoveResults: true}
	if !reflect.DeepEqual(o, want) {
		t.Errorf("got %+v\nwant %+v", o, want)
	}
	for _, bad := range []string{"lose-create=0", "fail-downloads=-1", "max-bytes", "cancel-done=2", "move-results=1", "nope=1"} {
		var o sim.BatchOptions
		if err := o.SetFaults(bad); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
