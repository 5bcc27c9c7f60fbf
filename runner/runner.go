// Package runner executes planned sessions against a provider: a bounded
// worker pool, a declared retry policy applied identically to every call,
// every attempt kept as an observation, and a single writer to the store.
//
// It knows no protocol: a protocol hands it Conversations, small state
// machines that advance one model turn at a time.
package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/limits"
	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/store"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"
)

// Conversation is one session of a protocol, advanced one call at a time.
type Conversation interface {
	// Next returns the request to send, or nil when the session is over.
	Next() *chat.Request
	// Observe applies the response to the last request.
	Observe(*chat.Response)
	// Fail ends the session after a call failed for good.
	Fail()
	// Phase names the protocol phase of the next request.
	Phase() string
	// Entries is the transcript so far.
	Entries() []chat.Entry
	// Stop says why the session ended without an answer, if it did.
	Stop() string
}

// Job is one planned session.
type Job struct {
	ID          string
	Seq         int // canonical plan index
	SchedulePos int // position in the execution schedule
	Incarnation int // 1 for a first run; more when resumed
	Repeat      int // the repeat index, handed to providers (a response cache keys on it)
	Spec        json.RawMessage
	New         func() (Conversation, error)
	// Parked, for a session of a batch run that parked in the previous
	// pass, is the call and attempt it parked at: its calls before that
	// point were answered in earlier passes and are asked again only to
	// rebuild the session (from the run's journal), so they are not
	// counted, paced, budgeted or waited for again.
	Parked Point
}

// Point is a call and attempt of a session.
type Point struct{ Call, Attempt int }

// before says whether p comes before q (q set).
func (p Point) before(q Point) bool {
	return q.Call > 0 && (p.Call < q.Call || p.Call == q.Call && p.Attempt < q.Attempt)
}

// ErrParked is what a batching provider returns for a call it holds for
// the next wave (provider/batch): the session ends for this pass, neither
// stored nor counted, and a later pass runs it again once the wave's
// answers are in the run's journal.
var ErrParked = errors.New("the call waits for the next wave of batches")

// Sink is where results go: the store, or something that wraps it.
type Sink interface {
	store.SessionWriter
}

// Logger receives the JSONL log: one line per attempt and per session,
// encoded by the workers and written in order by the writer.
type Logger interface {
	WriteLines(b []byte) error
	Flush() error
}

// Config controls a run.
type Config struct {
	RunID       string
	Concurrency int
	Retry       provider.RetryPolicy
	JitterSeed  uint64
	// Sleep waits between attempts; tests replace it. It must return early
	// with the context's error when the context is done.
	Sleep func(ctx context.Context, d time.Duration) error
	// Progress is called after every stored session (from one goroutine).
	Progress func(Progress)
	// BatchSize is how many sessions the writer commits at once at most;
	// zero is DefaultBatchSize.
	BatchSize int
	Log       Logger
	// Adapt, when set, bounds the calls in flight and adapts the bound to
	// rate limiting (network providers; the in-process simulator needs none).
	Adapt *Adaptive
	// Budget, when set, admits sessions only while the projected cost stays
	// under a limit.
	Budget *Budget
	// Pace, when set, holds calls to a number per second.
	Pace *Pace
	// OutageWait bounds how long a run waits out an outage of the endpoint
	// (see outage.go) before it stops with StoppedBy "outage". Zero means
	// DefaultOutageWait; a negative value never pauses: connection failures
	// then spend attempts like any other infrastructure failure.
	OutageWait time.Duration
	// OutageAfter is how many connection failures in a row, from at least
	// two calls, make an outage; zero means DefaultOutageAfter.
	OutageAfter int
	// RateLimitWait is how long, in all, one call waits out 429 answers that
	// say when to come back (Retry-After) without spending its attempts;
	// past it, such answers count as attempts again. Zero means
	// DefaultRateLimitWait; a negative value counts every 429.
	RateLimitWait time.Duration
	// OutageNotice, when set, is told when an outage starts (on) and when
	// the endpoint answers again; since is when the outage started. It is
	// called from a worker and must not block.
	OutageNotice func(on bool, since time.Time)
	// Notice, when set, is told once when the run's first calls all fail
	// alike (SharedFailureAfter). It is called from a worker and must not
	// block for long.
	Notice func(string)
	// Batch says calls go through a batch API in waves (provider/batch):
	// a retry waits for the next wave, not for the policy's delay.
	Batch bool
	// MaxSessionBytes is what one session may send and receive in all
	// (limits.MaxSessionBytes when 0; tests lower it). A request that
	// would pass it is not sent, a response that would is refused unread
	// (or, from a batch, not kept), and the session fails with kind
	// session_too_large.
	MaxSessionBytes int64
	// Fence, when set, is asked before every call (each turn and each
	// retry) whether the process may still make it for the job: a worker
	// whose lease on the session lapsed, and was taken over, must not pay
	// for it again. An error stops the session, interrupted, without the
	// call; FenceStops counts such sessions.
	Fence func(ctx context.Context, job Job) error
	// Stored, when set, is handed each batch of sessions once the sink has
	// stored it, in the order stored, from the writer's goroutine; it must
	// not keep the slice (the writer reuses it) nor change the sessions.
	Stored func([]store.Session)
}

// Progress reports how far a run has come.
type Progress struct {
	Done, Total        int
	Failed             int // sessions ended by a failed call
	Interrupted        int
	Attempts, Failures int // provider calls and failed calls so far
	Elapsed            time.Duration
	// Parked counts the sessions of a batch run that ended this pass
	// waiting for a wave (ErrParked): not stored, not done.
	Parked int
}

// Stats is what Run returns.
type Stats struct {
	Progress
	InputTokens, OutputTokens int
	// StoppedBy says why sessions were left unstarted: "cost limit",
	// "outage" (the endpoint stayed unreachable for Config.OutageWait; the
	// sessions in flight were interrupted), or empty. Cost is the running
	// cost when a Budget was set.
	StoppedBy string
	Cost      float64
	// Concurrency adaptation: the lowest bound on calls in flight and how
	// often rate limiting cut it.
	LowestConcurrency, ConcurrencyCuts int
	// Outages is how many outages the run waited out or stopped in;
	// OutageStarted is when the last one started (when StoppedBy is
	// "outage", the one that stopped the run), zero without any; OutageTime
	// is how long they lasted in all.
	Outages       int
	OutageStarted time.Time
	OutageTime    time.Duration
	// RateLimitWaits is how many 429 answers were waited out (per their
	// Retry-After) without spending an attempt.
	RateLimitWaits int
	// PaceWaits is how often a call waited for the run's calls per second.
	PaceWaits int
	// FenceStops is how many sessions stopped before a call because the
	// process no longer held them (Config.Fence).
	FenceStops int
}

// Run executes jobs in schedule order, each made as it is started (a run
// too large to hold all its jobs, or one whose cells are claimed from a
// shared store as workers free up); total is how many progress counts
// toward. Cancelling drain starts no new session and sends no new call (no
// next turn, no retry) while the calls in flight finish, their sessions
// kept as interrupted; cancelling ctx stops calls in flight too (their
// sessions are kept as interrupted attempts). Run returns an error only
// when results could not be stored.
func Run(ctx, drain context.Context, cfg Config, p provider.Provider, sink Sink, total int, jobs iter.Seq[Job]) (Stats, error) {
	if cfg.Concurrency < 1 {
		cfg.Concurrency = 1
	}
	if cfg.Sleep == nil {
		cfg.Sleep = provider.Sleep
	}
	if cfg.BatchSize < 1 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.OutageWait == 0 {
		cfg.OutageWait = DefaultOutageWait
	}
	if cfg.OutageAfter < 1 {
		cfg.OutageAfter = DefaultOutageAfter
	}
	if cfg.RateLimitWait == 0 {
		cfg.RateLimitWait = DefaultRateLimitWait
	}
	start := time.Now()
	results := make(chan result, min(cfg.Concurrency*2, 4096)) // a batch run may have 100,000 in flight
	var attempts, failures, rateWaits, fenced, parked atomic.Int64

	writerErr := make(chan error, 1)
	var stats Stats
	stoppedBy := ""
	stats.Total = total
	g, gctx := errgroup.WithContext(ctx)
	// Giving up on an unreachable endpoint cancels the sessions in flight,
	// as a hard cancel does: they are kept as interrupted. So does a
	// failure to store results: sessions whose results cannot be stored
	// are not worth paying for.
	gctx, stopRun := context.WithCancel(gctx)
	defer stopRun()
	pending := semaphore.NewWeighted(limits.MaxPendingBytes)
	go func() {
		err := writeAll(ctx, cfg, sink, results, pending, &stats, &attempts, &failures, start, stopRun)
		writerErr <- err
	}()
	out := newOutages(cfg, stopRun)
	shared := newSharedFailure(cfg.Notice)
	// A slot is taken before a session starts, so draining or cancelling is
	// checked again after every wait for a free slot, and then no session
	// starts while an outage is on.
	slots := make(chan struct{}, cfg.Concurrency)
dispatch:
	for job := range jobs {
		select {
		case <-drain.Done():
			break dispatch
		case <-gctx.Done():
			break dispatch
		case slots <- struct{}{}:
		}
		if err := out.clear(gctx); err != nil {
			<-slots
			break dispatch
		}
		if drain.Err() != nil || gctx.Err() != nil {
			<-slots
			break dispatch
		}
		if cfg.Budget != nil && !cfg.Budget.Admit() {
			<-slots
			stoppedBy = "cost limit"
			break dispatch
		}
		job := job
		g.Go(func() error {
			defer func() { <-slots }()
			if cfg.Budget != nil {
				defer cfg.Budget.Release()
			}
			// Backoff jitter depends on the session, not on scheduling.
			rng := rand.New(rand.NewPCG(cfg.JitterSeed, uint64(job.Seq)))
			se, err := runOne(gctx, drain, cfg, p, job, rng, out, shared, &attempts, &failures, &rateWaits, &fenced)
			if err != nil {
				return err
			}
			if se.Status == statusParked {
				// Waiting for a wave: a later pass runs it again.
				parked.Add(1)
				return nil
			}
			// Finished sessions wait for the writer within a budget of
			// bytes: a slow store holds the sessions back, not memory.
			n := min(sessionBytes(se), limits.MaxPendingBytes)
			pending.Acquire(context.Background(), n)    // never fails: the writer releases what it stored
			results <- result{se, logLines(cfg, se), n} // the writer drains every result until Run closes the channel
			return nil
		})
	}
	gErr := g.Wait()
	close(results)
	wErr := <-writerErr
	stats.Elapsed = time.Since(start)
	stats.StoppedBy = stoppedBy
	if cfg.Budget != nil {
		cfg.Budget.Sync() // the last spending, into a shared ledger
		var refused bool
		if stats.Cost, refused = cfg.Budget.Spent(); refused {
			stats.StoppedBy = "cost limit"
		}
	}
	if cfg.Adapt != nil {
		_, stats.LowestConcurrency, stats.ConcurrencyCuts = cfg.Adapt.State()
	}
	var gaveUp bool
	gaveUp, stats.Outages, stats.OutageStarted, stats.OutageTime = out.state()
	if gaveUp {
		stats.StoppedBy = "outage"
	}
	stats.RateLimitWaits = int(rateWaits.Load())
	stats.FenceStops = int(fenced.Load())
	stats.Parked = int(parked.Load())
	// Parked sessions made calls no stored session counted.
	stats.Attempts, stats.Failures = int(attempts.Load()), int(failures.Load())
	if cfg.Pace != nil {
		stats.PaceWaits = cfg.Pace.Waits()
	}
	return stats, errors.Join(gErr, wErr)
}

// DefaultBatchSize is how many sessions the writer commits at once at
// most. A session goes into its tables' indexes at keys scattered over
// them, so a transaction changes some eight index pages a session; once
// those outgrow SQLite's page cache (2 MB) it writes them out and reads them
// back before it commits. At 64 a transaction fits: on the in-process
// simulator (bench/scale.sh, 2 cores) a 249,600-session run took 118 s and
// 93 MB, and 129 s and 123 MB at 256, where it was 1.29x linear
// extrapolation from 41,600 sessions instead of 1.07x.
const DefaultBatchSize = 64

// result is a finished session and its log lines.
type result struct {
	se   store.Session
	log  []byte
	held int64 // of the pending bytes
}

// sessionBytes is about what a finished session holds: its artifacts and
// its transcript.
func sessionBytes(se store.Session) int64 {
	var n int64
	for _, b := range se.Artifacts {
		n += int64(len(b.Data))
	}
	for _, m := range se.Messages {
		n += int64(len(m.Content) + len(m.Refusal))
		for _, tc := range m.ToolCalls {
			n += int64(len(tc.Arguments))
		}
	}
	return n
}

func logLines(cfg Config, se store.Session) []byte {
	if cfg.Log == nil {
		return nil
	}
	return store.LogLines(cfg.RunID, se)
}

// writeAll stores the results as they come, a batch at a time: at each
// tick of 100 ms, or as soon as cfg.BatchSize sessions wait. One batch is
// written while the next one fills, so the sessions in flight go on while
// the store writes; at most two batches are held.
func writeAll(ctx context.Context, cfg Config, sink Sink, results <-chan result, pending *semaphore.Weighted, stats *Stats, attempts, failures *atomic.Int64, start time.Time, failed func()) error {
	full := make(chan batch)
	done := make(chan batch, 1) // a written batch, emptied for reuse
	written := make(chan error, 1)
	go func() {
		// Writes use a context that survives cancellation: what was
		// observed is always stored.
		written <- writeBatches(context.WithoutCancel(ctx), cfg, sink, full, done, pending, stats, attempts, failures, start, failed)
	}()
	var cur, spare batch // the batch filling, and one to fill next
	busy := false        // the writer holds a batch
	hand := func() {
		if busy {
			spare, busy = <-done, false
		}
		full <- cur
		cur, spare, busy = spare, batch{}, true
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case r, ok := <-results:
			if !ok {
				if len(cur.sessions) > 0 {
					hand()
				}
				close(full)
				return <-written
			}
			cur.sessions = append(cur.sessions, r.se)
			cur.logs = append(cur.logs, r.log)
			cur.held += r.held
			if len(cur.sessions) >= cfg.BatchSize || cur.held >= limits.MaxPendingBytes/2 {
				hand()
			}
		case b := <-done:
			spare, busy = b, false
		case <-tick.C:
			if len(cur.sessions) > 0 && !busy {
				hand()
			}
		}
	}
}

// batch is sessions the writer stores in one transaction, with their log
// lines.
type batch struct {
	sessions []store.Session
	logs     [][]byte
	held     int64 // pending bytes, released once stored
}

// writeBatches stores each batch from full and hands it back, emptied, on
// done. After a failure it stores nothing more: the batches that follow are
// neither counted nor logged.
func writeBatches(ctx context.Context, cfg Config, sink Sink, full <-chan batch, done chan<- batch, pending *semaphore.Weighted, stats *Stats, attempts, failures *atomic.Int64, start time.Time, failed func()) error {
	var firstErr error
	for b := range full {
		if firstErr == nil {
			firstErr = writeBatch(ctx, cfg, sink, b, stats, attempts, failures, start, failed)
		}
		clear(b.sessions) // the sessions' bodies are not held until the batch is reused
		pending.Release(b.held)
		done <- batch{sessions: b.sessions[:0], logs: b.logs[:0]}
	}
	return firstErr
}

// writeBatch stores one batch, logs it and counts it.
func writeBatch(ctx context.Context, cfg Config, sink Sink, b batch, stats *Stats, attempts, failures *atomic.Int64, start time.Time, failed func()) error {
	if err := sink.WriteSessions(ctx, cfg.RunID, b.sessions); err != nil {
		// Nothing of this batch was stored: it is neither counted nor
		// logged, and the run stops.
		failed()
		return err
	}
	if cfg.Stored != nil {
		cfg.Stored(b.sessions)
	}
	var logErr error
	if cfg.Log != nil {
		for _, l := range b.logs {
			if err := cfg.Log.WriteLines(l); err != nil && logErr == nil {
				logErr = fmt.Errorf("log: %w", err)
			}
		}
		if err := cfg.Log.Flush(); err != nil && logErr == nil {
			logErr = fmt.Errorf("log: %w", err)
		}
	}
	for _, se := range b.sessions {
		switch se.Status {
		case store.SessionFailed:
			stats.Failed++
			stats.Done++
		case store.SessionInterrupted:
			stats.Interrupted++
		default:
			stats.Done++
		}
		stats.InputTokens += se.InputTokens
		stats.OutputTokens += se.OutputTokens
	}
	stats.Attempts, stats.Failures = int(attempts.Load()), int(failures.Load())
	stats.Elapsed = time.Since(start)
	if cfg.Progress != nil {
		cfg.Progress(stats.Progress)
	}
	return logErr
}

// runOne drives one session to its end. The returned error is only for
// storage failures; model and transport failures are data.
func runOne(ctx, drain context.Context, cfg Config, p provider.Provider, job Job, rng *rand.Rand, out *outages, shared *sharedFailure, attempts, failures, rateWaits, fenced *atomic.Int64) (store.Session, error) {
	if job.Repeat > 0 {
		ctx = provider.WithRepeat(ctx, job.Repeat)
	}
	se := store.Session{ID: job.ID, Seq: job.Seq, SchedulePos: job.SchedulePos, Spec: job.Spec, Started: time.Now(), Incarnation: job.Incarnation,
		Status: store.SessionComplete, Attempts: []store.Attempt{}, Artifacts: map[string]store.Blob{}}
	pack := store.Pack
	// held is the bytes of the session's distinct requests and responses:
	// what it sends, receives and stores. It stays within maxHeld.
	var held int64
	put := func(b []byte) string {
		id, blob := pack(b)
		if _, ok := se.Artifacts[id]; !ok {
			held += int64(len(b))
		}
		se.Artifacts[id] = blob
		return id
	}
	maxHeld := cfg.MaxSessionBytes
	if maxHeld <= 0 {
		maxHeld = limits.MaxSessionBytes
	}
	tooLarge := func(what string) string {
		return fmt.Sprintf("%s: more than the %s one session may send and receive in all (limits.MaxSessionBytes)", what, provider.ByteSize(maxHeld))
	}
	conv, err := job.New()
	if err != nil {
		return se, err
	}
	call := 0
	for {
		req := conv.Next()
		if req == nil {
			break
		}
		call++
		phase := conv.Phase()
		reqBody, err := encodeRequest(req)
		if err != nil {
			return se, fmt.Errorf("session %s: encoding request: %w", job.ID, err)
		}
		if n := int64(len(reqBody)); held+n > maxHeld {
			// Not sent: the conversation outgrew what a session may send.
			se.Status = store.SessionFailed
			se.FailedPhase, se.FailureKind = phase, string(provider.SessionTooLarge)
			se.FailureMsg = (&provider.Error{Kind: provider.SessionTooLarge, Msg: tooLarge(fmt.Sprintf("call %d not sent: its request of %s would bring the session to %s",
				call, provider.ByteSize(n), provider.ByteSize(held+n)))}).Error()
			conv.Fail()
			break
		}
		reqSHA := put(reqBody)
		// What is left for the response: a body over it is refused unread.
		left := maxHeld - held
		callCtx := ctx
		if left < limits.MaxResponseBody {
			callCtx = provider.WithMaxBody(ctx, left)
		}
		var resp *chat.Response
		// What counts toward MaxAttempts: the failures of this call except
		// the connection failures of an outage (kept by streak: a streak can
		// become an outage after the fact) and the 429s waited out.
		callID := fmt.Sprintf("%s/%d", job.ID, call)
		counted := 0
		var connFails []int
		var rateWaited time.Duration
		for n := 1; ; n++ {
			// A call a batch answered in an earlier pass, asked again to
			// rebuild the session: the journal answers it, and it is not
			// counted, paced, budgeted or waited for again.
			rp := Point{call, n}.before(job.Parked)
			if drain.Err() != nil {
				// Draining: no call is sent any more, not even the next
				// turn or retry of a session in flight; the session is
				// kept as interrupted, for a resume to run again.
				se.Status = store.SessionInterrupted
				se.Finished = time.Now()
				return se, nil
			}
			var probe bool
			var admitErr error
			if !rp {
				probe, admitErr = out.admit(ctx)
			}
			if admitErr != nil {
				// The run gave up on the endpoint, or was cancelled while
				// this call waited: the call is not made.
				se.Status = store.SessionInterrupted
				se.Finished = time.Now()
				return se, nil
			}
			if cfg.Fence != nil && !rp {
				// Asked after any wait for the endpoint, just before the
				// call.
				if err := cfg.Fence(ctx, job); err != nil {
					// The process no longer holds the session (another
					// took it over while this one was paused): the call
					// is not made, and what was sent stays on record as
					// an interrupted incarnation.
					out.release(probe)
					fenced.Add(1)
					se.Status = store.SessionInterrupted
					se.Finished = time.Now()
					return se, nil
				}
			}
			a := store.Attempt{Incarnation: job.Incarnation, Call: call, Attempt: n, Phase: phase, Started: time.Now(), RequestSHA: reqSHA}
			reserved, allowed := 0.0, true
			if cfg.Budget != nil && !rp {
				reserved, allowed = cfg.Budget.Call(len(reqBody))
			}
			if !allowed {
				out.release(probe)
				// The cost limit: this call is not made, and the session
				// stops as interrupted, a cell a resumed run completes.
				se.Status = store.SessionInterrupted
				se.Finished = time.Now()
				return se, nil
			}
			cctx := provider.WithEncoded(provider.WithCall(callCtx, provider.Call{Session: job.ID, Seq: job.Seq, Turn: call, Attempt: n, Incarnation: job.Incarnation}), req, reqBody)
			var r *chat.Response
			var callErr error
			if rp {
				r, callErr = p.Chat(cctx, req)
				if errors.Is(callErr, ErrParked) {
					return se, fmt.Errorf("session %s: call %d, attempt %d was answered in an earlier pass and is no longer in the run's journal", job.ID, call, n)
				}
			} else {
				r, callErr = chatOnce(cctx, cfg, p, req)
			}
			if errors.Is(callErr, ErrParked) {
				// Held for the next wave: the session ends for this pass.
				// The call's reservation stays until the wave is in.
				out.release(probe)
				if cfg.Budget != nil {
					cfg.Budget.Park(reserved)
				}
				se.Status = statusParked
				return se, nil
			}
			if cfg.Budget != nil && !rp {
				if callErr == nil && r != nil {
					cfg.Budget.Settle(reserved, r.Usage.InputTokens, r.Usage.OutputTokens)
				} else {
					cfg.Budget.Settle(reserved, 0, 0)
				}
			}
			a.DurationMS = float64(time.Since(a.Started).Microseconds()) / 1000
			if !rp {
				attempts.Add(1)
			}
			if callErr == nil && r == nil {
				callErr = &provider.Error{Kind: provider.Malformed, Msg: "provider returned no response"}
			}
			var body []byte
			if callErr == nil {
				if body = r.Raw; body == nil {
					body, _ = json.Marshal(r)
				}
				if n := int64(len(body)); n > left {
					// A response the body limit did not stop (a batch
					// result, an in-process provider): received and
					// counted, not kept.
					callErr = &provider.Error{Kind: provider.ResponseTooLarge, Msg: fmt.Sprintf("response of %s, over the %s left", provider.ByteSize(n), provider.ByteSize(left))}
					a.InputTokens, a.OutputTokens = r.Usage.InputTokens, r.Usage.OutputTokens
					se.InputTokens += a.InputTokens
					se.OutputTokens += a.OutputTokens
				}
			}
			if callErr == nil {
				a.Outcome = "ok"
				a.InputTokens, a.OutputTokens = r.Usage.InputTokens, r.Usage.OutputTokens
				a.ModelID, a.Fingerprint, a.RequestID, a.FinishReason = r.Meta.ModelID, r.Meta.Fingerprint, r.Meta.RequestID, r.FinishReason
				a.ResponseSHA = put(body)
				if !rp {
					out.report(callID, "", probe)
					shared.report(nil)
				}
				se.InputTokens += a.InputTokens
				se.OutputTokens += a.OutputTokens
				se.Attempts = append(se.Attempts, a)
				resp = r
				break
			}
			body, r = nil, nil
			if !rp {
				failures.Add(1)
			}
			pe := provider.Classify(ctx, callErr)
			if pe.Kind == provider.ResponseTooLarge && left < limits.MaxResponseBody {
				// The session's limit, not the provider's, refused it.
				pe = &provider.Error{Kind: provider.SessionTooLarge,
					Msg: tooLarge(fmt.Sprintf("call %d: %s, with %s sent and received before it", call, pe.Msg, provider.ByteSize(held)))}
			}
			a.Outcome, a.ErrorKind, a.ErrorMsg, a.HTTPStatus = "error", string(pe.Kind), pe.Error(), pe.Status
			se.Attempts = append(se.Attempts, a)
			kind := pe.Kind
			if ctx.Err() != nil {
				kind = provider.Canceled // the run's own doing, not the endpoint's
			}
			var streak int
			var excused bool
			if !rp {
				streak, excused = out.report(callID, kind, probe)
				if kind != provider.Canceled {
					shared.report(pe)
				}
			}
			if ctx.Err() != nil || pe.Kind == provider.Canceled {
				se.Status = store.SessionInterrupted
				se.Finished = time.Now()
				return se, nil
			}
			if connectionFailure(pe.Kind) && !rp {
				if excused {
					// An outage: the next attempt waits in admit.
					continue
				}
				connFails = append(connFails, streak)
			} else if pe.Kind == provider.RateLimited && pe.RetryAfter > 0 && cfg.RateLimitWait > 0 {
				// The endpoint said when to come back: wait, within the
				// call's budget for it, without spending an attempt.
				policy := cfg.Retry
				policy.MaxAttempts = n + 1
				if _, wait := policy.Retry(n, pe, rng); rateWaited+wait <= cfg.RateLimitWait {
					rateWaited += wait
					if rp || cfg.Batch {
						continue // the next wave stands for the wait
					}
					rateWaits.Add(1)
					if err := cfg.Sleep(ctx, wait); err != nil {
						se.Status = store.SessionInterrupted
						se.Finished = time.Now()
						return se, nil
					}
					continue
				}
				counted++
			} else {
				counted++
			}
			used := counted + out.counted(connFails)
			if used == 0 {
				continue // the streak became an outage meanwhile
			}
			again, wait := cfg.Retry.Retry(used, pe, rng)
			wait = boundWait(wait, cfg)
			if !again {
				se.Status = store.SessionFailed
				se.FailedPhase, se.FailureKind, se.FailureMsg = phase, string(pe.Kind), pe.Error()
				conv.Fail()
				break
			}
			if rp || cfg.Batch {
				continue // the next wave stands for the wait
			}
			if err := cfg.Sleep(ctx, wait); err != nil {
				se.Status = store.SessionInterrupted
				se.Finished = time.Now()
				return se, nil
			}
		}
		if resp == nil {
			break
		}
		conv.Observe(resp)
	}
	se.Finished = time.Now()
	se.Stop = conv.Stop()
	se.Messages = conv.Entries()
	// The trace indexes the session: its cell, status and every attempt with
	// the artifacts holding the exact request and response. The last request
	// and response together hold the whole conversation.
	trace, _ := json.Marshal(struct {
		ID       string          `json:"session_id"`
		Spec     json.RawMessage `json:"spec"`
		Status   string          `json:"status"`
		Stop     string          `json:"stop_reason,omitempty"`
		Failure  string          `json:"failure,omitempty"`
		Messages int             `json:"messages"`
		Attempts []store.Attempt `json:"attempts"`
	}{se.ID, se.Spec, se.Status, se.Stop, se.FailureMsg, len(se.Messages), se.Attempts})
	se.TraceSHA = put(trace)
	return se, nil
}

// statusParked marks a session that parked (ErrParked): it is not stored.
const statusParked = "parked"

// boundWait bounds a wait before a retry by --rate-limit-wait: a server's
// Retry-After never makes one call wait longer than the run allows for
// waiting out rate limits (with a negative --rate-limit-wait, every 429 is
// an attempt and the retry policy's longest delay bounds the wait).
func boundWait(wait time.Duration, cfg Config) time.Duration {
	switch {
	case cfg.RateLimitWait > 0:
		return min(wait, cfg.RateLimitWait)
	case cfg.RateLimitWait < 0 && cfg.Retry.MaxDelay > 0:
		return min(wait, cfg.Retry.MaxDelay)
	}
	return wait
}
