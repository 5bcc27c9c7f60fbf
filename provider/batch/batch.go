// Package batch runs a run's model calls through a provider's batch API
// (OpenAI's Batch API, Anthropic's Message Batches), one turn per wave.
//
// A session waiting for a wave is a row, not a parked goroutine: a batch
// run is passes over its planned sessions with the run's usual runner
// (bounded concurrency). In each pass every unfinished session runs
// against the run's journal, where the Batcher answers each call that an
// earlier wave answered (or failed: a failed attempt is kept there too,
// under its request and attempt). A call the journal cannot answer is
// written to the wave's spool, a file, and the session ends for the pass
// as parked (runner.ErrParked): not stored, not counted. After the pass
// Wave sends the spool as one wave, split into batches within the
// provider's limits, waits for them, writes every result to the journal
// and deletes what the batches left at the provider; the next pass runs
// the parked sessions again, and each finds its answer and parks at its
// next turn, or ends. A session of three model turns takes three waves
// however many sessions there are, and memory holds one batch's requests
// at a time, not the waiting sessions.
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
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/runner"
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
	Submit(ctx context.Context, token string, reqs Requests) (string, error)
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

// Terms are what a provider documents of its batch API: the name budge
// stores with each batch, the most one batch may hold and the completion
// window. A provider's API embeds its Terms for Style, Limits and Window.
type Terms struct {
	Name       string
	Max        Limits
	Completion time.Duration
}

func (t Terms) Style() string         { return t.Name }
func (t Terms) Limits() Limits        { return t.Max }
func (t Terms) Window() time.Duration { return t.Completion }

// Request is one line of a batch.
type Request struct {
	CustomID string
	Body     []byte
}

// Requests are one batch's requests, read in order from the wave's spool
// as often as a submit needs: a batch is never held in memory whole.
type Requests interface {
	Len() int
	Each(fn func(Request) error) error
}

// Body writes an upload's body to a temporary file through write and
// returns it at its start, for a provider to stream with its length
// (Upload.Size): a receiver that knows it reads the body into one buffer,
// where a chunked one is grown a copy at a time. Closing it removes the
// file.
func Body(write func(w io.Writer) error) (*Upload, error) {
	f, err := os.CreateTemp("", "budge-batch-*")
	if err != nil {
		return nil, err
	}
	tmp := &Upload{File: f}
	w := bufio.NewWriterSize(f, 1<<16)
	if err := write(w); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		return nil, err
	}
	if tmp.Size, err = f.Seek(0, io.SeekCurrent); err != nil {
		tmp.Close()
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		tmp.Close()
		return nil, err
	}
	return tmp, nil
}

// Upload is an upload's body in a temporary file, removed when closed,
// and its size in bytes.
type Upload struct {
	*os.File
	Size int64
}

// Close closes the file and removes it.
func (t *Upload) Close() error {
	err := t.File.Close()
	os.Remove(t.Name())
	return err
}

// WithLength sets a request's length (a middleware of either SDK, whose
// own wrapping of an upload's body hides its length from Go's transport).
func WithLength(n int64) func(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	return func(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
		req.ContentLength = n
		return next(req)
	}
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
	// the request. A collected batch is stored without them (Count says
	// how many it held): once every result is in the journal nothing reads
	// them, and a million-session run's 3 million of them took about
	// 400 MB to read back at its end.
	Requests []Entry `json:"requests"`
	Count    int     `json:"count,omitempty"`
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

// Len is how many requests the batch holds.
func (r Record) Len() int {
	if r.Requests == nil {
		return r.Count
	}
	return len(r.Requests)
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
	// Batches returns the run's batches without their requests (Count
	// says how many each holds): the open batches of a wave hold all of
	// the wave's requests, and a batcher reads them one batch at a time,
	// with Requests, as it collects each.
	Batches(ctx context.Context) ([]Record, error)
	// Requests returns the requests stored with a batch.
	Requests(ctx context.Context, token string) ([]Entry, error)
	PutBatch(ctx context.Context, r Record) error
}

// Journal keeps answers, and the attempts batches failed, by request key
// (the run's journal).
type Journal interface {
	Key(ctx context.Context, req *chat.Request) [32]byte
	// Lookup answers a request, counted as a call the journal saved;
	// Answer does the same without counting it (a call asked again to
	// rebuild a session in a later pass).
	Lookup(key [32]byte) (*chat.Response, bool)
	Answer(key [32]byte) (*chat.Response, bool)
	// Keep writes an answer; with later, this process may look it up.
	Keep(key [32]byte, resp *chat.Response, later bool) error
	// KeepFailure writes a failed attempt; Failure reads it back.
	KeepFailure(key [32]byte, e *provider.Error) error
	Failure(key [32]byte) (*provider.Error, bool)
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
	// Cap is the most requests in one wave (the run's concurrency): a
	// call past it parks without a request, and goes out in a later wave.
	Cap int
	// SpoolDir is where a wave's requests wait for it, in a file (the
	// system's temporary directory when empty).
	SpoolDir string
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

// Batcher is a provider that answers calls from the run's journal, and
// parks the others for the next wave.
type Batcher struct {
	c Config

	mu    sync.Mutex
	waves int
	stats Stats
	// replay holds, by request key, the failures a batch collected for
	// this process gave requests an earlier process sent (stored by an
	// earlier budge, which kept them with the batch): each is given once
	// to the session asking that request, as its attempt's outcome.
	replay map[[32]byte][]*provider.Error
	// The wave being gathered: its spool (written through w), the parts
	// it splits into, its requests, and where each session parked (next,
	// by plan index; last is the pass before).
	spool      *os.File
	w          *bufio.Writer
	at         int64
	parts      []part
	spooled    int
	spoolErr   error
	next, last []row
}

// row is where a session parked: its call and attempt (point) and its
// incarnation.
type row struct {
	at  uint32
	inc uint32
}

// part is a batch's requests in the spool: bytes [off, end), n requests
// of about size bytes.
type part struct {
	off, end int64
	n        int
	size     int64
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
	return &Batcher{c: c, replay: map[[32]byte][]*provider.Error{}}
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
		// Its requests, read now: the batch is looked for by them, stored
		// again with them and collected against them.
		if r.Requests, err = b.c.Ledger.Requests(ctx, r.Token); err != nil {
			return err
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
		n, err := b.collect(ctx, &r, true)
		if err != nil {
			return err
		}
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

// lookup is what Find may know of a batch being submitted: the ids of
// the run's stored batches are not it.
func (b *Batcher) lookup(ctx context.Context, r Record) Lookup {
	known := map[string]bool{}
	if recs, err := b.c.Ledger.Batches(ctx); err == nil {
		for _, o := range recs {
			if o.ID != "" {
				known[o.ID] = true
			}
		}
	}
	return lookup(r, known)
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

// Chat answers a call from the journal: a result an earlier wave gave
// it, answer or failure. Any other call is written to the next wave's
// spool (past Cap, left for a later wave) and parks: it returns
// runner.ErrParked, and the session runs again after the wave.
func (b *Batcher) Chat(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, &provider.Error{Kind: provider.Canceled, Err: err}
	}
	key := b.c.Journal.Key(ctx, req)
	c, _ := provider.CallOf(ctx)
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
	// A call up to where the session parked was answered by a wave of
	// this process: it is no call the journal saved.
	again := c.Seq >= 0 && c.Seq < len(b.last) && b.last[c.Seq].at != 0 && point(c.Turn, c.Attempt) <= b.last[c.Seq].at
	b.mu.Unlock()
	if e, ok := b.c.Journal.Failure(failKey(key, c.Attempt)); ok {
		return nil, e
	}
	if again {
		if resp, ok := b.c.Journal.Answer(key); ok {
			return resp, nil
		}
	} else if resp, ok := b.c.Journal.Lookup(key); ok {
		return resp, nil
	}
	if c.Turn >= 1<<20 || c.Attempt >= 1<<12 || c.Seq < 0 {
		return nil, &provider.Error{Kind: provider.BadRequest, Msg: fmt.Sprintf("batch: call %d, attempt %d of session %d is past what a batch run follows", c.Turn, c.Attempt, c.Seq)}
	}
	body, err := b.c.API.Encode(req)
	if err != nil {
		return nil, &provider.Error{Kind: provider.BadRequest, Msg: err.Error()}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.spooled < b.c.Cap {
		if err := b.add(customID(b.c.RunID, ctx), key, body); err != nil {
			return nil, &provider.Error{Kind: provider.Canceled, Msg: "batch: writing the wave's requests: " + err.Error()}
		}
	}
	for len(b.next) <= c.Seq {
		b.next = append(b.next, row{})
	}
	b.next[c.Seq] = row{at: point(c.Turn, c.Attempt), inc: uint32(c.Incarnation)}
	return nil, runner.ErrParked
}

// point packs a call and attempt, in their order.
func point(call, attempt int) uint32 { return uint32(call)<<12 | uint32(attempt) }

// Parked says where session seq (its plan index) parked in the pass
// before the last wave (for the runner, runner.Job.Parked), as which
// incarnation.
func (b *Batcher) Parked(seq int) (at runner.Point, incarnation int, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if seq < 0 || seq >= len(b.last) || b.last[seq].at == 0 {
		return runner.Point{}, 0, false
	}
	r := b.last[seq]
	return runner.Point{Call: int(r.at >> 12), Attempt: int(r.at & (1<<12 - 1))}, int(r.inc), true
}

// failKey is the journal key of a request's failed attempt.
func failKey(key [32]byte, attempt int) [32]byte {
	return sha256.Sum256(append(append(key[:], "failed attempt "...), strconv.Itoa(attempt)...))
}

// attemptOf reads the attempt from a custom id (customID).
func attemptOf(id string) int {
	parts := strings.Split(id, "-")
	if len(parts) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimPrefix(parts[len(parts)-2], "a"))
	return n
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

// add writes a request to the wave's spool and places it in a part:
// parts are cut at the provider's number of requests and a margin below
// its bytes. b.mu is held.
func (b *Batcher) add(id string, key [32]byte, body []byte) error {
	if b.spoolErr != nil {
		return b.spoolErr
	}
	if b.spool == nil {
		f, err := os.CreateTemp(b.c.SpoolDir, "wave-*.spool")
		if err != nil {
			b.spoolErr = err
			return err
		}
		b.spool, b.w, b.at = f, bufio.NewWriterSize(f, 1<<16), 0
	}
	var rec []byte
	rec = binary.AppendUvarint(rec, uint64(len(id)))
	rec = append(rec, id...)
	rec = append(rec, key[:]...)
	rec = binary.AppendUvarint(rec, uint64(len(body)))
	if _, err := b.w.Write(rec); err != nil {
		b.spoolErr = err
		return err
	}
	if _, err := b.w.Write(body); err != nil {
		b.spoolErr = err
		return err
	}
	n := int64(len(rec) + len(body))
	size := int64(len(body) + len(id) + 100)
	l := b.c.API.Limits()
	limit := int64(float64(l.Bytes) * margin)
	if k := len(b.parts); k == 0 || l.Requests > 0 && b.parts[k-1].n >= l.Requests || l.Bytes > 0 && b.parts[k-1].size+size > limit {
		b.parts = append(b.parts, part{off: b.at, end: b.at})
	}
	p := &b.parts[len(b.parts)-1]
	p.end += n
	p.n++
	p.size += size
	b.at += n
	b.spooled++
	return nil
}

// spooled is one request read back from the spool.
type spooled struct {
	id   string
	key  [32]byte
	body []byte
	off  int64 // where its record starts
}

// readSpool reads the requests of bytes [off, end) of the spool, with
// their bodies or without.
func readSpool(f *os.File, off, end int64, bodies bool, fn func(spooled) error) error {
	r := bufio.NewReaderSize(io.NewSectionReader(f, off, end-off), 1<<16)
	at := off
	for at < end {
		var s spooled
		s.off = at
		n, err := binary.ReadUvarint(r)
		if err != nil {
			return fmt.Errorf("batch: reading the wave's spool: %w", err)
		}
		id := make([]byte, n)
		if _, err := io.ReadFull(r, id); err != nil {
			return fmt.Errorf("batch: reading the wave's spool: %w", err)
		}
		if _, err := io.ReadFull(r, s.key[:]); err != nil {
			return fmt.Errorf("batch: reading the wave's spool: %w", err)
		}
		m, err := binary.ReadUvarint(r)
		if err != nil {
			return fmt.Errorf("batch: reading the wave's spool: %w", err)
		}
		if bodies {
			s.body = make([]byte, m)
			_, err = io.ReadFull(r, s.body)
		} else {
			_, err = r.Discard(int(m))
		}
		if err != nil {
			return fmt.Errorf("batch: reading the wave's spool: %w", err)
		}
		s.id = string(id)
		at += int64(uvarintLen(n)+len(id)+32+uvarintLen(m)) + int64(m)
		if err := fn(s); err != nil {
			return err
		}
	}
	return nil
}

func uvarintLen(n uint64) int {
	var buf [binary.MaxVarintLen64]byte
	return binary.PutUvarint(buf[:], n)
}

// spoolRequests are the n requests of bytes [off, end) of the spool.
type spoolRequests struct {
	f        *os.File
	off, end int64
	n        int
}

func (r spoolRequests) Len() int { return r.n }

func (r spoolRequests) Each(fn func(Request) error) error {
	return readSpool(r.f, r.off, r.end, true, func(s spooled) error {
		return fn(Request{CustomID: s.id, Body: s.body})
	})
}

// Waiting says how many calls the pass parked with a request in the
// wave.
func (b *Batcher) Waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.spooled
}

// sent is a submitted batch of a wave: its record (its requests dropped
// while it is waited for) and its requests' bytes in the spool.
type sent struct {
	r        Record
	off, end int64
}

// Wave ends a pass: it sends the calls the pass parked as one wave (split
// into batches within the provider's limits; each batch's requests are
// read from the spool one batch at a time), waits for every batch to end,
// writes each result into the journal (answers, and failed attempts under
// their request and attempt), and deletes what the batches left at the
// provider. It returns false when no call was parked: the run is done.
// A cancelled ctx cancels the wave's open batches at the provider; the
// error is then ctx's, and a resume collects them.
func (b *Batcher) Wave(ctx context.Context) (bool, error) {
	b.mu.Lock()
	f, parts, n, werr := b.spool, b.parts, b.spooled, b.spoolErr
	if werr == nil && b.w != nil {
		werr = b.w.Flush()
	}
	b.spool, b.w, b.at, b.parts, b.spooled, b.spoolErr = nil, nil, 0, nil, 0, nil
	b.last, b.next = b.next, b.last[:0]
	if n > 0 {
		b.waves++
		b.stats.Waves++
	}
	wave := b.waves
	b.mu.Unlock()
	if f != nil {
		defer os.Remove(f.Name())
		defer f.Close()
	}
	if werr != nil {
		return false, fmt.Errorf("batch: writing the wave's requests: %w", werr)
	}
	if n == 0 {
		return false, nil
	}
	b.note(Event{Wave: wave, Batches: len(parts), Requests: n, Window: b.c.API.Window()})
	var out []sent
	cancelOpen := func(from int) {
		// Cancelling the run cancels its open batches. A cancelled batch
		// stays to be collected: the requests it finished are paid for,
		// and a resume reads them into the journal.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		for i := from; i < len(out); i++ {
			r := out[i].r
			if b.c.API.Cancel(cctx, r.ID) == nil {
				r.Requests = nil
				if err := readSpool(f, out[i].off, out[i].end, false, func(s spooled) error {
					r.Requests = append(r.Requests, Entry{CustomID: s.id, Key: hex.EncodeToString(s.key[:])})
					return nil
				}); err == nil {
					r.State = Cancelled
					b.c.Ledger.PutBatch(cctx, r)
				}
			}
		}
	}
	for _, p := range parts {
		more, err := b.submitPart(ctx, wave, spoolRequests{f, p.off, p.end, p.n})
		out = append(out, more...)
		if err != nil {
			if ctx.Err() != nil {
				cancelOpen(0)
			}
			return false, err
		}
	}
	// The whole wave is with the provider: its bodies and the garbage of
	// building them are returned to the system while it waits.
	debug.FreeOSMemory()
	for i := range out {
		s := &out[i]
		r := s.r
		if err := readSpool(f, s.off, s.end, false, func(q spooled) error {
			r.Requests = append(r.Requests, Entry{CustomID: q.id, Key: hex.EncodeToString(q.key[:])})
			return nil
		}); err != nil {
			return false, err
		}
		_, err := b.collect(ctx, &r, false)
		if err != nil {
			if ctx.Err() != nil {
				if r.State == Submitted {
					out[i].r = r
					cancelOpen(i)
				} else {
					cancelOpen(i + 1)
				}
				return false, err
			}
			var pe *provider.Error
			if !errors.As(err, &pe) || pe.Kind == provider.Canceled {
				// The journal or the store failed, or the results stay
				// unread: the run stops, and a resume collects them.
				return false, err
			}
			// The provider answered for this batch with an error that is
			// no outage (no such batch): its requests without an answer
			// fail with it.
			for _, e := range r.Requests {
				var key [32]byte
				if _, herr := hex.Decode(key[:], []byte(e.Key)); herr != nil {
					continue
				}
				if _, ok := b.c.Journal.Answer(key); !ok {
					if kerr := b.c.Journal.KeepFailure(failKey(key, attemptOf(e.CustomID)), pe); kerr != nil {
						return false, kerr
					}
				}
			}
		}
	}
	return true, nil
}

// submitPart stores and submits one batch of requests, and returns it;
// a batch refused for its size goes out in two halves instead, each split
// again if need be. Requests whose batch could not be submitted for good
// fail with the reason, in the journal.
func (b *Batcher) submitPart(ctx context.Context, wave int, reqs spoolRequests) ([]sent, error) {
	tok := make([]byte, 12)
	rand.Read(tok)
	r := Record{Token: "budge-" + hex.EncodeToString(tok), Style: b.c.API.Style(), Wave: wave, State: Submitting, Submitted: time.Now().UTC()}
	r.Requests = make([]Entry, 0, reqs.n)
	seen := make(map[string]bool, reqs.n)
	half := reqs.end // where the second half starts
	if err := readSpool(reqs.f, reqs.off, reqs.end, false, func(q spooled) error {
		if seen[q.id] {
			// Two calls of one attempt cannot be: a runner fault.
			return fmt.Errorf("batch: two calls share the request id %s", q.id)
		}
		seen[q.id] = true
		if len(r.Requests) == reqs.n/2 {
			half = q.off
		}
		r.Requests = append(r.Requests, Entry{CustomID: q.id, Key: hex.EncodeToString(q.key[:])})
		return nil
	}); err != nil {
		return nil, err
	}
	seen = nil
	if err := b.c.Ledger.PutBatch(ctx, r); err != nil {
		return nil, err
	}
	id, err := b.submit(ctx, &r, reqs)
	if err != nil && errors.Is(err, ErrTooLarge) && reqs.n > 1 && ctx.Err() == nil {
		// Refused for its size (an estimate below the limit can still
		// be over it): the halves go out instead.
		r.State, r.Reason = Split, provider.Classify(ctx, err).Error()
		if err := b.c.Ledger.PutBatch(context.WithoutCancel(ctx), r); err != nil {
			return nil, err
		}
		b.count(func(s *Stats) { s.Split++ })
		b.note(Event{Wave: wave, Note: fmt.Sprintf("a batch of %d requests was refused for its size (%s); sending it in two halves", reqs.n, r.Reason)})
		out, err := b.submitPart(ctx, wave, spoolRequests{reqs.f, reqs.off, half, reqs.n / 2})
		if err != nil {
			return out, err
		}
		more, err := b.submitPart(ctx, wave, spoolRequests{reqs.f, half, reqs.end, reqs.n - reqs.n/2})
		return append(out, more...), err
	}
	if err != nil && ctx.Err() != nil {
		// Interrupted, and the provider does not have it: it stays
		// stored as submitting, and a resume looks for it again before
		// its requests go out.
		return nil, err
	}
	if err != nil {
		r.State = Lost
		pe := provider.Classify(ctx, err)
		r.Reason = pe.Error()
		b.c.Ledger.PutBatch(context.WithoutCancel(ctx), r)
		// Not submitted, for good: each request fails with the reason,
		// as its attempt's outcome.
		for _, e := range r.Requests {
			var key [32]byte
			if _, herr := hex.Decode(key[:], []byte(e.Key)); herr != nil {
				continue
			}
			if err := b.c.Journal.KeepFailure(failKey(key, attemptOf(e.CustomID)), pe); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}
	r.ID, r.State = id, Submitted
	// Stored even when the run was interrupted meanwhile: the wave then
	// cancels it at the provider.
	if err := b.c.Ledger.PutBatch(context.WithoutCancel(ctx), r); err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.stats.Batches++
	b.stats.Requests += reqs.n
	b.mu.Unlock()
	// The requests stay in the spool: the wait does not hold them.
	r.Requests = nil
	return []sent{{r: r, off: reqs.off, end: reqs.end}}, nil
}

// submit sends a batch, trying again after failures that say nothing
// about the batch (the endpoint down, a rate limit) for up to ten
// minutes: an outage is not an observation of the model. Before each new
// try it looks for the batch at the provider: a create whose answer was
// lost may have been taken. So it does once when ctx is cancelled with a
// create in flight (an interrupt), with a context of its own: a batch the
// provider took is returned, for the wave to cancel.
func (b *Batcher) submit(ctx context.Context, r *Record, reqs Requests) (string, error) {
	wait := time.Second
	deadline := time.Now().Add(10 * time.Minute)
	for {
		id, err := b.c.API.Submit(ctx, r.Token, reqs)
		if err == nil {
			return id, nil
		}
		pe := provider.Classify(ctx, err)
		interrupted := ctx.Err() != nil
		if !interrupted && (!pe.Kind.Infrastructure() || time.Now().After(deadline)) {
			return "", err
		}
		fctx := ctx
		if interrupted {
			var cancel context.CancelFunc
			fctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
		}
		if found, ferr := b.c.API.Find(fctx, b.lookup(fctx, *r)); ferr == nil && found != "" {
			r.Found = true
			b.count(func(s *Stats) { s.Found++ })
			b.note(Event{Wave: r.Wave, Note: fmt.Sprintf("submitting a batch failed (%v), and the provider has it: batch %s", pe, found)})
			return found, nil
		}
		if interrupted {
			return "", err
		}
		b.note(Event{Note: fmt.Sprintf("submitting a batch failed (%v); trying again in %s", pe, wait)})
		if err := b.c.Sleep(ctx, wait); err != nil {
			return "", err
		}
		wait = min(2*wait, time.Minute)
	}
}

// collect waits for a batch to end and reads its results into the
// journal: each answer under its request, each failure under its request
// and attempt, for the sessions that run again after the wave (later:
// for a later process's, when a request the batch never ran, expired or
// cancelled with it, is left out: it is simply asked again). A results
// download that fails or is cut off is read again, skipping what was
// read, for up to ReadFor: the batch is never sent again while its
// results may still be read. Requests the batch gave no result fail as
// transient errors, to be tried again. It returns the answers kept.
func (b *Batcher) collect(ctx context.Context, r *Record, later bool) (int, error) {
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
		return 0, b.failed(ctx, r, later, st)
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
		var key [32]byte
		if _, err := hex.Decode(key[:], []byte(k)); err != nil {
			return nil
		}
		if res.Err != nil {
			if later && res.Unrun {
				return nil
			}
			if err := b.keepFailure(r, key, res.CustomID, res.Err, later); err != nil {
				keepErr = err
				return err
			}
			return nil
		}
		if err := b.c.Journal.Keep(key, res.Response, true); err != nil {
			keepErr = fmt.Errorf("batch: keeping an answer of batch %s in the journal: %w", r.ID, err)
			return keepErr
		}
		kept++
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
	if !later {
		for _, id := range ids {
			var key [32]byte
			if _, err := hex.Decode(key[:], []byte(keyOf[id])); err != nil {
				continue
			}
			if err := b.keepFailure(r, key, id, &provider.Error{Kind: provider.Transient, Msg: why}, false); err != nil {
				return kept, err
			}
		}
	}
	if missing > 0 {
		b.count(func(s *Stats) { s.Missing += missing })
	}
	r.State, r.Kept = Collected, kept
	return kept, b.done(ctx, r)
}

// failed ends a batch that failed as a whole: no request of it ran. Its
// reason is stored and given to every call as the call's failure, of the
// kind the provider's error says (a refused file, a token limit): the
// requests are not sent again blindly.

// keepFailure writes a request's failed attempt (its custom id says which
// attempt) to the journal.
func (b *Batcher) keepFailure(r *Record, key [32]byte, customID string, e *provider.Error, later bool) error {
	f := *e
	if later && r.ID != "" {
		f.Msg += " (in batch " + r.ID + ", collected for this process)"
	}
	if err := b.c.Journal.KeepFailure(failKey(key, attemptOf(customID)), &f); err != nil {
		return fmt.Errorf("batch: keeping a failed request of batch %s in the journal: %w", r.ID, err)
	}
	return nil
}

// failed ends a batch that failed as a whole: no request of it ran. Its
// reason is stored, and each request fails with it, of the kind the
// provider's error says (a refused file, a token limit): the requests are
// not sent again blindly.
func (b *Batcher) failed(ctx context.Context, r *Record, later bool, st Status) error {
	r.Reason, r.Failed = st.Failure.Error(), true
	b.count(func(s *Stats) {
		s.Failed++
		s.Reasons = append(s.Reasons, fmt.Sprintf("batch %s: %s", r.ID, r.Reason))
	})
	b.note(Event{Wave: r.Wave, Note: fmt.Sprintf("batch %s failed: %s", r.ID, r.Reason)})
	for _, e := range r.Requests {
		var key [32]byte
		if _, err := hex.Decode(key[:], []byte(e.Key)); err != nil {
			continue
		}
		if err := b.keepFailure(r, key, e.CustomID, st.Failure, later); err != nil {
			return err
		}
	}
	r.State = Collected
	return b.done(ctx, r)
}

// done stores a collected batch, then deletes what it left at the
// provider unless the files are kept.
func (b *Batcher) done(ctx context.Context, r *Record) error {
	ctx = context.WithoutCancel(ctx)
	if err := b.c.Ledger.PutBatch(ctx, collected(*r)); err != nil {
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
	return b.c.Ledger.PutBatch(ctx, collected(*r))
}

// collected is a collected batch as stored: its requests counted, not
// listed.
func collected(r Record) Record {
	r.Count, r.Requests = r.Len(), nil
	return r
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

// ErrBatchUnsupported is returned for a model whose provider has no batch
// API budge speaks.
var ErrBatchUnsupported = errors.New("this model's provider has no batch API budge can use")
