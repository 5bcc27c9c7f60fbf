package batch_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/provider/anthropic"
	"github.com/buildlab/budge/provider/batch"
	"github.com/buildlab/budge/provider/openai"
	"github.com/buildlab/budge/provider/sim"
	"github.com/buildlab/budge/runner"
	"github.com/buildlab/budge/testkit/providertest"
)

// ledger and journal are the store's and the journal's parts, in memory.
type ledger struct {
	mu   sync.Mutex
	recs map[string]batch.Record
	ord  []string
}

func (l *ledger) Batches(context.Context) ([]batch.Record, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []batch.Record
	for _, t := range l.ord {
		r := l.recs[t]
		if r.Requests != nil { // as batch.Ledger says: counted, not returned
			r.Count, r.Requests = len(r.Requests), nil
		}
		out = append(out, r)
	}
	return out, nil
}

func (l *ledger) Requests(_ context.Context, token string) ([]batch.Entry, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.recs[token]
	if !ok {
		return nil, fmt.Errorf("no batch %s", token)
	}
	return r.Requests, nil
}

func (l *ledger) PutBatch(_ context.Context, r batch.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.recs[r.Token]; !ok {
		l.ord = append(l.ord, r.Token)
	}
	l.recs[r.Token] = r
	return nil
}

type journal struct {
	mu    sync.Mutex
	m     map[[32]byte]*chat.Response
	fails map[[32]byte]*provider.Error
}

func (j *journal) Key(_ context.Context, req *chat.Request) [32]byte {
	b, _ := json.Marshal(req)
	return sha256.Sum256(b)
}

func (j *journal) Lookup(k [32]byte) (*chat.Response, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	r, ok := j.m[k]
	return r, ok
}

func (j *journal) Answer(k [32]byte) (*chat.Response, bool) { return j.Lookup(k) }

func (j *journal) Keep(k [32]byte, r *chat.Response, _ bool) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.m[k] = r
	return nil
}

func (j *journal) KeepFailure(k [32]byte, e *provider.Error) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.fails[k] = e
	return nil
}

func (j *journal) Failure(k [32]byte) (*provider.Error, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	e, ok := j.fails[k]
	return e, ok
}

type rig struct {
	srv *sim.Server
	log *providertest.RequestLog
	api batch.API
	led *ledger
	jr  *journal
	dir string
}

func newRig(t *testing.T, style string, o sim.BatchOptions) *rig {
	t.Helper()
	srv, hs, log := providertest.SimServer(t, sim.ServerOptions{Batch: o})
	var api batch.API
	if style == "anthropic" {
		p, err := anthropic.New(anthropic.Config{Model: "sim", BaseURL: hs.URL, APIKey: "test-key"})
		if err != nil {
			t.Fatal(err)
		}
		api = p.BatchAPI()
	} else {
		p, err := openai.New(openai.Config{Name: "openai-compatible", Model: "sim", BaseURL: hs.URL + "/v1", APIKey: "test-key"})
		if err != nil {
			t.Fatal(err)
		}
		api = p.BatchAPI()
	}
	return &rig{dir: t.TempDir(), srv: srv, log: log, api: api, led: &ledger{recs: map[string]batch.Record{}}, jr: &journal{m: map[[32]byte]*chat.Response{}, fails: map[[32]byte]*provider.Error{}}}
}

func (r *rig) batcher(notes *[]string) *batch.Batcher {
	var mu sync.Mutex
	return batch.New(batch.Config{RunID: "run1", API: r.api, Ledger: r.led, Journal: r.jr, Cap: 1000, Poll: 5 * time.Millisecond, SpoolDir: r.dir,
		ReadFor: 10 * time.Second,
		Notify: func(e batch.Event) {
			mu.Lock()
			if notes != nil {
				*notes = append(*notes, e.Note)
			}
			mu.Unlock()
		}})
}

// answered counts the server's answers per request body: every request
// paid is in its log once per time it was run.
func (r *rig) answered() (total, most int) {
	seen := map[string]int{}
	for _, e := range r.log.Entries() {
		if strings.HasPrefix(e.Fault, "batch") {
			seen[e.BodySHA]++
			total++
			most = max(most, seen[e.BodySHA])
		}
	}
	return total, most
}

func request(i int) *chat.Request {
	return &chat.Request{Model: "sim", Messages: []chat.Message{{Role: chat.User, Content: fmt.Sprintf("Question %d: is %d even? Answer briefly.", i, i)}}}
}

// wave runs n sessions of one call each through b, as a batch run's
// passes do: the first pass parks every call, the wave is sent, and the
// second pass finds each call's result; attempt is the attempt number
// their calls carry.
func wave(ctx context.Context, b *batch.Batcher, n, attempt int) []error {
	errs := make([]error, n)
	pass := func() {
		for i := 0; i < n; i++ {
			cctx := provider.WithCall(ctx, provider.Call{Session: fmt.Sprint(i), Seq: i, Turn: 1, Attempt: attempt, Incarnation: 1})
			_, errs[i] = b.Chat(cctx, request(i))
		}
	}
	pass()
	for i, err := range errs {
		if !errors.Is(err, runner.ErrParked) {
			errs[i] = fmt.Errorf("first pass: %v, want the call parked", err)
			return errs
		}
	}
	if b.Waiting() != n {
		errs[0] = fmt.Errorf("%d calls waiting for the wave, want %d", b.Waiting(), n)
		return errs
	}
	if sent, err := b.Wave(ctx); err != nil || !sent {
		for i := range errs {
			errs[i] = fmt.Errorf("wave: sent %v, %v", sent, err)
		}
		return errs
	}
	pass()
	if sent, err := b.Wave(ctx); err != nil || sent {
		errs[0] = fmt.Errorf("a second wave: sent %v, %v", sent, err)
	}
	return errs
}

const sessions = 40

// Every batch conformance scenario pays each request at most once and
// answers every session as a direct run would, in both styles.
func TestBatchPaysOnce(t *testing.T) {
	for _, style := range []string{"openai", "anthropic"} {
		for _, tc := range []struct {
			name    string
			o       sim.BatchOptions
			batches int
			check   func(t *testing.T, r *rig, st batch.Stats, notes []string)
		}{
			{"downloads fail then are cut off", sim.BatchOptions{FailDownloads: 2, CutDownloads: 2}, 1, func(t *testing.T, r *rig, st batch.Stats, _ []string) {
				if st.Rereads < 4 {
					t.Errorf("%d rereads, want at least 4", st.Rereads)
				}
			}},
			{"create answer lost", sim.BatchOptions{LoseCreate: []int{1}}, 1, nil},
			{"oversized refused and split", sim.BatchOptions{MaxBytes: 4000}, 0, func(t *testing.T, r *rig, st batch.Stats, _ []string) {
				if st.Split == 0 {
					t.Errorf("no split: %+v", st)
				}
			}},
			{"results only at results_url", sim.BatchOptions{MoveResults: style == "anthropic"}, 1, nil},
		} {
			t.Run(style+"/"+tc.name, func(t *testing.T) {
				r := newRig(t, style, tc.o)
				var notes []string
				b := r.batcher(&notes)
				if err := b.Start(context.Background()); err != nil {
					t.Fatal(err)
				}
				for i, err := range wave(context.Background(), b, sessions, 1) {
					if err != nil {
						t.Errorf("session %d: %v", i, err)
					}
				}
				total, most := r.answered()
				if total != sessions || most != 1 {
					t.Errorf("%d requests paid for %d sessions (one paid %d times)", total, sessions, most)
				}
				if n := r.srv.BatchCounts()[style]; tc.batches > 0 && n != tc.batches {
					t.Errorf("%d batches at the server, want %d", n, tc.batches)
				}
				st := b.Stats()
				if r.srv.Deleted() == 0 || st.Cleaned == 0 {
					t.Errorf("nothing deleted after collection (%d at the server)", r.srv.Deleted())
				}
				if tc.check != nil {
					tc.check(t, r, st, notes)
				}
				// The server's shutdown summary tallies the same batches.
				if n := r.srv.BatchCounts()[style]; !strings.Contains(r.srv.Summary(), fmt.Sprintf("batches by style: %s %d;", style, n)) ||
					!strings.Contains(r.srv.Summary(), fmt.Sprintf("deleted: %d", r.srv.Deleted())) {
					t.Errorf("summary %q does not tally %d %s batches and %d deletions", r.srv.Summary(), n, style, r.srv.Deleted())
				}
				t.Logf("%d paid for %d sessions; %d batches; stats %+v", total, sessions, r.srv.BatchCounts()[style], st)
			})
		}
	}
}

// A batch that fails as a whole (errors.data, token limit) gives every
// session its reason, of a kind not retried, and is not sent again; the
// reason is stored with the batch.
func TestBatchFailedReasonKept(t *testing.T) {
	r := newRig(t, "openai", sim.BatchOptions{Fail: []int{1}})
	b := r.batcher(nil)
	b.Start(context.Background())
	for i, err := range wave(context.Background(), b, sessions, 1) {
		var pe *provider.Error
		if !errors.As(err, &pe) || pe.Kind != provider.QuotaExceeded || pe.Kind.Infrastructure() || !strings.Contains(pe.Msg, "token_limit_exceeded") {
			t.Fatalf("session %d: %v", i, err)
		}
	}
	recs, _ := r.led.Batches(context.Background())
	if len(recs) != 1 || !strings.Contains(recs[0].Reason, "token_limit_exceeded") {
		t.Errorf("stored batches %+v", recs)
	}
	if st := b.Stats(); st.Failed != 1 || len(st.Reasons) != 1 {
		t.Errorf("stats %+v", st)
	}
	if n := r.srv.BatchCounts()["openai"]; n != 1 {
		t.Errorf("%d batches sent", n)
	}
}

// An interrupt cancels the open batch; the requests it finished are read
// by the next process and not paid again.
func TestCancelledBatchCollected(t *testing.T) {
	for _, style := range []string{"openai", "anthropic"} {
		t.Run(style, func(t *testing.T) {
			r := newRig(t, style, sim.BatchOptions{Delay: time.Hour, CancelDone: 0.5})
			b := r.batcher(nil)
			ctx, cancel := context.WithCancel(context.Background())
			b.Start(ctx)
			go func() {
				for r.srv.BatchCounts()[style] == 0 {
					time.Sleep(5 * time.Millisecond)
				}
				time.Sleep(20 * time.Millisecond)
				cancel()
			}()
			wave(ctx, b, sessions, 1)
			recs, _ := r.led.Batches(context.Background())
			if len(recs) != 1 || recs[0].State != batch.Cancelled {
				t.Fatalf("stored %+v", recs)
			}
			b2 := r.batcher(nil)
			if err := b2.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			if st := b2.Stats(); st.Recovered != sessions/2 {
				t.Errorf("recovered %d answers of the cancelled batch, want %d", st.Recovered, sessions/2)
			}
			// The finished half is in the journal: sessions asking again
			// are answered there, not sent.
			held := 0
			for i := 0; i < sessions; i++ {
				if _, ok := r.jr.Lookup(r.jr.Key(context.Background(), request(i))); ok {
					held++
				}
			}
			if held != sessions/2 {
				t.Errorf("%d answers in the journal, want %d", held, sessions/2)
			}
			if total, most := r.answered(); total != sessions/2 || most != 1 {
				t.Errorf("%d requests paid before the cancel, want %d (one %d times)", total, sessions/2, most)
			}
		})
	}
}

// A wave holds at most Cap requests: the calls past it park without a
// request and go out in later waves, each paid once.
func TestWaveCap(t *testing.T) {
	r := newRig(t, "openai", sim.BatchOptions{})
	b := batch.New(batch.Config{RunID: "run1", API: r.api, Ledger: r.led, Journal: r.jr, Cap: 15, Poll: 5 * time.Millisecond, SpoolDir: r.dir})
	ctx := context.Background()
	if err := b.Start(ctx); err != nil {
		t.Fatal(err)
	}
	answered := map[int]bool{}
	for w := 1; len(answered) < sessions; w++ {
		if w > 10 {
			t.Fatal("the waves do not end")
		}
		for i := 0; i < sessions; i++ {
			cctx := provider.WithCall(ctx, provider.Call{Session: fmt.Sprint(i), Seq: i, Turn: 1, Attempt: 1, Incarnation: 1})
			_, err := b.Chat(cctx, request(i))
			switch {
			case err == nil:
				answered[i] = true
			case !errors.Is(err, runner.ErrParked):
				t.Fatalf("session %d: %v", i, err)
			}
		}
		if n := b.Waiting(); n > 15 {
			t.Fatalf("%d requests in a wave of at most 15", n)
		}
		if _, err := b.Wave(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if total, most := r.answered(); total != sessions || most != 1 {
		t.Errorf("%d requests paid for %d sessions (one paid %d times)", total, sessions, most)
	}
	if st := b.Stats(); st.Waves != 3 || st.Requests != sessions {
		t.Errorf("stats %+v: want 3 waves of %d requests in all", st, sessions)
	}
}

// limited is an API whose batches are bounded lower than the provider's.
type limited struct {
	batch.API
	l batch.Limits
}

func (l limited) Limits() batch.Limits { return l.l }

// A wave larger than the provider's limits goes out as several batches,
// each within them: by requests (OpenAI's 50,000, Anthropic's 100,000) and
// by bytes (200 MB and 256 MB), here lowered to a wave's scale. The server
// refuses a batch over its byte limit, so none is refused and split.
func TestWaveSplitWithinLimits(t *testing.T) {
	for _, style := range []string{"openai", "anthropic"} {
		for _, tc := range []struct {
			name    string
			l       batch.Limits
			max     int64 // the server's byte limit
			batches int
		}{
			{"requests", batch.Limits{Requests: 7, Bytes: 1 << 30}, 0, 6}, // 40 requests: 7 * 5 + 5
			{"bytes", batch.Limits{Requests: 50_000, Bytes: 3000}, 3000, 0},
		} {
			t.Run(style+"/"+tc.name, func(t *testing.T) {
				r := newRig(t, style, sim.BatchOptions{MaxBytes: tc.max})
				r.api = limited{r.api, tc.l}
				b := r.batcher(nil)
				if err := b.Start(context.Background()); err != nil {
					t.Fatal(err)
				}
				for i, err := range wave(context.Background(), b, sessions, 1) {
					if err != nil {
						t.Errorf("session %d: %v", i, err)
					}
				}
				recs, _ := r.led.Batches(context.Background())
				n := 0
				for _, rec := range recs {
					if rec.State == batch.Split {
						t.Errorf("batch %s was refused for its size and split: %s", rec.ID, rec.Reason)
						continue
					}
					n++
					if rec.Len() > tc.l.Requests || rec.Len() == 0 {
						t.Errorf("batch %s holds %d requests, over the limit of %d", rec.ID, rec.Len(), tc.l.Requests)
					}
					if rec.State == batch.Collected && rec.Requests != nil {
						t.Errorf("collected batch %s stored with its %d requests listed", rec.ID, len(rec.Requests))
					}
				}
				if tc.batches > 0 && n != tc.batches {
					t.Errorf("%d batches, want %d", n, tc.batches)
				}
				if n < 2 {
					t.Errorf("%d batch(es): the wave was not split", n)
				}
				if got := r.srv.BatchCounts()[style]; got != n {
					t.Errorf("%d batches at the server, %d stored", got, n)
				}
				if total, most := r.answered(); total != sessions || most != 1 {
					t.Errorf("%d requests paid for %d sessions (one paid %d times)", total, sessions, most)
				}
			})
		}
	}
}

// interruptedCreate is a batch API whose create reaches the provider
// while the run is interrupted: the batch is taken, and its answer lost.
type interruptedCreate struct {
	batch.API
	cancel context.CancelFunc
}

func (a interruptedCreate) Submit(ctx context.Context, token string, reqs batch.Requests) (string, error) {
	if _, err := a.API.Submit(context.WithoutCancel(ctx), token, reqs); err != nil {
		return "", err
	}
	a.cancel()
	return "", ctx.Err()
}

// An interrupt that lands while a batch is being created still cancels
// it at the provider: the batch is looked for by its token and stored
// as cancelled, not left running to be paid for.
func TestInterruptDuringCreateCancels(t *testing.T) {
	for _, style := range []string{"openai", "anthropic"} {
		t.Run(style, func(t *testing.T) {
			r := newRig(t, style, sim.BatchOptions{Delay: time.Hour})
			ctx, cancel := context.WithCancel(context.Background())
			r.api = interruptedCreate{API: r.api, cancel: cancel}
			b := r.batcher(nil)
			errs := wave(ctx, b, sessions, 1)
			if !strings.Contains(fmt.Sprint(errs[0]), "cancel") {
				t.Errorf("wave: %v, want the interrupt", errs[0])
			}
			if got := r.srv.BatchStates(); got["cancelled"] != 1 || got["in_progress"] != 0 {
				t.Errorf("batches at the provider: %v, want the one created cancelled", got)
			}
			recs, _ := r.led.Batches(context.Background())
			if len(recs) != 1 || recs[0].State != batch.Cancelled || recs[0].ID == "" {
				var got []string
				for _, rec := range recs {
					got = append(got, fmt.Sprintf("%s id %q", rec.State, rec.ID))
				}
				t.Errorf("stored batches %v, want one cancelled batch with its id", got)
			}
		})
	}
}
