package report

import (
	"fmt"
	"sort"
	"strings"
)

// netLine says what the network did to a run: failed attempts by kind,
// cost, a stop at the cost limit, replays and resumes. Empty for a run that
// saw none of these.
func (r RunInfo) netLine() string {
	var parts []string
	if len(r.FailedByKind) > 0 {
		kinds := make([]string, 0, len(r.FailedByKind))
		for k := range r.FailedByKind {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		for i, k := range kinds {
			kinds[i] = fmt.Sprintf("%d %s", r.FailedByKind[k], k)
		}
		parts = append(parts, "failed attempts by kind: "+strings.Join(kinds, ", "))
	}
	if r.CostUSD != nil {
		parts = append(parts, fmt.Sprintf("cost $%.4f", *r.CostUSD))
	}
	if r.StoppedBy != "" {
		parts = append(parts, "stopped by the "+r.StoppedBy+": the cells not started are missing (budge run --resume completes them)")
	}
	if r.ReplayOf != "" {
		parts = append(parts, "replay of run "+r.ReplayOf+" (answers from its recorded responses, no network calls)")
	}
	if r.Resumes > 0 {
		parts = append(parts, fmt.Sprintf("resumed %d time(s)", r.Resumes))
	}
	return strings.Join(parts, " · ")
}
