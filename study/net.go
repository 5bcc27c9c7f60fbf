package study

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider/endpoint"
	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/store"
)

// NetInfo is what a run records about talking to a model that is not in
// process, about its cost, and about how it was resumed or replayed.
type NetInfo struct {
	// BodyFormat is how response artifacts are written (chat, openai,
	// anthropic): what a replay decodes.
	BodyFormat string          `json:"response_body_format"`
	Price      *endpoint.Price `json:"price_per_mtok,omitempty"`
	MaxCost    float64         `json:"max_cost,omitempty"`
	Projected  *Projection     `json:"projected,omitempty"`
	// CostUSD is the stored sessions' tokens at Price.
	CostUSD *float64 `json:"cost_usd,omitempty"`
	// FailedByKind counts failed attempts by error kind.
	FailedByKind map[string]int `json:"failed_attempts_by_kind,omitempty"`
	// StoppedBy says why sessions were left unstarted ("cost limit", or
	// "outage": the endpoint stayed unreachable past the outage wait).
	StoppedBy string `json:"stopped_by,omitempty"`
	ReplayOf  string `json:"replay_of,omitempty"`
	// AppPrompt is the application prompt's text when it came from a file,
	// so that a resume or a replay asks exactly the same questions.
	AppPrompt string     `json:"application_prompt,omitempty"`
	Cache     *CacheInfo `json:"cache,omitempty"`
	// JournalHits counts the calls a resume answered from the run's journal:
	// answered before a kill, never paid for twice.
	JournalHits int64      `json:"journal_hits,omitempty"`
	Adaptive    *AdaptInfo `json:"adaptive_concurrency,omitempty"`
	// Outages are the stretches when the endpoint was unreachable across
	// the board (connection failures and timeouts from several calls): no
	// session started and failing calls did not use up their attempts.
	Outages []Outage `json:"outages,omitempty"`
	// RateLimitWaits counts 429 answers with Retry-After that were waited
	// out without using an attempt.
	RateLimitWaits int `json:"rate_limit_waits,omitempty"`
	// Rate is the most calls per second the run was allowed (--rate), by
	// all its workers together; PaceWaits how often a call waited for it.
	Rate      int          `json:"calls_per_second_limit,omitempty"`
	PaceWaits int          `json:"pace_waits,omitempty"`
	Resumes   []Resumption `json:"resumes,omitempty"`
	// Workers are the processes that advanced the run (budge run, budge
	// run --resume, budge worker), in the order they joined. Stats above
	// (cache, outages, rate-limit waits) are those of the worker that
	// scored the run.
	Workers []store.WorkerInfo `json:"workers,omitempty"`
	// Batch is set for a run through a provider's batch API (--batch).
	Batch *BatchInfo `json:"batch,omitempty"`
}

// Outage is one stretch of a run (or of one resume) during which the
// endpoint was unreachable.
type Outage struct {
	// Started is when the last outage of the try began; Count how many the
	// try waited out or stopped in; Total their length.
	Started time.Time     `json:"started"`
	Count   int           `json:"count"`
	Total   time.Duration `json:"total_ns"`
	// Stopped is set when the endpoint did not come back in time and the
	// run stopped, to be resumed.
	Stopped bool `json:"stopped_run"`
}

// Projection is the cost a run is expected to have, and how it was guessed.
type Projection struct {
	Sessions     int     `json:"sessions"`
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	Cost         float64 `json:"cost_usd"`
	Assumptions  string  `json:"assumptions"`
}

// CacheInfo describes the response cache of a run.
type CacheInfo struct {
	Dir    string `json:"dir"`
	Hits   int64  `json:"hits"`
	Misses int64  `json:"misses"`
}

// AdaptInfo describes how concurrency adapted to rate limiting.
type AdaptInfo struct {
	Lowest int `json:"lowest_calls_in_flight"`
	Cuts   int `json:"cuts"`
}

// Resumption records one resumption of a run.
type Resumption struct {
	At       time.Time `json:"at"`
	Budge    string    `json:"budge_version"`
	Sessions int       `json:"sessions_run"`
	Provider string    `json:"provider_detail,omitempty"` // when it differs from the original (a new base URL)
	// RetriedFailed counts the sessions that had failed for transport
	// reasons and were run again (--retry-failed), among Sessions.
	RetriedFailed int `json:"failed_sessions_retried,omitempty"`
	// Worker names the process that continued the run (every resume is a
	// worker of it; resumptions recorded before runs had workers have
	// none): sessions_run is the cells left when it joined, which other
	// workers may have run.
	Worker string `json:"worker,omitempty"`
}

// projectSessions estimates the tokens and cost of n sessions: every
// session's first request is measured (about 4 characters a token), each
// later call carries the conversation so far plus about 150 tokens a turn,
// and every call is assumed to produce 120 output tokens (or max tokens,
// if lower). session gives a session's first request and its calls.
func projectSessions(n int, settings chat.Settings, price endpoint.Price, session func(i int) (first any, calls int, ok bool)) Projection {
	perAnswer := 120
	if settings.MaxTokens > 0 && settings.MaxTokens < perAnswer {
		perAnswer = settings.MaxTokens
	}
	const perTurn = 150
	var in, out int
	for i := range n {
		first, calls, ok := session(i)
		if !ok {
			continue
		}
		b, _ := json.Marshal(first)
		base := len(b) / 4
		for k := range calls {
			in += base + k*perTurn
			out += perAnswer
		}
	}
	return Projection{Sessions: n, InputTokens: in, OutputTokens: out, Cost: price.Cost(in, out),
		Assumptions: fmt.Sprintf("first requests measured at 4 characters a token, %d tokens added per turn, %d output tokens per call", perTurn, perAnswer)}
}

// summary is the network record as reports show it.
func (n NetInfo) summary() report.Net {
	rep := report.Net{FailedByKind: n.FailedByKind, CostUSD: n.CostUSD, StoppedBy: n.StoppedBy, ReplayOf: n.ReplayOf,
		Resumes: len(n.Resumes), JournalHits: n.JournalHits}
	if b := n.Batch; b != nil {
		rb := b.Batch
		rep.Batch = &rb
	}
	for _, r := range n.Resumes {
		if r.RetriedFailed > 0 {
			rep.Retried = append(rep.Retried, fmt.Sprintf("%d at %s", r.RetriedFailed, r.At.UTC().Format(time.RFC3339)))
		}
	}
	for _, o := range n.Outages {
		rep.Outages += o.Count
		rep.OutageSeconds += o.Total.Seconds()
	}
	return rep
}
