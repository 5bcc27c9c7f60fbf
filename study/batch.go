package study

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/provider/batch"
	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/runner"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study/stack"
)

// BatchInfo is a batch run's record in its manifest: what its report
// shows (report.Batch, summed over the processes that ran it) and the
// results only the manifest keeps.
type BatchInfo struct {
	report.Batch
	// Recovered counts the answers held by the batches a resume
	// reattached.
	Recovered int `json:"recovered_answers,omitempty"`
	// Results a batch gave for a request budge never sent.
	Unknown int `json:"unknown_results,omitempty"`
}

// batchAPI is the batch API of a model's provider.
func batchAPI(p provider.Provider) (batch.API, error) {
	if b, ok := p.(interface{ BatchAPI() batch.API }); ok {
		return b.BatchAPI(), nil
	}
	info := p.Info()
	return nil, fmt.Errorf("%w: --batch: %s (%s) has no batch API budge speaks; batches go to openai:, openai-compatible: servers with the Batch API (budge sim serve has one) and anthropic:", ErrInvalid, info.Model, info.Name)
}

// batchStack is the stack option of a batch run of h, or nil for a run
// that does not batch. notify, when set, is told of waves.
func batchStack(st *store.Store, h *Header, p provider.Provider, notify func(batch.Event)) (*stack.Batch, error) {
	if h.Net.Batch == nil {
		return nil, nil
	}
	if st.Shared() {
		return nil, fmt.Errorf("%w: --batch runs in one process: a shared store's workers cannot share a wave; use a local store", ErrInvalid)
	}
	api, err := batchAPI(p)
	if err != nil {
		return nil, err
	}
	h.Net.Batch.Style = api.Style()
	return &stack.Batch{RunID: h.RunID, API: api, Ledger: batchLedger{st, h.RunID}, Notify: notify, KeepFiles: h.Net.Batch.KeepFiles}, nil
}

// batchLedger keeps a run's batches in the store.
type batchLedger struct {
	st    *store.Store
	runID string
}

func (l batchLedger) Batches(ctx context.Context) ([]batch.Record, error) {
	var out []batch.Record
	err := l.st.Batches(ctx, l.runID, func(row store.BatchRow) error {
		// The requests are counted, not kept (batch.Ledger).
		var head struct {
			batch.Record
			Requests []struct{} `json:"requests"`
		}
		if err := json.Unmarshal(row.Record, &head); err != nil {
			return fmt.Errorf("run %s: stored batch %s: %w", l.runID, row.Token, err)
		}
		r := head.Record
		if head.Requests != nil {
			r.Count = len(head.Requests)
		}
		out = append(out, r)
		return nil
	})
	return out, err
}

func (l batchLedger) Requests(ctx context.Context, token string) ([]batch.Entry, error) {
	row, ok, err := l.st.Batch(ctx, l.runID, token)
	if err != nil || !ok {
		return nil, cmp.Or(err, fmt.Errorf("run %s: no stored batch %s", l.runID, token))
	}
	var r struct {
		Requests []batch.Entry `json:"requests"`
	}
	if err := json.Unmarshal(row.Record, &r); err != nil {
		return nil, fmt.Errorf("run %s: stored batch %s: %w", l.runID, token, err)
	}
	return r.Requests, nil
}

func (l batchLedger) PutBatch(ctx context.Context, r batch.Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return l.st.PutBatch(ctx, l.runID, store.BatchRow{Token: r.Token, Wave: r.Wave, State: r.State, Record: b})
}

// recordBatch puts a batch run's waves, batches and requests in the
// manifest, counted from the batches stored (so those of killed processes
// count too), with what this process's batcher saw added to the counts of
// earlier processes.
func recordBatch(ctx context.Context, st *store.Store, n *NetInfo, runID string, s *stack.Stack) error {
	if s.Batch == nil || n.Batch == nil {
		return nil
	}
	recs, err := batchLedger{st, runID}.Batches(ctx)
	if err != nil {
		return err
	}
	b := n.Batch
	b.Waves, b.Batches, b.Requests = 0, 0, 0
	b.DownloadRetries, b.CreatesFound, b.Cancelled, b.CancelledAnswers, b.CancelledRequests = 0, 0, 0, 0, 0
	b.Failed, b.FailedReasons, b.Split, b.Collected, b.Cleaned = 0, nil, 0, 0, 0
	for _, r := range recs {
		switch r.State {
		case batch.Lost:
			continue
		case batch.Split:
			// Its requests went out in its halves, counted as batches.
			b.Split++
			continue
		case batch.Collected:
			b.Collected++
			if r.Cleaned {
				b.Cleaned++
			}
		}
		b.Waves = max(b.Waves, r.Wave)
		b.Batches++
		b.Requests += r.Len()
		b.DownloadRetries += r.Rereads
		if r.Found {
			b.CreatesFound++
		}
		if r.WasCancelled {
			b.Cancelled++
			b.CancelledAnswers += r.Kept
			b.CancelledRequests += r.Len()
		}
		if r.Failed {
			b.Failed++
			b.FailedReasons = append(b.FailedReasons, fmt.Sprintf("batch %s: %s", r.ID, r.Reason))
		}
	}
	ps := s.Batch.Stats()
	b.Reattached += ps.Reattached
	b.Recovered += ps.Recovered
	b.Duplicates += ps.Duplicates
	b.Missing += ps.Missing
	b.Unknown += ps.Unknown
	return nil
}

// runPasses runs jobs through the stack. A batch run is passes over the
// jobs (provider/batch): the first runs every job; each session whose
// call the journal cannot answer parks it in the next wave and ends for
// the pass, unstored; the wave is sent and collected into the journal,
// and the next pass runs the parked sessions again, until a pass parks
// none. Batches an earlier process of the run submitted are collected
// first. Progress counts across the passes.
func runPasses(ctx, drain context.Context, cfg runner.Config, p protocol, s *stack.Stack, sink runner.Sink, n int, jobs iter.Seq[runner.Job]) (runner.Stats, error) {
	if s.Batch == nil {
		return runner.Run(ctx, drain, cfg, s.Provider, sink, n, jobs)
	}
	if err := s.Batch.Start(ctx); err != nil {
		return runner.Stats{}, fmt.Errorf("run %s: %w", cfg.RunID, err)
	}
	start := time.Now()
	var total runner.Stats
	if progress := cfg.Progress; progress != nil {
		cfg.Progress = func(p runner.Progress) {
			p = addProgress(total.Progress, p)
			p.Elapsed = time.Since(start)
			progress(p)
		}
	}
	pass := jobs
	for {
		st, err := runner.Run(ctx, drain, cfg, s.Provider, sink, n, pass)
		total = addStats(total, st)
		total.Elapsed = time.Since(start)
		if err != nil {
			return total, err
		}
		if st.Parked == 0 || st.StoppedBy != "" || drain.Err() != nil || ctx.Err() != nil {
			// Done, or stopped: the parked sessions are not stored, and
			// a resume runs them again (their answers are in the journal).
			return total, nil
		}
		sent, err := s.Batch.Wave(ctx)
		if s.Budget != nil {
			s.Budget.Unpark()
		}
		if err != nil {
			if ctx.Err() != nil {
				return total, nil // interrupted: the open batches are cancelled and stored
			}
			return total, fmt.Errorf("batch: %w", err)
		}
		if !sent {
			return total, nil
		}
		pass = parkedJobs(p, s.Batch)
	}
}

// batchMemory is the Go runtime's soft memory limit while a batch run
// works: its passes over its sessions, and its scoring once they are
// done (a 999,440-session run's RSS rose from 232 MB to 249 MB after its
// last pass, when the limit used to be lifted). What a batch run keeps
// for every unfinished session (the journal's index of its answers,
// where it parked, the fence on its cell: about 100 bytes) holds no
// pointers, so the collector marks none of it, but it counts in the
// heap's growth: by default the heap grows to twice what is live before
// a collection, and at a million sessions that doubling alone would pass
// 250 MB. Under the limit the collector runs as the heap nears it, at
// the cost of more collections of the rest (bench/RESULTS.md, Batch).
// GOMEMLIMIT, when set, is kept.
const batchMemory = 160 << 20

// limitMemory sets the batch run's memory limit, unless GOMEMLIMIT set
// one or a lower one is set, and returns what restores the one before once
// no batch run of the process is left.
func limitMemory() (restore func()) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	memLimit.Lock()
	defer memLimit.Unlock()
	if memLimit.runs == 0 {
		memLimit.prev = debug.SetMemoryLimit(-1)
		debug.SetMemoryLimit(min(memLimit.prev, batchMemory))
	}
	memLimit.runs++
	return sync.OnceFunc(func() {
		memLimit.Lock()
		defer memLimit.Unlock()
		if memLimit.runs--; memLimit.runs == 0 {
			debug.SetMemoryLimit(memLimit.prev)
		}
	})
}

// memLimit is the limit before the process's batch runs, and how many run.
var memLimit struct {
	sync.Mutex
	runs int
	prev int64
}

// parkedJobs is the jobs of the sessions that parked in the last pass, in
// schedule order, each as the incarnation it parked as and with where it
// parked (its cell stays the process's meanwhile).
func parkedJobs(p protocol, b *batch.Batcher) iter.Seq[runner.Job] {
	return func(yield func(runner.Job) bool) {
		for pos, i := range p.order() {
			at, inc, ok := b.Parked(i)
			if !ok {
				continue
			}
			j := p.job(i, pos, inc)
			j.Parked = at
			if !yield(j) {
				return
			}
		}
	}
}

// addProgress is a pass's progress after the passes before it (a).
func addProgress(a, p runner.Progress) runner.Progress {
	p.Done += a.Done
	p.Failed += a.Failed
	p.Interrupted += a.Interrupted
	p.Attempts += a.Attempts
	p.Failures += a.Failures
	return p
}

// addStats adds a pass's stats to those of the passes before it.
func addStats(a, s runner.Stats) runner.Stats {
	total := s.Total
	s.Progress = addProgress(a.Progress, s.Progress)
	s.Total = total
	s.InputTokens += a.InputTokens
	s.OutputTokens += a.OutputTokens
	s.Outages += a.Outages
	s.OutageTime += a.OutageTime
	if s.OutageStarted.IsZero() {
		s.OutageStarted = a.OutageStarted
	}
	s.RateLimitWaits += a.RateLimitWaits
	s.PaceWaits = max(s.PaceWaits, a.PaceWaits) // the pace counts for the run
	s.FenceStops += a.FenceStops
	return s
}
