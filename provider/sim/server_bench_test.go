package sim_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider/openai"
	"github.com/buildlab/budge/provider/sim"
)

// wireBodies is the requests of testdata/requests (three sessions of a
// discovery-deck run, as the runner stored them) as an OpenAI-compatible
// client sends them to the simulator server.
func wireBodies(tb testing.TB) [][]byte {
	tb.Helper()
	names, err := filepath.Glob("testdata/requests/*.json")
	if err != nil || len(names) == 0 {
		tb.Fatalf("no requests in testdata/requests: %v", err)
	}
	var out [][]byte
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			tb.Fatal(err)
		}
		var req chat.Request
		if err := json.Unmarshal(b, &req); err != nil {
			tb.Fatalf("%s: %v", name, err)
		}
		req.Model = "sim"
		body, err := openai.Body(&req, openai.Format{})
		if err != nil {
			tb.Fatalf("%s: %v", name, err)
		}
		out = append(out, body)
	}
	return out
}

// BenchmarkServerChat is one call to the simulator server's chat
// completions handler (no latency, no network): what `budge sim serve`
// spends on a call of a run.
func BenchmarkServerChat(b *testing.B) {
	bodies := wireBodies(b)
	s, err := sim.NewServer(sim.ServerOptions{})
	if err != nil {
		b.Fatal(err)
	}
	h := s.Handler()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(bodies[i%len(bodies)]))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}
