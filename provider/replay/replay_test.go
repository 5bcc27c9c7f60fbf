package replay

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/testkit/providertest"
	"github.com/buildlab/budge/testkit/storetest"
)

type counting struct {
	calls atomic.Int64
	fail  bool
}

func (c *counting) Info() provider.Info {
	return provider.Info{Name: "fake", Model: "fake:m", Detail: `{"base_url":"http://x"}`}
}
func (c *counting) Chat(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, &provider.Error{Kind: provider.Canceled, Err: err}
	}
	n := c.calls.Add(1)
	if c.fail {
		return nil, &provider.Error{Kind: provider.Transient, Status: 503}
	}
	return &chat.Response{Message: chat.Message{Role: chat.Assistant, Content: "answer " + string(rune('0'+n))},
		FinishReason: "stop", Usage: chat.Usage{InputTokens: 3, OutputTokens: 2}, Meta: chat.Meta{ModelID: "m-1"}, Raw: []byte(`{"raw":true}`)}, nil
}

func TestCache(t *testing.T) {
	inner := &counting{}
	c, err := NewCache(t.TempDir(), inner)
	if err != nil {
		t.Fatal(err)
	}
	providertest.Basic(t, c, providertest.Request())
	ctx := provider.WithRepeat(context.Background(), 1)
	req := providertest.Request()
	a, _ := c.Chat(ctx, req)
	b, _ := c.Chat(ctx, req)
	if inner.calls.Load() != 2 || a.Message.Content != b.Message.Content || string(b.Raw) != `{"raw":true}` || b.Meta.ModelID != "m-1" {
		t.Errorf("a repeated request must come from the cache: %d calls, %+v %+v", inner.calls.Load(), a, b)
	}
	// Another repeat is another sample, even with the same request.
	r2, _ := c.Chat(provider.WithRepeat(context.Background(), 2), req)
	if inner.calls.Load() != 3 || r2.Message.Content == a.Message.Content {
		t.Errorf("repeat 2 must not share repeat 1's answer")
	}
	// Any change to the request is another key.
	seed := int64(43)
	req.Settings.Seed = &seed
	c.Chat(ctx, req)
	if inner.calls.Load() != 4 {
		t.Errorf("another seed must miss")
	}
	// Basic's call missed; then a miss, a hit, and two more misses.
	if hits, misses := c.Counts(); hits != 1 || misses != 4 {
		t.Errorf("hits %d misses %d, want 1 and 4", hits, misses)
	}
	// Failures are not cached.
	f := &counting{fail: true}
	fc, _ := NewCache(t.TempDir(), f)
	fc.Chat(ctx, req)
	fc.Chat(ctx, req)
	if f.calls.Load() != 2 {
		t.Errorf("a failure must not be cached")
	}
}

// recorded is a run's answers in memory: what New reads from a store.
type recorded struct {
	answers   map[string]store.Attempt
	artifacts map[string][]byte
	err       error // from Responses
}

func (r *recorded) Responses(_ context.Context, runID string) (map[string]store.Attempt, error) {
	if runID != "r1" {
		return nil, r.err
	}
	return r.answers, r.err
}

func (r *recorded) Artifact(_ context.Context, runID, sha string) ([]byte, error) {
	b, ok := r.artifacts[sha]
	if runID != "r1" || !ok {
		return nil, errors.New("no artifact " + sha)
	}
	return b, nil
}

// record keeps the answer to a request as a store would.
func (r *recorded) record(req *chat.Request, resp chat.Response, a store.Attempt) store.Attempt {
	reqBody, _ := json.Marshal(req)
	respBody, _ := json.Marshal(resp)
	a.RequestSHA, a.ResponseSHA = store.ArtifactID(reqBody), store.ArtifactID(respBody)
	r.answers[a.RequestSHA] = a
	r.artifacts[a.ResponseSHA] = respBody
	return a
}

func TestReplayProvider(t *testing.T) {
	ctx := context.Background()
	req := providertest.Request()
	rec := &recorded{answers: map[string]store.Attempt{}, artifacts: map[string][]byte{}}
	rec.record(req, chat.Response{Message: chat.Message{Role: chat.Assistant, Content: "recorded"}, FinishReason: "stop"},
		store.Attempt{Outcome: "ok", InputTokens: 7, OutputTokens: 5, ModelID: "model-2026", Fingerprint: "fp", RequestID: "req-9", FinishReason: "stop"})
	lost := providertest.Request()
	lost.Messages[1].Content += " (answer lost)"
	delete(rec.artifacts, rec.record(lost, chat.Response{}, store.Attempt{Outcome: "ok"}).ResponseSHA)

	p, err := New(ctx, rec, "r1", FormatChat, provider.Info{Name: "fake", Model: "fake:m"})
	if err != nil {
		t.Fatal(err)
	}
	providertest.Basic(t, p, req)
	got, err := p.Chat(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if got.Message.Content != "recorded" || got.Meta.ModelID != "model-2026" || got.Meta.RequestID != "req-9" || got.Usage.InputTokens != 7 {
		t.Errorf("replayed %+v", got)
	}
	if info := p.Info(); info.Name != "replay" || !strings.Contains(info.Detail, `"replay_of":"r1"`) {
		t.Errorf("info %+v", info)
	}
	other := providertest.Request()
	other.Messages[1].Content += " (changed)"
	var pe *provider.Error
	for _, r := range []*chat.Request{other, lost} {
		if _, err = p.Chat(ctx, r); !errors.As(err, &pe) || pe.Kind != provider.NotRecorded || pe.Kind.Infrastructure() {
			t.Errorf("a request without a readable answer: %v", err)
		}
	}
	if served, missed := p.Counts(); served != 2 || missed != 1 {
		t.Errorf("served %d missed %d", served, missed)
	}
	if _, err := New(ctx, rec, "nope", FormatChat, provider.Info{}); err == nil {
		t.Errorf("a run without answers cannot be replayed")
	}
	rec.err = errors.New("database is locked")
	if _, err := New(ctx, rec, "r1", FormatChat, provider.Info{}); !errors.Is(err, rec.err) {
		t.Errorf("New = %v, want the store's error", err)
	}
	if _, err := DecoderFor("xml"); err == nil {
		t.Errorf("unknown format accepted")
	}
}

// A replay reads a finished run from the store itself.
func TestReplayFromStore(t *testing.T) {
	st := storetest.Open(t)
	ctx := context.Background()
	req := providertest.Request()
	reqBody, _ := json.Marshal(req)
	respBody, _ := json.Marshal(chat.Response{Message: chat.Message{Role: chat.Assistant, Content: "stored"}, FinishReason: "stop"})
	reqSHA, reqBlob := store.Pack(reqBody)
	respSHA, respBlob := store.Pack(respBody)
	if err := st.CreateRun(ctx, store.Run{ID: "r1", Protocol: "pressure", Created: time.Now(), Status: "complete", DeckName: "d", DeckHash: "h", Model: "fake:m", Seed: "1", Manifest: []byte("{}")}, "x", []byte("x")); err != nil {
		t.Fatal(err)
	}
	se := store.Session{ID: "s1", Status: store.SessionComplete, Spec: []byte(`{}`), Started: time.Now(), Finished: time.Now(),
		Attempts:  []store.Attempt{{Incarnation: 1, Call: 1, Attempt: 1, Outcome: "ok", RequestSHA: reqSHA, ResponseSHA: respSHA, RequestID: "req-1"}},
		Artifacts: map[string]store.Blob{reqSHA: reqBlob, respSHA: respBlob}, TraceSHA: respSHA}
	if err := st.WriteSessions(ctx, "r1", []store.Session{se}); err != nil {
		t.Fatal(err)
	}
	p, err := New(ctx, st, "r1", FormatChat, provider.Info{Name: "fake", Model: "fake:m"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := p.Chat(ctx, req); err != nil || got.Message.Content != "stored" || got.Meta.RequestID != "req-1" {
		t.Errorf("replayed %+v, %v", got, err)
	}
}
