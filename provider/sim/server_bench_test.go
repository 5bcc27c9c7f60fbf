package sim_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/buildlab/budge/provider/sim"
)

// BenchmarkServerChat is one call to the simulator server's chat
// completions handler (no latency, no network): what `budge sim serve`
// spends on a call of a run.
func BenchmarkServerChat(b *testing.B) {
	bodies := sim.RunBodies(b, "sim")
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
