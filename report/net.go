package report

import (
	"fmt"
	"sort"
	"strings"
)

// Net is what the network did to a run of either protocol: failed
// attempts by kind, cost, why sessions stopped starting, replays and
// resumes, outages waited out, and calls answered from the run's journal.
// Its fields sit at the top level of a run's JSON; each is omitted when
// empty.
type Net struct {
	FailedByKind  map[string]int `json:"failed_attempts_by_kind,omitempty"`
	CostUSD       *float64       `json:"cost_usd,omitempty"`
	StoppedBy     string         `json:"stopped_by,omitempty"`
	ReplayOf      string         `json:"replay_of,omitempty"`
	Resumes       int            `json:"resumes,omitempty"`
	Outages       int            `json:"outages,omitempty"`
	OutageSeconds float64        `json:"outage_seconds,omitempty"`
	JournalHits   int64          `json:"journal_hits,omitempty"`
	// Retried lists, per resume that ran failed sessions again, how many
	// and when ("3 at 2026-12-03T14:00:00Z").
	Retried []string `json:"failed_sessions_retried,omitempty"`
	// Batch is set for a run through a provider's batch API.
	Batch *Batch `json:"batch,omitempty"`
}

// Batch is what went through a provider's batch API: the API and, summed
// over the processes that ran it, its waves, batches and requests.
type Batch struct {
	Style string `json:"style"`
	// Price says which price the run's cost is at.
	Price    string `json:"price"`
	Waves    int    `json:"waves"`
	Batches  int    `json:"batches"`
	Requests int    `json:"requests"`
	// Reattached counts batches an earlier process submitted that a
	// resume collected instead of submitting again.
	Reattached int `json:"reattached_batches,omitempty"`
	// Results a batch did not give, or gave twice.
	Missing    int `json:"missing_results,omitempty"`
	Duplicates int `json:"duplicate_results,omitempty"`
	// The recovery paths and the run's --keep-batch-files setting.
	BatchRecovery
}

// BatchRecovery is what a batch run's recovery paths did, counted from the
// batches stored (every process of the run): results downloads tried
// again; batches whose create answer was lost and that were found at the
// provider; batches an interrupt cancelled, with the answers collected of
// their requests; batches that failed as a whole, with why; batches
// refused for their size and sent in halves; and of the batches
// collected, those whose files were deleted at the provider. KeepFiles is
// the run's setting (--keep-batch-files): what a collected batch leaves at
// the provider stays there. A run's manifest and its report share it.
type BatchRecovery struct {
	KeepFiles         bool     `json:"keep_files,omitempty"`
	DownloadRetries   int      `json:"download_retries,omitempty"`
	CreatesFound      int      `json:"creates_found,omitempty"`
	Cancelled         int      `json:"cancelled_batches,omitempty"`
	CancelledAnswers  int      `json:"cancelled_answers_collected,omitempty"`
	CancelledRequests int      `json:"cancelled_requests,omitempty"`
	Failed            int      `json:"failed_batches,omitempty"`
	FailedReasons     []string `json:"failed_reasons,omitempty"`
	Split             int      `json:"split_batches,omitempty"`
	Collected         int      `json:"collected_batches,omitempty"`
	Cleaned           int      `json:"cleaned_batches,omitempty"`
}

// recovery says what the batch recovery paths did, each with what it
// counts of: empty for a run that needed none of them.
func (b Batch) recovery() []string {
	var out []string
	if b.DownloadRetries > 0 {
		out = append(out, fmt.Sprintf("results downloads tried again %d time(s), no batch sent again for them", b.DownloadRetries))
	}
	if b.CreatesFound > 0 {
		out = append(out, fmt.Sprintf("%d of %d batch(es) found at the provider after their create answer was lost, not sent again", b.CreatesFound, b.Batches))
	}
	if b.Cancelled > 0 {
		out = append(out, fmt.Sprintf("%d batch(es) cancelled by an interrupt: answers of %d of their %d request(s) collected, not sent again", b.Cancelled, b.CancelledAnswers, b.CancelledRequests))
	}
	if b.Failed > 0 {
		out = append(out, fmt.Sprintf("%d of %d batch(es) failed as a whole, not sent again (%s)", b.Failed, b.Batches, strings.Join(b.FailedReasons, "; ")))
	}
	if b.Split > 0 {
		out = append(out, fmt.Sprintf("%d batch(es) refused for their size, each sent again in two halves", b.Split))
	}
	switch {
	case b.KeepFiles:
		out = append(out, fmt.Sprintf("files of the %d collected batch(es) kept at the provider (--keep-batch-files)", b.Collected))
	case b.Collected > 0:
		out = append(out, fmt.Sprintf("files deleted at the provider for %d of %d collected batch(es)", b.Cleaned, b.Collected))
	}
	return out
}

// line says it in one line; empty for a run that saw none of it.
func (r Net) line() string {
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
	if b := r.Batch; b != nil {
		line := fmt.Sprintf("%s batch API: %d request(s) in %d batch(es) over %d wave(s), priced at %s", b.Style, b.Requests, b.Batches, b.Waves, b.Price)
		if b.Reattached > 0 {
			line += fmt.Sprintf("; %d batch(es) of a killed process collected, not sent again", b.Reattached)
		}
		if b.Missing+b.Duplicates > 0 {
			line += fmt.Sprintf("; %d result(s) missing and %d duplicated by the provider", b.Missing, b.Duplicates)
		}
		for _, r := range b.recovery() {
			line += "; " + r
		}
		parts = append(parts, line)
	}
	if r.Outages > 0 {
		parts = append(parts, fmt.Sprintf("endpoint unreachable %d time(s), %.0f s in all: waited out, not counted against the model", r.Outages, r.OutageSeconds))
	}
	if r.StoppedBy != "" {
		parts = append(parts, "stopped by the "+r.StoppedBy+": the cells not started are missing (--resume completes them)")
	}
	if r.ReplayOf != "" {
		parts = append(parts, "replay of run "+r.ReplayOf+" (answers from its recorded responses, no network calls)")
	}
	if r.Resumes > 0 {
		parts = append(parts, fmt.Sprintf("resumed %d time(s)", r.Resumes))
	}
	if len(r.Retried) > 0 {
		parts = append(parts, "sessions that failed for transport reasons run again on resume: "+strings.Join(r.Retried, ", ")+" (their earlier attempts stay on record)")
	}
	if r.JournalHits > 0 {
		parts = append(parts, fmt.Sprintf("%d call(s) answered before a kill were taken from the run's journal, not sent again", r.JournalHits))
	}
	return strings.Join(parts, " · ")
}
