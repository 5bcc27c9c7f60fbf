package study

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/provider/endpoint"
	"github.com/buildlab/budge/runner"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study/stack"
)

// protocol is one protocol's run as the lifecycle sees it. The adapters
// (pressureRun, framingRun) hold the run's manifest and its snapshot and
// build everything else from them.
type protocol interface {
	// head is the manifest's common part, which the lifecycle fills in.
	head() *Header
	// manifest is the whole manifest, as stored.
	manifest() any
	// snapshot is what the run stores beside its sessions (the deck, or the
	// items and design): a short name, where it came from, its hash and
	// its bytes.
	snapshot() (name, source, hash string, content []byte)
	// ids are the planned session ids in canonical order.
	ids() []string
	// order is the schedule: plan indexes in the order a run starts them.
	order() []int
	// job is the runner job of the session at plan index i, at schedule
	// position pos, run as incarnation inc.
	job(i, pos, inc int) runner.Job
	// open opens the run's model with the caller's endpoint options.
	open(eo endpoint.Options) (provider.Provider, error)
	// fingerprint hashes what identifies what was measured.
	fingerprint() string
	// scorer scores the stored sessions one at a time, in plan order.
	scorer() sessionScorer
	// replayed is a new run of the same plan answered by rp.
	replayed(rp provider.Provider, c Control) (Plan, error)
}

// sessionScorer turns a run's sessions into its result one session at a
// time, so that no more than one batch of transcripts is ever in memory.
type sessionScorer interface {
	// add scores the session at plan position i; se is nil for a planned
	// session that was never stored.
	add(i int, se *store.Session)
	// done is the result, once every position has been added.
	done(run store.Run) Result
}

// scoring is the part of a session scorer both protocols share: each
// session is scored by score, added to the tally (when there is one) and
// handed to each (when set); an error from each stops the scoring and is
// kept in err. It keeps neither the transcripts nor the scored sessions. O
// is the protocol's scored session, PT its tally.
type scoring[O, T any, PT interface {
	*T
	Add(*O)
}] struct {
	score func(i int, se *store.Session) (O, string)
	tally PT
	each  func(i int, o *O, trace string) error
	err   error // each's, which stops the scoring
}

func (sc *scoring[O, T, PT]) add(i int, se *store.Session) {
	if sc.err != nil {
		return
	}
	o, trace := sc.score(i, se)
	if sc.tally != nil {
		sc.tally.Add(&o)
	}
	if sc.each != nil {
		sc.err = sc.each(i, &o, trace)
	}
}

func (sc *scoring[O, T, PT]) failed() error { return sc.err }

// projector is a protocol that can estimate what its sessions will cost;
// --max-cost needs one.
type projector interface {
	// project estimates the cost of the sessions todo accepts (by plan
	// position).
	project(todo func(i int) bool, price endpoint.Price) Projection
}

// positions are the plan positions below n that todo accepts: positions,
// not specs, so a projection of a large run stays small.
func positions(n int, todo func(i int) bool) []int {
	var at []int
	for i := range n {
		if todo(i) {
			at = append(at, i)
		}
	}
	return at
}

// projection asks p for the projected cost of the sessions todo accepts.
func projection(p protocol, todo func(i int) bool, price endpoint.Price) (Projection, error) {
	pr, ok := p.(projector)
	if !ok {
		return Projection{}, fmt.Errorf("%w: --max-cost: a %s run cannot project its cost", ErrInvalid, p.head().Protocol)
	}
	return pr.project(todo, price), nil
}

// checker is a protocol that refuses some providers for a resume.
type checker interface {
	check(info provider.Info) error
}

// loaded is a protocol with more to read from the store once scored (the
// pressure deck's freeze state).
type loaded interface {
	afterScore(ctx context.Context, st *store.Store, res Result) error
}

// asker is a protocol that may be unable to ask its questions again (an
// imported run, a prompt the store lacks).
type asker interface {
	canAsk() error
}

// Plan is what a new run is made from: PressureOptions or FramingOptions.
type Plan interface {
	// control is the caller's side of the run.
	control() Control
	// prepare checks the plan, opens its model and builds the run's
	// protocol with a fresh manifest.
	prepare(ctx context.Context, st *store.Store) (protocol, provider.Provider, error)
}

// protocols are the stored runs budge can read back, by protocol name: the
// one place a protocol's name decides anything.
var protocols = map[string]struct {
	// load reads a stored run's protocol from its row and its snapshot.
	load func(run store.Run, source string, snapshot []byte) (protocol, error)
	kind Kind
}{
	"pressure": {loadPressure, Kind{Deck: true}},
	"framing":  {loadFraming, Kind{}},
	"judge":    {loadJudge, Kind{}},
}

// Kind is what a viewer needs to know of a stored run's protocol.
type Kind struct {
	// Deck says the run's snapshot is a pressure deck: its sessions have
	// cases, identity assignments and scored outcomes, and it can be
	// reviewed. Otherwise its sessions are items judged under conditions.
	Deck bool
}

// KindOf is the kind of a stored run.
func KindOf(run store.Run) Kind { return protocols[run.Protocol].kind }

// openAs opens run ref as open does and checks that it is a run of the
// protocol P, named name in the error when it is not.
func openAs[P protocol](ctx context.Context, st *store.Store, ref, name string) (store.Run, P, error) {
	var zero P
	run, p, err := open(ctx, st, ref)
	if err != nil {
		return run, zero, err
	}
	pp, ok := p.(P)
	if !ok {
		return run, zero, fmt.Errorf("%w: run %s is a %s run, not a %s run", ErrInvalid, run.ID, run.Protocol, name)
	}
	return run, pp, nil
}

// open reads a stored run and its protocol.
func open(ctx context.Context, st *store.Store, ref string) (store.Run, protocol, error) {
	id, err := st.Resolve(ctx, ref)
	if err != nil {
		return store.Run{}, nil, err
	}
	run, err := st.GetRun(ctx, id)
	if err != nil {
		return run, nil, err
	}
	proto, ok := protocols[run.Protocol]
	if !ok {
		return run, nil, fmt.Errorf("%w: run %s has protocol %q, which this budge does not know", ErrInvalid, id, run.Protocol)
	}
	src, content, err := st.Deck(ctx, run.DeckHash)
	if err != nil {
		return run, nil, err
	}
	p, err := proto.load(run, src, content)
	return run, p, err
}

// openAskable is open for a run whose questions are to be asked again.
func openAskable(ctx context.Context, st *store.Store, ref string) (store.Run, protocol, error) {
	run, p, err := open(ctx, st, ref)
	if err != nil {
		return run, nil, err
	}
	if a, ok := p.(asker); ok {
		if err := a.canAsk(); err != nil {
			return run, nil, err
		}
	}
	return run, p, nil
}

// readManifest decodes a stored run's manifest into m.
func readManifest(run store.Run, m any) error {
	if err := json.Unmarshal(run.Manifest, m); err != nil {
		return fmt.Errorf("run %s: stored manifest is unreadable: %w", run.ID, err)
	}
	return nil
}

// readStored decodes a stored run's manifest into m and its JSON snapshot
// (content) into snap; what names the snapshot's contents in an error.
func readStored(run store.Run, m any, content []byte, snap any, what string) error {
	if err := readManifest(run, m); err != nil {
		return err
	}
	if err := json.Unmarshal(content, snap); err != nil {
		return fmt.Errorf("run %s: stored %s are unreadable: %w", run.ID, what, err)
	}
	return nil
}

// spec is a planned session of any protocol.
type spec interface{ ID() string }

// idsOf lists the ids of specs, in order.
func idsOf[S spec](specs []S) []string {
	ids := make([]string, len(specs))
	for i, s := range specs {
		ids[i] = s.ID()
	}
	return ids
}

// newJob is the runner job of spec s at plan index i and schedule
// position pos, as incarnation inc: it sends the seed seedOf derives from
// the run's, and session makes its conversation.
func newJob[S spec](s S, i, pos, inc int, h *Header, seedOf func(run uint64, id string) int64,
	session func(s S, settings chat.Settings) (runner.Conversation, error)) runner.Job {
	specJSON, _ := json.Marshal(s)
	settings := h.Settings
	seed := seedOf(h.Seed, s.ID())
	settings.Seed = &seed
	return runner.Job{ID: s.ID(), Seq: i, SchedulePos: pos, Incarnation: inc, Spec: specJSON,
		New: func() (runner.Conversation, error) { return session(s, settings) }}
}

// Load reads a run of any protocol back from the store and scores it from
// the stored transcripts and the stored snapshot. Planned sessions with no
// stored result are scored as missing.
func Load(ctx context.Context, st *store.Store, ref string) (Result, error) {
	run, p, err := open(ctx, st, ref)
	if err != nil {
		return nil, err
	}
	return loadWith(ctx, st, run, p)
}

// loadWith scores a stored run whose protocol is already read.
func loadWith(ctx context.Context, st *store.Store, run store.Run, p protocol) (Result, error) {
	sc, err := scoreStored(ctx, st, p)
	if err != nil {
		return nil, err
	}
	res := sc.done(run)
	return res, afterScore(ctx, st, p, res)
}

// afterScore lets a protocol read what else it keeps in the store for a
// scored result (the pressure deck's freeze state).
func afterScore(ctx context.Context, st *store.Store, p protocol, res Result) error {
	if l, ok := p.(loaded); ok {
		return l.afterScore(ctx, st, res)
	}
	return nil
}

// Replay runs a recorded run's sessions again as a new run, answered from
// the recorded responses with zero network calls: the same snapshot,
// prompts, model name, settings and seed, so every request matches its
// recording; a parser or report that changed since is applied to the old
// data. c supplies only concurrency, progress and the callbacks.
func Replay(ctx context.Context, st *store.Store, ref string, c Control) (Result, error) {
	run, p, err := openAskable(ctx, st, ref)
	if err != nil {
		return nil, err
	}
	h := p.head()
	rp, format, err := stack.Recorded(ctx, st, run.ID, h.Net.BodyFormat, h.Provider)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if c.Concurrency < 1 {
		c.Concurrency = h.Concurrency
	}
	c.NetOptions, c.Provider = NetOptions{}, rp
	pl, err := p.replayed(rp, c)
	if err != nil {
		return nil, err
	}
	return Start(ctx, st, replayPlan{pl, run.ID, format})
}

// replayPlan marks a plan's run as the replay of another.
type replayPlan struct {
	Plan
	of, format string
}

func (r replayPlan) prepare(ctx context.Context, st *store.Store) (protocol, provider.Provider, error) {
	p, prov, err := r.Plan.prepare(ctx, st)
	if err != nil {
		return nil, nil, err
	}
	h := p.head()
	h.Net.ReplayOf, h.Net.BodyFormat = r.of, r.format
	return p, prov, nil
}

// create stores a new run's row, manifest and snapshot, and leases the run
// to this process: no other process can write it until the lease is
// released.
func create(ctx context.Context, st *store.Store, p protocol, started func(string)) (*store.Lease, error) {
	h := p.head()
	run, source, content := runRow(p)
	lease, err := st.CreateRunLeased(ctx, run, source, content, holder(h))
	if err != nil {
		return nil, err
	}
	if started != nil {
		started(h.RunID)
	}
	return lease, nil
}

// runRow is a new run's row, running, and its snapshot's source and bytes.
func runRow(p protocol) (run store.Run, source string, content []byte) {
	h := p.head()
	name, source, hash, content := p.snapshot()
	seed := fmt.Sprint(h.Seed)
	if h.Provider.Name == importedMarker {
		seed = "imported"
	}
	return store.Run{ID: h.RunID, Protocol: h.Protocol, Created: h.Created, Status: store.RunRunning,
		DeckName: name, DeckHash: hash, Model: h.Model, Seed: seed, Planned: plannedLen(p), Manifest: manifestJSON(p.manifest())}, source, content
}

// holder names this process as the writer of a run.
func holder(h *Header) store.Holder { return store.ThisProcess("budge " + h.Protocol + " run") }

// holding is ctx, cancelled as well when the lease is lost (another
// process took the run over), so this one stops calling and writing.
func holding(ctx context.Context, lease *store.Lease) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.WithValue(ctx, leaseKey{}, lease))
	go func() {
		select {
		case <-lease.Lost():
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// leaseKey holds, in a context, the run lease the process holds (holding).
type leaseKey struct{}

// fence is what the runner asks before every call (runner.Config.Fence):
// that the process still holds the run's lease, when it runs under one,
// and, when sink is a worker, the session's cell as the job's
// incarnation. A process paused past its lease finds out there, before it
// pays for a session another process has taken over.
func fence(ctx context.Context, sink runner.Sink) func(context.Context, runner.Job) error {
	lease, _ := ctx.Value(leaseKey{}).(*store.Lease)
	w, _ := sink.(*store.Worker)
	if lease == nil && w == nil {
		return nil
	}
	return func(ctx context.Context, j runner.Job) error {
		if lease != nil {
			if err := lease.Check(ctx); err != nil {
				return err
			}
		}
		if w != nil {
			return w.Holds(ctx, j.ID, j.Seq, j.Incarnation)
		}
		return nil
	}
}

// execute runs jobs through the stack into sink, logging every attempt.
func execute(ctx context.Context, st *store.Store, c Control, p protocol, s *stack.Stack, sink runner.Sink, n int, jobs iter.Seq[runner.Job]) (runner.Stats, error) {
	h := p.head()
	// A worker on a shared store logs each batch in the transaction that
	// stores it; any other run appends to its log as it goes.
	var log *store.Log
	var logger runner.Logger
	if l, ok := sink.(interface{ Logs() bool }); !ok || !l.Logs() {
		var err error
		if log, err = st.OpenLog(h.RunID); err != nil {
			return runner.Stats{}, err
		}
		logger = log
	}
	drain := c.Drain
	if drain == nil {
		drain = context.Background()
	}
	stats, runErr := runPasses(ctx, drain, s.Config(runner.Config{RunID: h.RunID, Concurrency: c.Concurrency, Retry: h.Retry,
		JitterSeed: h.Seed, Progress: c.Progress, Log: logger, OutageWait: c.OutageWait, RateLimitWait: c.RateLimitWait, Notice: c.Notice,
		Fence: fence(ctx, sink), Stored: c.stored}), p, s, sink, n, jobs)
	if log != nil {
		if err := log.Close(); err != nil && runErr == nil {
			runErr = err
		}
	}
	if s.Batch != nil && runErr == nil {
		runErr = recordBatch(context.WithoutCancel(ctx), st, &h.Net, h.RunID, s)
	}
	if runErr != nil {
		// The sessions the store committed are whole; mark the run
		// interrupted (best effort: a full disk may refuse this too) so it
		// is never left running, and say how to continue.
		h.Status = store.RunInterrupted
		markErr := st.FinishRun(context.WithoutCancel(ctx), h.RunID, store.RunInterrupted, manifestJSON(p.manifest()))
		err := fmt.Errorf("run %s: storing results failed: %w; the run is marked interrupted: free the space or fix the cause, then continue it with --resume %s", h.RunID, runErr, h.RunID)
		if markErr != nil {
			err = fmt.Errorf("%w (marking it interrupted failed too: %v)", err, markErr)
		}
		return stats, err
	}
	return stats, nil
}

// finish scores a run from its stored sessions, sets its final status and
// stores the scored manifest.
func finish(ctx context.Context, st *store.Store, p protocol, run store.Run, e *early) (Result, error) {
	h := p.head()
	sc, err := scoreRun(ctx, st, p, e)
	if err != nil {
		return nil, err
	}
	h.Status = finalStatus(h.Counts)
	run.Status = h.Status
	if err := st.FinishRun(ctx, h.RunID, h.Status, manifestJSON(p.manifest())); err != nil {
		return nil, err
	}
	if h.Status == store.RunComplete {
		// Every session is stored: the journal has nothing left to save.
		if err := os.RemoveAll(journalDir(st, h.RunID)); err != nil {
			return nil, err
		}
	}
	res := sc.done(run)
	return res, afterScore(ctx, st, p, res)
}

// scoreBatch is how many sessions' transcripts scoring reads at once.
const scoreBatch = 512

// scoreStored streams the run's stored sessions through the protocol's
// scorer, in plan order and a batch at a time, and fills the header's
// bookkeeping on the way (tally): memory holds one batch of transcripts,
// not the run. The scorer is returned for done.
func scoreStored(ctx context.Context, st *store.Store, p protocol) (sessionScorer, error) {
	return scoreThrough(ctx, st, p, p.scorer())
}

// indexed is a protocol whose planned session ids can be read by position,
// without all of them in memory.
type indexed interface {
	planLen() int
	idAt(i int) string
}

// plannedIDs are how many sessions p plans and the id at each position.
func plannedIDs(p protocol) (int, func(i int) string) {
	if x, ok := p.(indexed); ok {
		return x.planLen(), x.idAt
	}
	ids := p.ids()
	return len(ids), func(i int) string { return ids[i] }
}

// plannedLen is how many sessions p plans.
func plannedLen(p protocol) int {
	n, _ := plannedIDs(p)
	return n
}

// failer is a scorer that can stop the scoring: failed is its error.
type failer interface{ failed() error }

// inPlan scores a run's sessions in plan order: the one path both the
// scoring from the store (scoreThrough) and the scoring as sessions are
// stored (early) feed their sessions through.
type inPlan struct {
	sc      sessionScorer
	t       *tallied
	planned int
	idAt    func(i int) string
	next    int // the plan position scored next
}

func newInPlan(p protocol, sc sessionScorer) *inPlan {
	c := &inPlan{sc: sc, t: newTally()}
	c.planned, c.idAt = plannedIDs(p)
	return c
}

// fits says se may be scored next: it is at or after the next plan
// position, inside the plan, with the id the plan gives that position.
func (c *inPlan) fits(se *store.Session) bool {
	return se.Seq >= c.next && se.Seq < c.planned && c.idAt(se.Seq) == se.ID
}

// score scores se at its plan position, after the positions before it
// that no session was stored at.
func (c *inPlan) score(se *store.Session) {
	c.skipTo(se.Seq)
	c.t.add(se)
	c.sc.add(c.next, se)
	c.next++
}

// skipTo scores the positions before seq as missing.
func (c *inPlan) skipTo(seq int) {
	for ; c.next < seq; c.next++ {
		c.sc.add(c.next, nil)
		c.t.missing++
	}
}

// scoreThrough is scoreStored through the scorer sc.
func scoreThrough(ctx context.Context, st *store.Store, p protocol, sc sessionScorer) (sessionScorer, error) {
	h := p.head()
	c := newInPlan(p, sc)
	score := func(batch []store.Session) error {
		for i := range batch {
			se := &batch[i]
			if !c.fits(se) {
				return fmt.Errorf("run %s: stored session %q is at plan position %d, which the run's plan does not give it", h.RunID, se.ID, se.Seq)
			}
			c.score(se)
		}
		return stopped(sc)
	}
	// The store reads the next batch while this one is scored, in order:
	// reading was nearly half of the time scoring took, and with the two
	// overlapped on separate cores a run's end comes that much sooner.
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	batches := make(chan []store.Session, 1)
	scored := make(chan error, 1)
	go func() {
		var err error
		for batch := range batches {
			if err == nil {
				if err = score(batch); err != nil {
					cancel()
				}
			}
		}
		scored <- err
	}()
	err := st.EachSessions(rctx, h.RunID, scoreBatch, func(batch []store.Session) error {
		select {
		case batches <- batch:
			return nil
		case <-rctx.Done():
			return rctx.Err()
		}
	})
	close(batches)
	if serr := <-scored; serr != nil {
		return nil, serr
	}
	if err != nil {
		return nil, err
	}
	c.skipTo(c.planned)
	return settle(ctx, st, p, sc, c.t)
}

// settle completes the header once every planned position is scored into
// sc and tallied into t: the orphaned attempts, the counts, the cost and
// the fingerprint.
func settle(ctx context.Context, st *store.Store, p protocol, sc sessionScorer, t *tallied) (sessionScorer, error) {
	if err := stopped(sc); err != nil {
		return nil, err
	}
	// The attempts of sessions never stored count once every session is
	// scored: read last, so the first sessions are scored (and a viewer
	// shows them) without waiting for a read of every attempt.
	h := p.head()
	orphans, err := st.Orphans(ctx, h.RunID)
	if err != nil {
		return nil, err
	}
	t.finish(h, orphans, plannedLen(p))
	h.Net.CostUSD = nil
	if h.Net.Price != nil {
		cost := h.Net.Price.Cost(h.Counts.InputTokens, h.Counts.OutputTokens)
		h.Net.CostUSD = &cost
	}
	h.Fingerprint = p.fingerprint()
	return sc, nil
}

// stopped is the error that stopped sc, if it can stop.
func stopped(sc sessionScorer) error {
	if f, ok := sc.(failer); ok {
		return f.failed()
	}
	return nil
}

// tallied is the header's bookkeeping, summed a session at a time:
// sessions, attempts, retries and tokens, failed attempts by kind, and the
// model ids and fingerprints the provider reported.
type tallied struct {
	c            Counts
	missing      int
	failedByKind map[string]int
	models, fps  map[string]bool
}

func newTally() *tallied {
	return &tallied{models: map[string]bool{}, fps: map[string]bool{}}
}

func (t *tallied) failed(kind string) {
	if t.failedByKind == nil {
		t.failedByKind = map[string]int{}
	}
	t.failedByKind[kind]++
}

func (t *tallied) add(se *store.Session) {
	c := &t.c
	switch se.Status {
	case store.SessionComplete:
		c.Complete++
	case store.SessionFailed:
		c.Failed++
	}
	c.InputTokens += se.InputTokens
	c.OutputTokens += se.OutputTokens
	for _, a := range se.Attempts {
		c.Attempts++
		if a.Outcome != "ok" {
			c.FailedAttempts++
			t.failed(a.ErrorKind)
		}
		if a.Attempt > 1 {
			c.Retries++
		}
		if a.ModelID != "" {
			t.models[a.ModelID] = true
		}
		if a.Fingerprint != "" {
			t.fps[a.Fingerprint] = true
		}
	}
}

// finish writes the tally into the header. The attempts of a session that
// was interrupted and never stored (orphans, by session id) all count as
// failed: even an answered call produced no observation of the session.
// Each is broken down by its kind, an answered one as
// "interrupted_session", so the kinds add up to the failed attempts.
func (t *tallied) finish(h *Header, orphans map[string][]store.Attempt, planned int) {
	c := &t.c
	for _, atts := range orphans {
		c.Interrupted++
		for _, a := range atts {
			c.Attempts++
			c.FailedAttempts++
			kind := a.ErrorKind
			if a.Outcome == "ok" || kind == "" {
				kind = "interrupted_session"
			}
			t.failed(kind)
		}
	}
	c.Planned, c.Missing = planned, t.missing
	h.Counts = *c
	h.Net.FailedByKind = t.failedByKind
	h.Reported = Reported{ModelIDs: slices.Sorted(maps.Keys(t.models)), Fingerprints: slices.Sorted(maps.Keys(t.fps))}
}

// journalDir is where a run keeps its journal of answers (stack.Options).
// On a PostgreSQL store it is in this machine's local cache (Store.Dir): a
// resume on this machine pays for no answered call again, and a resume on
// another machine, which has no journal, asks for those calls once more.
func journalDir(st *store.Store, runID string) string {
	return filepath.Join(st.RunDir(runID), "journal")
}

// maxOutput is the most output tokens one call can produce, for the cost
// limit's worst case.
func maxOutput(s chat.Settings) int {
	if s.MaxTokens > 0 {
		return s.MaxTokens
	}
	return 4096
}

// record notes what the run's layers saw.
func record(n *NetInfo, s *stack.Stack, stats runner.Stats) {
	n.StoppedBy = stats.StoppedBy
	if s.Cache != nil && n.Cache != nil {
		n.Cache.Hits, n.Cache.Misses = s.Cache.Counts()
	}
	if s.Adapt != nil {
		n.Adaptive = &AdaptInfo{Lowest: stats.LowestConcurrency, Cuts: stats.ConcurrencyCuts}
	}
	if s.Journal != nil {
		hits, _ := s.Journal.Counts()
		n.JournalHits += hits
	}
	if stats.Outages > 0 {
		n.Outages = append(n.Outages, Outage{Started: stats.OutageStarted.UTC(), Count: stats.Outages, Total: stats.OutageTime, Stopped: stats.StoppedBy == "outage"})
	}
	n.RateLimitWaits += stats.RateLimitWaits
	n.PaceWaits += stats.PaceWaits
}

// baseURLOf reads the base URL a provider recorded in its detail.
func baseURLOf(info provider.Info) string {
	var d struct {
		BaseURL string `json:"base_url"`
	}
	if json.Unmarshal([]byte(info.Detail), &d) == nil {
		return d.BaseURL
	}
	return ""
}
