package report

import (
	"fmt"

	"github.com/buildlab/budge/pressure"
)

// Refused says whether a pair was not compared, and why the first such
// pair was refused.
func (c Compare) Refused() (why string, refused bool) {
	for _, s := range c.Sections {
		if s.Comparison == nil {
			return s.Refused, true
		}
	}
	return "", false
}

// Rejected names each compared pair whose verdict rejects the change
// (rejected or worse), as "BEFORE → AFTER: verdict": what a gate on the
// comparison fails for.
func (c Compare) Rejected() []string {
	var out []string
	for _, s := range c.Sections {
		if s.Comparison != nil && pressure.Rejects(s.Comparison.Verdict) {
			out = append(out, fmt.Sprintf("%s → %s: %s", s.Before.ID, s.After.ID, s.Comparison.Verdict))
		}
	}
	return out
}
