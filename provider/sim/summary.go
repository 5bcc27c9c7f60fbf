package sim

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Summary says what the server did, for its operator when it stops: the
// chat requests it answered, the faults it planted among them by kind, and
// the batches it was sent by style and by state with the files deleted.
// Checking a run's transport counts against these is how a user confirms
// that budge saw every planted fault.
func (s *Server) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "served %d chat requests", s.Requests())
	b.WriteString("; faults planted: " + counts(s.FaultCounts(), "none"))
	if s.hasBatches() {
		fmt.Fprintf(&b, "\nbatches by style: %s; by state: %s; files and batches deleted: %d",
			counts(s.BatchCounts(), "none"), counts(s.BatchStates(), "none"), s.Deleted())
	}
	return b.String()
}

// hasBatches says whether any batch endpoint was used.
func (s *Server) hasBatches() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.batch != nil
}

// counts writes a tally as "k n, k n" in key order, or none when empty.
func counts(m map[string]int, none string) string {
	if len(m) == 0 {
		return none
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
