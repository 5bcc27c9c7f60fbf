package providertest

import (
	"sync"

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
