package providertest

import (
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/buildlab/budge/provider/sim"
)

// RequestLog keeps a server's request log in memory for inspection: pass
// its Add as sim.ServerOptions.OnRequest (the simulator server's log).
type RequestLog struct {
	mu      sync.Mutex
	entries []sim.LogEntry
}

// Add records one entry.
func (l *RequestLog) Add(e sim.LogEntry) {
	l.mu.Lock()
	l.entries = append(l.entries, e)
	l.mu.Unlock()
}

// Entries are the entries so far, in arrival order.
func (l *RequestLog) Entries() []sim.LogEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]sim.LogEntry(nil), l.entries...)
}

// SimServer is budge sim serve in a test: the simulator server with
// options o behind an HTTP server closed when t ends. Its requests go to
// the returned log unless o.OnRequest is set.
func SimServer(t testing.TB, o sim.ServerOptions) (*sim.Server, *httptest.Server, *RequestLog) {
	t.Helper()
	log := &RequestLog{}
	if o.OnRequest == nil {
		o.OnRequest = log.Add
	}
	s, err := sim.NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return s, hs, log
}
