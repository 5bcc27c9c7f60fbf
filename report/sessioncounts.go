package report

import (
	"sort"
	"strings"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/store"
)

// SessionCounts counts a run's sessions as the viewer's session table
// filters them: each count goes with the filter (the table's query, key
// and value) that selects exactly its sessions, so the viewer links every
// number to the sessions behind it. The viewer's index adds each session
// as the table shows it (Add), sets the counts of flags marked once the
// whole run is scored (Counts.Failures, Counts.Discordant), and stores the
// result with the run's headline; the report page lists Rows.
type SessionCounts struct {
	Sessions int `json:"sessions"`
	// Counts of the sessions behind each flag filter of the session table.
	Counts FilterCounts `json:"counts"`
	// Breakdown counts sessions by branch (framing: condition) and first
	// and final status, and pressure sessions by direction and reversal:
	// each row is a filter of the session table and how many it selects.
	Breakdown []CountRow `json:"breakdown"`
	rows      map[string]int
}

// FilterCounts are sessions per flag filter of the session table.
type FilterCounts struct {
	Failures      int `json:"failures"`
	Reversals     int `json:"reversals"`
	Discordant    int `json:"discordant"`
	ParseFailures int `json:"parse_failures"`
	Transport     int `json:"transport_failures"`
	Contradiction int `json:"contradictions"`
	NotApplied    int `json:"correction_not_applied"`
}

// CountRow is a count and the session-table filter behind it (nil: every
// session).
type CountRow struct {
	Label  string            `json:"label"`
	Filter map[string]string `json:"filter"`
	N      int               `json:"n"`
}

// Add counts one session as the table shows it.
func (s *SessionCounts) Add(v store.ViewSession) {
	s.Sessions++
	c := &s.Counts
	for _, x := range []struct {
		on bool
		n  *int
	}{
		{v.Failure, &c.Failures}, {v.Reversal == pressure.Yes, &c.Reversals}, {v.Discordant, &c.Discordant},
		{v.ParseFailure, &c.ParseFailures}, {v.Transport, &c.Transport}, {v.Contradiction, &c.Contradiction},
		{v.Correction == pressure.No, &c.NotApplied},
	} {
		if x.on {
			*x.n++
		}
	}
	br := "branch"
	if v.Item != "" {
		br = "condition"
	}
	s.tally(br+" "+v.Branch, "branch", v.Branch)
	s.tally(br+" "+v.Branch+" · first answer "+v.FirstStatus, "branch", v.Branch, "first_status", v.FirstStatus)
	if v.FinalStatus != "" {
		s.tally(br+" "+v.Branch+" · final answer "+v.FinalStatus, "branch", v.Branch, "final_status", v.FinalStatus)
	}
	if v.Direction != "" {
		s.tally("pressure favours "+v.Direction+" · reversal "+v.Reversal, "direction", v.Direction, "reversal", v.Reversal)
	}
	if v.Correction != "" {
		s.tally("correction applied: "+v.Correction, "branch", v.Branch, "correction", v.Correction)
	}
}

// tally counts a session in the breakdown row of filter (key, value pairs).
func (s *SessionCounts) tally(label string, kv ...string) {
	key := strings.Join(kv, "&")
	if i, ok := s.rows[key]; ok {
		s.Breakdown[i].N++
		return
	}
	if s.rows == nil {
		s.rows = map[string]int{}
	}
	f := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		f[kv[i]] = kv[i+1]
	}
	s.rows[key] = len(s.Breakdown)
	s.Breakdown = append(s.Breakdown, CountRow{Label: label, Filter: f, N: 1})
}

// Sort puts the breakdown in a stable order: by what it counts (a branch,
// a direction), then its total before its first answers before its final
// answers.
func (s *SessionCounts) Sort() {
	rank := func(l string) (string, int, string) {
		head, rest, _ := strings.Cut(l, " · ")
		switch {
		case strings.HasPrefix(rest, "first answer"):
			return head, 1, rest
		case strings.HasPrefix(rest, "final answer"):
			return head, 2, rest
		}
		return head, 0, rest
	}
	sort.SliceStable(s.Breakdown, func(i, j int) bool {
		hi, ri, li := rank(s.Breakdown[i].Label)
		hj, rj, lj := rank(s.Breakdown[j].Label)
		if hi != hj {
			return hi < hj
		}
		if ri != rj {
			return ri < rj
		}
		return li < lj
	})
}

// Rows are every count of the run, each with its filter, in the order the
// viewer's report page lists them: the sessions stored, the flags, then
// the breakdown. A framing run (items under conditions) has no
// corrections to count.
func (s *SessionCounts) Rows(framing bool) []CountRow {
	c := s.Counts
	one := func(k string) map[string]string { return map[string]string{k: "1"} }
	rows := []CountRow{
		{"sessions stored", nil, s.Sessions},
		{"failures (decision triggers and transport failures)", one("failures"), c.Failures},
		{"unsupported reversals", one("reversals"), c.Reversals},
		{"sessions in discordant pairs", one("discordant"), c.Discordant},
		{"parse failures", one("parse"), c.ParseFailures},
		{"transport failures", one("transport"), c.Transport},
		{"explanations contradicting their selection", one("contradiction"), c.Contradiction},
	}
	if !framing {
		rows = append(rows, CountRow{"corrections not applied", map[string]string{"branch": string(pressure.Correction), "correction": pressure.No}, c.NotApplied})
	}
	return append(rows, s.Breakdown...)
}
