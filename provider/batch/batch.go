// Package batch runs a run's model calls through a provider's batch API
// (OpenAI's Batch API, Anthropic's Message Batches), one turn per wave.
//
// Sessions stay what they are everywhere else in budge: each runs in its
// own goroutine and asks the model one call at a time. The Batcher is the
// provider they ask. It holds every call until each session in flight is
// waiting for the model (the runner tells it when sessions start and end,
// runner.Waves), then sends the waiting calls as one wave: one batch, or
// several where the provider's limits split it. When a batch ends its
// results go back to the calls that asked, and the sessions move on to
// their next turn (a tool result, a follow-up) and ask again: the next
// wave. A session of three model turns takes three waves however many
// sessions there are. A request that failed inside a batch comes back to
// its session as a failed call, which the run's retry policy tries again
// in a later wave, as a new attempt.
//
// Every batch is stored before it is submitted (under a token of budge's
// own, which the provider keeps with the batch where it can) and again
// with its id and state. Results are written to the run's journal before
// any session sees them. A process that continues the run after a kill
// first collects the batches its predecessor submitted into the journal,
// so the sessions it runs again find those answers there: no batch is
// submitted twice and no request paid for twice.
package batch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime/debug"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider"
)

// API is a provider's batch endpoint.
type API interface {
	// Style names the API as stored with each batch: "openai" or
	// "anthropic".
	Style() string
	// Limits are the most requests and bytes one batch may hold, as the
	// provider documents them (the Batcher packs below them).
	Limits() Limits
	// Window is the provider's completion window for a batch.
	Window() time.Duration
	// Encode gives the body of one request as the batch holds it.
	Encode(req *chat.Request) ([]byte, error)
	// Submit sends reqs as one batch and returns its id. token is
	// budge's mark on the batch, for Find. A refusal for size wraps
	// ErrTooLarge.
	Submit(ctx context.Context, token string, reqs []Request) (string, error)
	// Find returns the id of a batch that was submitted (its create
	// answer lost), or "" when the provider has none (or cannot tell).
	Find(ctx context.Context, q Lookup) (string, error)
	// Status reads a batch's state and counts.
	Status(ctx context.Context, id string) (Status, error)
	// Results reads an ended batch's results, one at a time. A download
	// that fails or is cut off returns an error of an infrastructure kind
	// after the whole lines it read: reading again gives them again.
	Results(ctx context.Context, id string, fn func(Result) error) error
	// Cancel asks the provider to cancel a batch.
	Cancel(ctx context.Context, id string) error
	// Cleanup deletes what a collected batch left at the provider: its
	// uploaded input and its result files (OpenAI), the batch and its
	// results (Anthropic).
	Cleanup(ctx context.Context, id string) error
}

// ErrTooLarge marks a provider's refusal of a batch for its size: the
// Batcher splits the batch and submits the halves.
var ErrTooLarge = errors.New("the provider refused the batch as too large")

// Lookup is what Find may match a batch by: budge's token (kept with the
// batch where the provider keeps metadata) or, where it keeps none, the
// time it was sent, its number of requests and their custom ids.
type Lookup struct {
	Token     string
	Submitted time.Time
	CustomIDs []string
	// Known are ids of the run's other batches, never a match.
	Known map[string]bool
}

// Limits bound one batch.
type Limits struct {
	Requests int
	Bytes    int64
}

// Request is one line of a batch.
type Request struct {
	CustomID string
	Body     []byte
}

// Status is a batch as the provider reports it.
type Status struct {
	// State is the provider's own word (in_progress, completed, expired,
	// ended, ...); Ended says whether results can be read.
	State string
	Ended bool
	// Counts are the requests by state, in the provider's words.
	Counts map[string]int
	// Failure, for a batch that failed as a whole (OpenAI's errors.data),
	// is why, classified: no request of it ran.
	Failure *provider.Error
}

// Result is the outcome of one request of an ended batch: a response, or
// an error (a request the provider failed, expired or cancelled).
type Result struct {
	CustomID string
	Response *chat.Response
	Err      *provider.Error
	// Unrun marks an error of a request that never ran (expired or
	// cancelled with its batch): nothing was paid for it.
	Unrun bool
}

// Record is a batch as the store keeps it.
type Record struct {
	Token     string    `json:"token"`
	ID        string    `json:"id,omitempty"` // empty until the provider gave one
	Style     string    `json:"style"`
	Wave      int       `json:"wave"`
	State     string    `json:"state"` // submitting, submitted, collected, cancelled, lost
	Submitted time.Time `json:"submitted"`
	// Requests are the batch's requests: custom id and the journal key of
	// the request.
	Requests []Entry `json:"requests"`
	// Counts are the provider's last counts, by state.
	Counts map[string]int `json:"counts,omitempty"`
	// Reason says why a batch failed as a whole, was refused, or could not
	// be read.
	Reason string `json:"reason,omitempty"`
	// Errors are the requests the batch failed, for a batch collected by
	// a later process than the one that sent it: the sessions run again
	// get them back (their attempts are recorded as they happened).
	Errors []Failed `json:"errors,omitempty"`
	// Later says the batch was collected for a later process's sessions.
	Later bool `json:"later,omitempty"`
	// Cleaned says its files were deleted at the provider.
	Cleaned bool `json:"cleaned,omitempty"`
	// Found says its create answer was lost and the batch was found at
	// the provider, not sent again; WasCancelled that it was cancelled
	// (an interrupted run) and its finished results collected after;
	// Kept how many answers its collection kept; Rereads how often reading
	// its results failed and was tried again; Failed that it failed as a
	// whole (Reason says why).
	Found        bool `json:"found,omitempty"`
	WasCancelled bool `json:"was_cancelled,omitempty"`
	Kept         int  `json:"kept,omitempty"`
	Rereads      int  `json:"rereads,omitempty"`
	Failed       bool `json:"failed,omitempty"`
}

// Failed is one request a batch failed.
type Failed struct {
	Key    string        `json:"key"`
	Kind   provider.Kind `json:"kind"`
	Status int           `json:"status,omitempty"`
	Msg    string        `json:"msg"`
}

// Record states.
const (
	Submitting = "submitting" // stored, not yet known to be submitted
	Submitted  = "submitted"
	Collected  = "collected" // every result is in the journal or back with its session
	Cancelled  = "cancelled" // cancelled at the provider, its finished results not yet read
	Lost       = "lost"      // stored as submitting, and the provider has no such batch
	Split      = "split"     // refused for its size: its requests went out in two halves
)

// Entry is one request of a stored batch.
type Entry struct {
	CustomID string `json:"custom_id"`
	Key      string `json:"key"`
}

// Ledger keeps a run's batches (the store).
type Ledger interface {
	Batches(ctx context.Context) ([]Record, error)
	PutBatch(ctx context.Context, r Record) error
}

// Journal keeps answers by request key (the run's journal).
type Journal interface {
	Key(ctx context.Context, req *chat.Request) [32]byte
	Lookup(key [32]byte) (*chat.Response, bool)
	// Keep writes an answer; with later, this process may look it up.
	Keep(key [32]byte, resp *chat.Response, later bool) error
}

// Event is what the Batcher reports as it goes.
type Event struct {
	Wave     int
	Batches  int            // batches of the wave
	Requests int            // requests of the wave
	Counts   map[string]int // requests by state, over the open batches
	Window   time.Duration
	Note     string
}

// Config sets up a Batcher.
type Config struct {
	RunID   string
	API     API
	Info    provider.Info
	Ledger  Ledger
	Journal Journal
	// Cap is the most sessions in flight (the run's concurrency): a wave
	// goes out when that many wait, or when fewer wait and no more will
	// start.
	Cap int
	// Poll is how often a batch's state is read (1 s when 0); it grows to
	// a minute while a batch stays open.
	Poll time.Duration
	// Notify, when set, is told of waves and batch states.
	Notify func(Event)
	// Sleep waits (tests replace it).
	Sleep func(ctx context.Context, d time.Duration) error
	// KeepFiles keeps what a collected batch leaves at the provider
	// (input and result files, the batch); by default it is deleted once
	// every result is in the journal.
	KeepFiles bool
	// ReadFor is how long the results of an ended batch are tried again
	// when reading them fails (30 minutes when 0). The batch is not sent
	// again meanwhile: its results stay at the provider, and when they
	// cannot be read by then the sessions stop as interrupted, for a
	// resume to collect them.
	ReadFor time.Duration
}

// margin is the share of a provider's byte limit a batch is packed to:
// the size is estimated per request, and a file at the limit is refused.
const margin = 0.9

// Batcher is a provider that sends calls in waves of batches.
type Batcher struct {
	c Config

	mu      sync.Mutex
	active  int
	noMore  bool
	waiting []*call
	held    int // calls waiting in a wave already sent
	waves   int
	open    map[string]*Record // by token
	ctx     context.Context    // the run's: batches are polled under it
	stopped bool
	wg      sync.WaitGroup
	stats   Stats
	// submitting lets one batch be encoded and uploaded at a time: a wave
	// of several batches holds one upload's file, not all of them.
	submitting sync.Mutex
	// gcPercent is the collector setting before Start, restored by Wait.
	gcPercent int
	// replay holds, by request key, the failures a batch collected for
	// this process gave requests an earlier process sent: each is given
	// once to the session asking that request, as its attempt's outcome.
	replay map[[32]byte][]*provider.Error
}

// Stats count what the Batcher did.
type Stats struct {
	Waves, Batches, Requests int
	// Reattached counts the batches a previous process submitted that this
	// one collected; Recovered the answers they gave.
	Reattached, Recovered int
	// Duplicates and Missing count results a batch gave twice or not at
	// all; Unknown results with a custom id budge never sent.
	Duplicates, Missing, Unknown int
	// Rereads counts results downloads tried again; Failed batches that
	// failed as a whole; Split batches refused for their size and split;
	// Cleaned batches whose files were deleted at the provider.
	Rereads, Failed, Split, Cleaned int
	// Found counts batches whose create answer was lost, found at the
	// provider instead of sent again; CancelledRecovered the answers
	// collected from batches an interrupt had cancelled.
	Found, CancelledRecovered int
	// Reasons are why batches failed, as the provider said.
	Reasons []string
}

// call is one call waiting for a wave.
type call struct {
	id   string
	key  [32]byte
	body []byte
	done chan struct{}
	resp *chat.Response
	err  error
	// delivered is set under Batcher.mu once the call has its outcome.
	delivered bool
}

// New returns a Batcher; Start must be called before the run.
func New(c Config) *Batcher {
	if c.Poll <= 0 {
		c.Poll = time.Second
	}
	if c.Sleep == nil {
		c.Sleep = provider.Sleep
	}
	if c.Cap < 1 {
		c.Cap = 1
	}
	if c.ReadFor <= 0 {
		c.ReadFor = 30 * time.Minute
	}
	return &Batcher{c: c, open: map[string]*Record{}, replay: map[[32]byte][]*provider.Error{}}
}

// Info is the model's.
func (b *Batcher) Info() provider.Info { return b.c.Info }

// Stats returns the counts so far.
func (b *Batcher) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.stats
	st.Reasons = append([]string(nil), st.Reasons...)
	return st
}

// Start collects the batches an earlier process of the run submitted and
// did not collect (a kill, or an interrupt that cancelled them): each is
// found (when its id was not stored), waited for and read into the
// journal, so the sessions run again find their answers there, and the
// requests it failed are kept for those sessions too. ctx is the run's:
// batches are polled under it, and cancelling it cancels the open
// batches.
func (b *Batcher) Start(ctx context.Context) error {
	b.ctx = ctx
	// A batching process holds up to Cap sessions for as long as a batch
	// takes: its heap may grow by a quarter before a collection, not
	// double (the sessions' own memory is most of it, not garbage).
	b.gcPercent = debug.SetGCPercent(25)
	recs, err := b.c.Ledger.Batches(ctx)
	if err != nil {
		return err
	}
	known := map[string]bool{}
	for _, r := range recs {
		if r.ID != "" {
			known[r.ID] = true
		}
	}
	for i := range recs {
		r := recs[i]
		if r.Wave > b.waves {
			b.waves = r.Wave
		}
		if r.State != Submitting && r.State != Submitted && r.State != Cancelled {
			if r.Later {
				b.keepReplay(r)
			}
			continue
		}
		if r.ID == "" {
			id, err := b.c.API.Find(ctx, lookup(r, known))
			if err != nil {
				return fmt.Errorf("batch: looking for batch %s of an earlier process: %w", r.Token, err)
			}
			if id == "" {
				// Stored, and never submitted (a kill before the
				// provider answered): its requests go out again.
				r.State = Lost
				if err := b.c.Ledger.PutBatch(ctx, r); err != nil {
					return err
				}
				continue
			}
			known[id] = true
			r.ID, r.State, r.Found = id, Submitted, true
			b.count(func(s *Stats) { s.Found++ })
			if err := b.c.Ledger.PutBatch(ctx, r); err != nil {
				return err
			}
			b.note(Event{Wave: r.Wave, Note: fmt.Sprintf("found batch %s of an earlier process (its create answer was lost)", id)})
		}
		b.note(Event{Wave: r.Wave, Batches: 1, Requests: len(r.Requests), Note: "collecting batch " + r.ID + " of an earlier process"})
		r.Later = true
		if r.State == Cancelled {
			r.WasCancelled = true
		}
		n, err := b.collect(ctx, &r, nil)
		if err != nil {
			return err
		}
		b.keepReplay(r)
		b.mu.Lock()
		b.stats.Reattached++
		b.stats.Recovered += n
		if r.WasCancelled {
			b.stats.CancelledRecovered += n
		}
		b.mu.Unlock()
	}
	return nil
}

// lookup is what Find may know of a stored batch.
func lookup(r Record, known map[string]bool) Lookup {
	q := Lookup{Token: r.Token, Submitted: r.Submitted, Known: known}
	for _, e := range r.Requests {
		q.CustomIDs = append(q.CustomIDs, e.CustomID)
	}
	return q
}

// keepReplay keeps the failures of a batch collected for a later process,
// for the sessions that ask those requests again.
func (b *Batcher) keepReplay(r Record) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, f := range r.Errors {
		var key [32]byte
		if _, err := hex.Decode(key[:], []byte(f.Key)); err != nil {
			continue
		}
		msg := f.Msg
		if r.ID != "" {
			msg += " (in batch " + r.ID + ", collected for this process)"
		}
		b.replay[key] = append(b.replay[key], &provider.Error{Kind: f.Kind, Status: f.Status, Msg: msg})
	}
}

// Started, Ended and NoMore follow the sessions in flight (runner.Waves).
func (b *Batcher) Started() {
	b.mu.Lock()
	b.active++
	b.mu.Unlock()
}

func (b *Batcher) Ended() {
	b.mu.Lock()
	b.active--
	b.maybeSend()
	b.mu.Unlock()
}

func (b *Batcher) NoMore() {
	b.mu.Lock()
	b.noMore = true
	b.maybeSend()
	b.mu.Unlock()
}

// Chat answers from the journal, or waits for the call's wave.
func (b *Batcher) Chat(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, &provider.Error{Kind: provider.Canceled, Err: err}
	}
	key := b.c.Journal.Key(ctx, req)
	b.mu.Lock()
	if q := b.replay[key]; len(q) > 0 {
		// A failure an earlier process paid for: this attempt's outcome.
		e := q[0]
		if len(q) == 1 {
			delete(b.replay, key)
		} else {
			b.replay[key] = q[1:]
		}
		b.mu.Unlock()
		return nil, e
	}
	b.mu.Unlock()
	if resp, ok := b.c.Journal.Lookup(key); ok {
		return resp, nil
	}
	body, err := b.c.API.Encode(req)
	if err != nil {
		return nil, &provider.Error{Kind: provider.BadRequest, Msg: err.Error()}
	}
	c := &call{id: customID(b.c.RunID, ctx), key: key, body: body, done: make(chan struct{})}
	b.mu.Lock()
	b.waiting = append(b.waiting, c)
	b.maybeSend()
	b.mu.Unlock()
	select {
	case <-c.done:
		return c.resp, c.err
	case <-ctx.Done():
		// The batch goes on; its answer still reaches the journal.
		return nil, &provider.Error{Kind: provider.Canceled, Err: ctx.Err()}
	}
}

// customID names a call for the provider from its run, session, turn,
// attempt and incarnation (letters, digits, - and _; at most 64).
func customID(runID string, ctx context.Context) string {
	c, _ := provider.CallOf(ctx)
	run := runID
	if len(run) > 24 {
		run = run[:24]
	}
	return fmt.Sprintf("%s-s%d-t%d-a%d-i%d", safe(run), c.Seq, c.Turn, c.Attempt, c.Incarnation)
}

func safe(s string) string {
	out := []byte(s)
	for i, ch := range out {
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '_') {
			out[i] = '_'
		}
	}
	return string(out)
}

// maybeSend sends a wave when every session in flight waits for one: as
// many as may be in flight, or all there are once no more will start.
// b.mu is held.
func (b *Batcher) maybeSend() {
	if len(b.waiting) == 0 || b.stopped {
		return
	}
	// Sessions whose call is in a wave still out are not waiting for a new
	// one: a wave goes when every session in flight has asked again.
	if len(b.waiting) < b.active || (b.active < b.c.Cap && !b.noMore) {
		return
	}
	wave := b.waiting
	b.waiting = nil
	b.held += len(wave)
	b.waves++
	b.stats.Waves++
	n := b.waves
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.send(n, wave)
	}()
}

// send submits one wave, split at the provider's limits, and delivers
// each batch's results as it ends.
func (b *Batcher) send(wave int, calls []*call) {
	ctx := b.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	parts := split(calls, b.c.API.Limits())
	b.note(Event{Wave: wave, Batches: len(parts), Requests: len(calls), Window: b.c.API.Window()})
	// Once the whole wave is with the provider, its bodies and the garbage
	// of building them are returned to the system: the sessions may now
	// wait for hours, and an idle process would not collect on its own.
	var unsent atomic.Int32
	unsent.Store(int32(len(parts)))
	submitted := func() {
		if unsent.Add(-1) == 0 {
			go debug.FreeOSMemory()
		}
	}
	// Each part counts once, whether its submit ended or it stopped before.
	var wg sync.WaitGroup
	for _, part := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b.run(ctx, wave, part, sync.OnceFunc(submitted))
		}()
	}
	wg.Wait()
}

// run submits and collects one batch of calls; calls it could not answer
// get the failure.
func (b *Batcher) run(ctx context.Context, wave int, part []*call, submitted func()) {
	if err := b.submitAndCollect(ctx, wave, part, submitted); err != nil {
		pe := provider.Classify(ctx, err)
		for _, c := range part {
			b.deliver(c, nil, pe)
		}
	}
}

// split cuts calls into batches within limits, in order: at most the
// provider's number of requests, and a margin below its bytes.
func split(calls []*call, l Limits) [][]*call {
	if l.Bytes > 0 {
		l.Bytes = int64(float64(l.Bytes) * margin)
	}
	var out [][]*call
	var cur []*call
	var size int64
	for _, c := range calls {
		n := int64(len(c.body) + len(c.id) + 100)
		if len(cur) > 0 && (l.Requests > 0 && len(cur) >= l.Requests || l.Bytes > 0 && size+n > l.Bytes) {
			out = append(out, cur)
			cur, size = nil, 0
		}
		cur = append(cur, c)
		size += n
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// deliver gives a call its answer or error, once; the call stops counting
// as held in a wave, so the next wave waits for its session to ask again.
func (b *Batcher) deliver(c *call, resp *chat.Response, err error) {
	b.mu.Lock()
	if c.delivered {
		b.mu.Unlock()
		return
	}
	c.delivered = true
	b.held--
	b.mu.Unlock()
	c.resp, c.err = resp, err
	close(c.done)
}

func (b *Batcher) submitAndCollect(ctx context.Context, wave int, calls []*call, submitted func()) error {
	defer submitted()
	tok := make([]byte, 12)
	rand.Read(tok)
	r := Record{Token: "budge-" + hex.EncodeToString(tok), Style: b.c.API.Style(), Wave: wave, State: Submitting, Submitted: time.Now().UTC()}
	reqs := make([]Request, len(calls))
	byID := make(map[string]*call, len(calls))
	for i, c := range calls {
		if byID[c.id] != nil {
			// Two calls of one attempt cannot be: a runner fault.
			return &provider.Error{Kind: provider.Unknown, Msg: "batch: two calls share the request id " + c.id}
		}
		byID[c.id] = c
		reqs[i] = Request{CustomID: c.id, Body: c.body}
		r.Requests = append(r.Requests, Entry{CustomID: c.id, Key: hex.EncodeToString(c.key[:])})
	}
	if err := b.c.Ledger.PutBatch(ctx, r); err != nil {
		return err
	}
	b.submitting.Lock()
	id, err := b.submit(ctx, &r, reqs)
	b.submitting.Unlock()
	clear(reqs)
	if err != nil && errors.Is(err, ErrTooLarge) && len(calls) > 1 && ctx.Err() == nil {
		// Refused for its size (an estimate below the limit can still
		// be over it): the halves go out instead, each split again if
		// need be.
		r.State, r.Reason = Split, provider.Classify(ctx, err).Error()
		if err := b.c.Ledger.PutBatch(context.WithoutCancel(ctx), r); err != nil {
			return err
		}
		b.count(func(s *Stats) { s.Split++ })
		b.note(Event{Wave: wave, Note: fmt.Sprintf("a batch of %d requests was refused for its size (%s); sending it in two halves", len(calls), r.Reason)})
		half := len(calls) / 2
		var wg sync.WaitGroup
		for _, part := range [][]*call{calls[:half], calls[half:]} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				b.run(ctx, wave, part, func() {})
			}()
		}
		submitted()
		wg.Wait()
		return nil
	}
	// The bodies are the provider's now: the wait for the results does not
	// hold them.
	for _, c := range calls {
		c.body = nil
	}
	submitted()
	if err != nil {
		r.State = Lost
		r.Reason = provider.Classify(ctx, err).Error()
		b.c.Ledger.PutBatch(context.WithoutCancel(ctx), r)
		return err
	}
	r.ID, r.State = id, Submitted
	if err := b.c.Ledger.PutBatch(ctx, r); err != nil {
		return err
	}
	b.mu.Lock()
	b.open[r.Token] = &r
	b.stats.Batches++
	b.stats.Requests += len(calls)
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.open, r.Token)
		b.mu.Unlock()
	}()
	_, err = b.collect(ctx, &r, byID)
	if ctx.Err() != nil && r.State == Submitted {
		// Cancelling the run cancels its open batches. A cancelled batch
		// stays to be collected: the requests it finished are paid for,
		// and a resume reads them into the journal.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		if b.c.API.Cancel(cctx, r.ID) == nil {
			r.State = Cancelled
			b.c.Ledger.PutBatch(cctx, r)
		}
		cancel()
	}
	return err
}

// submit sends a batch, trying again after failures that say nothing
// about the batch (the endpoint down, a rate limit) for up to ten
// minutes: an outage is not an observation of the model. Before each new
// try it looks for the batch at the provider: a create whose answer was
// lost may have been taken.
func (b *Batcher) submit(ctx context.Context, r *Record, reqs []Request) (string, error) {
	wait := time.Second
	deadline := time.Now().Add(10 * time.Minute)
	for {
		id, err := b.c.API.Submit(ctx, r.Token, reqs)
		if err == nil {
			return id, nil
		}
		pe := provider.Classify(ctx, err)
		if !pe.Kind.Infrastructure() || time.Now().After(deadline) {
			return "", err
		}
		known := map[string]bool{}
		if recs, lerr := b.c.Ledger.Batches(ctx); lerr == nil {
			for _, o := range recs {
				if o.ID != "" {
					known[o.ID] = true
				}
			}
		}
		if found, ferr := b.c.API.Find(ctx, lookup(*r, known)); ferr == nil && found != "" {
			r.Found = true
			b.count(func(s *Stats) { s.Found++ })
			b.note(Event{Wave: r.Wave, Note: fmt.Sprintf("submitting a batch failed (%v), and the provider has it: batch %s", pe, found)})
			return found, nil
		}
		b.note(Event{Note: fmt.Sprintf("submitting a batch failed (%v); trying again in %s", pe, wait)})
		if err := b.c.Sleep(ctx, wait); err != nil {
			return "", err
		}
		wait = min(2*wait, time.Minute)
	}
}

// collect waits for a batch to end and reads its results: each answer is
// kept in the journal, then given to its call (byID; nil when collecting
// for a later process, when the failures are kept in the record). A
// results download that fails or is cut off is read again, skipping what
// was read, for up to ReadFor: the batch is never sent again while its
// results may still be read. Calls the batch gave no result end as failed
// calls of an infrastructure kind, to be tried again. It returns the
// answers kept.
func (b *Batcher) collect(ctx context.Context, r *Record, byID map[string]*call) (int, error) {
	wait := b.c.Poll
	var st Status
	last := ""
	for {
		var err error
		st, err = b.c.API.Status(ctx, r.ID)
		if err == nil {
			r.Counts = st.Counts
			if st.Ended {
				break
			}
			// A poll that changes nothing prints nothing.
			if now := fmt.Sprint(st.State, st.Counts); now != last {
				last = now
				b.note(Event{Wave: r.Wave, Counts: st.Counts, Note: "batch " + r.ID + " " + st.State})
			}
		} else if pe := provider.Classify(ctx, err); !pe.Kind.Infrastructure() {
			return 0, err
		}
		if err := b.c.Sleep(ctx, wait); err != nil {
			return 0, err
		}
		wait = min(wait*3/2, time.Minute)
	}
	if st.Failure != nil {
		return 0, b.failed(ctx, r, byID, st)
	}
	keyOf := make(map[string]string, len(r.Requests))
	for _, e := range r.Requests {
		keyOf[e.CustomID] = e.Key
	}
	seen := make(map[string]bool, len(r.Requests))
	// pass is what the current download gave: a download read again may
	// give again what an earlier one gave before it was cut off, which is
	// no duplicate of the provider's.
	pass := make(map[string]bool, len(r.Requests))
	kept := 0
	var fails []Failed
	var keepErr error
	read := func(res Result) error {
		k, ok := keyOf[res.CustomID]
		if !ok {
			b.count(func(s *Stats) { s.Unknown++ })
			return nil
		}
		again := pass[res.CustomID]
		pass[res.CustomID] = true
		if seen[res.CustomID] {
			if again {
				b.count(func(s *Stats) { s.Duplicates++ })
			}
			return nil
		}
		seen[res.CustomID] = true
		c := byID[res.CustomID]
		if res.Err != nil {
			if c != nil {
				b.deliver(c, nil, res.Err)
			} else if byID == nil && !res.Unrun {
				fails = append(fails, Failed{Key: k, Kind: res.Err.Kind, Status: res.Err.Status, Msg: res.Err.Error()})
			}
			return nil
		}
		var key [32]byte
		if _, err := hex.Decode(key[:], []byte(k)); err == nil {
			if err := b.c.Journal.Keep(key, res.Response, byID == nil); err != nil {
				keepErr = fmt.Errorf("batch: keeping an answer of batch %s in the journal: %w", r.ID, err)
				return keepErr
			}
		}
		kept++
		if c != nil {
			b.deliver(c, res.Response, nil)
		}
		return nil
	}
	gone := ""
	wait = b.c.Poll
	deadline := time.Now().Add(b.c.ReadFor)
	for {
		clear(pass)
		err := b.c.API.Results(ctx, r.ID, read)
		if err == nil {
			break
		}
		if keepErr != nil || ctx.Err() != nil {
			return kept, err
		}
		pe := provider.Classify(ctx, err)
		if !pe.Kind.Infrastructure() {
			// The results are no longer there to read: the requests
			// without one are tried again.
			gone = pe.Error()
			r.Reason = "results could not be read: " + gone
			break
		}
		if time.Now().After(deadline) {
			r.Reason = "results could not be read: " + pe.Error()
			b.c.Ledger.PutBatch(context.WithoutCancel(ctx), *r)
			return kept, &provider.Error{Kind: provider.Canceled, Msg: fmt.Sprintf("the results of batch %s could not be read for %s (%v); they stay at the provider, and resuming the run collects them", r.ID, b.c.ReadFor, pe)}
		}
		r.Rereads++
		b.count(func(s *Stats) { s.Rereads++ })
		b.note(Event{Wave: r.Wave, Note: fmt.Sprintf("reading the results of batch %s failed after %d of %d (%v); reading again in %s", r.ID, len(seen), len(r.Requests), pe, wait)})
		if err := b.c.Sleep(ctx, wait); err != nil {
			return kept, err
		}
		wait = min(2*wait, time.Minute)
	}
	missing := 0
	ids := make([]string, 0)
	for id := range keyOf {
		if !seen[id] {
			missing++
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	why := fmt.Sprintf("batch %s ended (%s) without a result for this request", r.ID, st.State)
	if gone != "" {
		why = fmt.Sprintf("the results of batch %s could not be read (%s)", r.ID, gone)
	}
	for _, id := range ids {
		if c := byID[id]; c != nil {
			b.deliver(c, nil, &provider.Error{Kind: provider.Transient, Msg: why})
		}
	}
	if missing > 0 {
		b.count(func(s *Stats) { s.Missing += missing })
	}
	r.State, r.Kept = Collected, kept
	if byID == nil {
		r.Errors = fails
	}
	return kept, b.done(ctx, r)
}

// failed ends a batch that failed as a whole: no request of it ran. Its
// reason is stored and given to every call as the call's failure, of the
// kind the provider's error says (a refused file, a token limit): the
// requests are not sent again blindly.
func (b *Batcher) failed(ctx context.Context, r *Record, byID map[string]*call, st Status) error {
	r.Reason, r.Failed = st.Failure.Error(), true
	b.count(func(s *Stats) {
		s.Failed++
		s.Reasons = append(s.Reasons, fmt.Sprintf("batch %s: %s", r.ID, r.Reason))
	})
	b.note(Event{Wave: r.Wave, Note: fmt.Sprintf("batch %s failed: %s", r.ID, r.Reason)})
	for _, e := range r.Requests {
		if c := byID[e.CustomID]; c != nil {
			f := *st.Failure
			b.deliver(c, nil, &f)
		} else if byID == nil {
			r.Errors = append(r.Errors, Failed{Key: e.Key, Kind: st.Failure.Kind, Status: st.Failure.Status, Msg: r.Reason})
		}
	}
	r.State = Collected
	return b.done(ctx, r)
}

// done stores a collected batch, then deletes what it left at the
// provider unless the files are kept.
func (b *Batcher) done(ctx context.Context, r *Record) error {
	ctx = context.WithoutCancel(ctx)
	if err := b.c.Ledger.PutBatch(ctx, *r); err != nil {
		return err
	}
	if b.c.KeepFiles || r.Cleaned {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := b.c.API.Cleanup(cctx, r.ID); err != nil {
		b.note(Event{Wave: r.Wave, Note: fmt.Sprintf("deleting the files of batch %s failed (%v); they stay at the provider", r.ID, err)})
		return nil
	}
	r.Cleaned = true
	b.count(func(s *Stats) { s.Cleaned++ })
	return b.c.Ledger.PutBatch(ctx, *r)
}

func (b *Batcher) count(fn func(*Stats)) {
	b.mu.Lock()
	fn(&b.stats)
	b.mu.Unlock()
}

func (b *Batcher) note(e Event) {
	if b.c.Notify != nil {
		b.c.Notify(e)
	}
}

// Wait waits for the batches in flight to end (after a run).
func (b *Batcher) Wait() {
	b.wg.Wait()
	if b.ctx != nil {
		debug.SetGCPercent(b.gcPercent)
	}
}

// ErrBatchUnsupported is returned for a model whose provider has no batch
// API budge speaks.
var ErrBatchUnsupported = errors.New("this model's provider has no batch API budge can use")
