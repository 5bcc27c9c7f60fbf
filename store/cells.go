package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// A run that several workers advance together (on a shared PostgreSQL
// store; SQLite works too, for workers on one machine) keeps one row per
// planned session, its cell: open, claimed by one worker while that worker
// lives, or done. A worker claims a few open cells at a time with
// SELECT ... FOR UPDATE SKIP LOCKED, so two workers never wait for or take
// the same cell; the lease of the cells it holds is its own heartbeat (its
// run_workers row), so renewing it writes one row however many cells the
// worker holds (a batch run holds every waiting session's); it marks a
// cell done in the transaction that stores its session, and only while it
// still holds it. A worker that dies stops renewing; once its heartbeat is
// older than the lease timeout (or it left) its cells are claimed again,
// each as the session's next incarnation, the worker is marked as gone
// (left_at) in the same transaction, and the takeover is stored as an
// interrupted attempt of the incarnation that was lost. Every cell is
// stored exactly once. (The cells' lease_until column, which earlier
// versions renewed cell by cell, is written at a claim and no longer
// read.)

// Cell states.
const (
	CellOpen    = "open"
	CellClaimed = "claimed"
	CellDone    = "done"
)

// PlannedCell is a cell to add: a planned session, at its plan position
// and its schedule position, with the incarnations earlier runs of it left
// (0 for none).
type PlannedCell struct {
	ID       string
	Seq, Pos int
	Claims   int
}

// AddCells adds cells to a run, open; cells it has already are kept as
// they are, so adding the same plan twice changes nothing.
func (s *Store) AddCells(ctx context.Context, runID string, cells iter.Seq[PlannedCell]) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.fail(err)
	}
	defer tx.Rollback()
	if err := s.addCells(ctx, tx, runID, cells); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return s.named(fmt.Errorf("store: commit: %w", err))
	}
	s.refreshStats(ctx, "cells")
	return nil
}

// addCells inserts cells a thousand rows at a time, so a run of millions
// of cells is never in memory at once.
func (s *Store) addCells(ctx context.Context, tx *txn, runID string, cells iter.Seq[PlannedCell]) error {
	const rows = 16 * chunkRows
	b, n := cellBulk(), 0
	for c := range cells {
		b.add(runID, c.ID, c.Seq, c.Pos, CellOpen, "", "", 0, c.Claims, "")
		if n++; n == rows {
			if err := s.execBulk(ctx, tx, b); err != nil {
				return err
			}
			b, n = cellBulk(), 0
		}
	}
	return s.execBulk(ctx, tx, b)
}

func cellBulk() *bulk {
	return newBulk("cells", "ON CONFLICT DO NOTHING", "run_id", "session_id", "seq", "pos", "state", "token", "holder", "lease_until", "claims", "lost_holder")
}

// CreateRunCells stores a new run and its cells in one transaction: a run
// that workers advance (Join) instead of one process holding its lease.
func (s *Store) CreateRunCells(ctx context.Context, r Run, deckSource string, deck []byte, cells iter.Seq[PlannedCell]) error {
	if err := s.createRun(ctx, r, deckSource, deck, func(tx *txn) error { return s.addCells(ctx, tx, r.ID, cells) }); err != nil {
		return err
	}
	s.refreshStats(ctx, "cells")
	return nil
}

// Shared says whether the store is a database server that several
// machines share (PostgreSQL): its runs are advanced by workers.
func (s *Store) Shared() bool { return s.db.d.postgres() }

// HasCells says whether a run is advanced by workers (has cells).
func (s *Store) HasCells(ctx context.Context, runID string) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM cells WHERE run_id = $1 LIMIT 1) c`, runID).Scan(&n)
	if err != nil {
		return false, s.fail(err)
	}
	return n > 0, nil
}

// CellCounts is how many of a run's cells are in each state; Expired are
// claimed cells whose worker's lease has run out (it stopped, or left).
type CellCounts struct {
	Open, Claimed, Done, Expired int
}

// Left is how many cells are not done.
func (c CellCounts) Left() int { return c.Open + c.Claimed }

// Waiting says whether the worker has anything to wait for from others:
// cells open, or claimed by another worker. Cells it holds itself are in
// its own hands.
func (w *Worker) Waiting(ctx context.Context) (bool, error) {
	var n int
	err := w.s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT 1 FROM cells WHERE run_id = $1 AND (state = $2 OR (state = $3 AND token <> $4)) LIMIT 1) c`,
		w.runID, CellOpen, CellClaimed, w.token).Scan(&n)
	return n > 0, w.s.fail(err)
}

// Cells counts a run's cells by state.
func (s *Store) Cells(ctx context.Context, runID string) (CellCounts, error) {
	now, err := s.leaseNow(ctx, s.db)
	if err != nil {
		return CellCounts{}, err
	}
	var c CellCounts
	rows, err := s.db.QueryContext(ctx, `SELECT state, COUNT(*), SUM(CASE WHEN state = $3 AND NOT EXISTS (
		SELECT 1 FROM run_workers w WHERE w.run_id = c.run_id AND w.token = c.token AND w.left_at = '' AND w.heartbeat >= $1) THEN 1 ELSE 0 END)
		FROM cells c WHERE run_id = $2 GROUP BY state`,
		now.Add(-s.leaseTimeout()).UnixMilli(), runID, CellClaimed)
	if err != nil {
		return c, s.fail(err)
	}
	defer rows.Close()
	for rows.Next() {
		var state string
		var n, expired int
		if err := rows.Scan(&state, &n, &expired); err != nil {
			return c, s.fail(err)
		}
		switch state {
		case CellOpen:
			c.Open = n
		case CellClaimed:
			c.Claimed, c.Expired = n, expired
		case CellDone:
			c.Done = n
		}
	}
	return c, s.fail(rows.Err())
}

// Worker is one process advancing a run's cells: it holds the cells it
// claimed while its heartbeat lives.
type Worker struct {
	s      *Store
	runID  string
	token  string
	holder Holder

	heart *heartbeat
	mu    sync.Mutex
	err   error // the last heartbeat's failure

	// beating serializes what moves the worker's heartbeat (renewals and
	// claims) and the fence's generations with it; left is set once the
	// worker stopped or left, after which nothing renews it.
	beating sync.Mutex
	left    bool

	// held is the fence: the cells the worker holds, by plan position
	// (seq), each with the incarnation it claimed and the generation of
	// the fence it was last known held in. The cells of the current
	// generation (gen) are held until until, on this process's monotonic
	// clock, from before the statement that last moved the heartbeat: the
	// database's now is later, so the lease it holds lasts at least as
	// long. A renewal that finds the heartbeat went on unbroken (no other
	// worker took a cell over since) moves until and nothing else; one
	// that finds the worker was taken for gone reads back the cells it
	// still holds into a new generation, and the others are lost. Holds
	// reads it before every call. A batch run holds every unfinished
	// session's cell while it waits for a wave: 8 bytes a planned session
	// (8 MB at a million).
	hmu     sync.Mutex
	held    []heldCell
	gen     uint32
	nextGen uint32 // the last generation handed out, kept or not
	until   time.Time
	fence   sync.Mutex // one renewal at a time for Holds
	checks  int        // renewals Holds made (tests)

	// clean are the dead workers a claim found holding no cell, with
	// the heartbeat and departure they had then: not looked at again while
	// those stay so (a worker claims only as it moves its heartbeat), for
	// a lease timeout at most.
	clean map[string]deadWorker
}

// heldCell is a cell the worker claimed: the incarnation, and the fence's
// generation it is held in; generation 0 is a cell not held.
type heldCell struct {
	incarnation uint32
	gen         uint32
}

// deadWorker is what a claim saw of a dead worker holding no cell.
type deadWorker struct {
	heartbeat int64
	left      string
	checked   time.Time
}

// hold puts cell seq in the fence as incarnation inc, in the current
// generation. w.hmu is held.
func (w *Worker) hold(seq, inc int) {
	if seq < 0 {
		return
	}
	if seq >= len(w.held) {
		w.held = slices.Grow(w.held, seq+1-len(w.held))[:seq+1]
	}
	w.held[seq] = heldCell{uint32(inc), w.gen}
}

// Join registers h as a worker of a run and starts its heartbeat. Leave
// ends it. record is what the caller keeps with the worker (a JSON record
// of what it was asked to do), read back by Workers.
func (s *Store) Join(ctx context.Context, runID string, h Holder, record []byte) (*Worker, error) {
	tok, err := newToken()
	if err != nil {
		return nil, err
	}
	w := &Worker{s: s, runID: runID, token: tok, holder: h, gen: 1, nextGen: 1}
	now, err := s.leaseNow(ctx, s.db)
	if err != nil {
		return nil, err
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO run_workers (run_id, token, holder, host, pid, joined, heartbeat, left_at, record) VALUES ($1, $2, $3, $4, $5, $6, $7, '', $8)`,
		runID, tok, h.Name, h.Host, h.PID, ts(now), now.UnixMilli(), string(record)); err != nil {
		return nil, s.fail(fmt.Errorf("store: run %s: registering a worker: %w", runID, err))
	}
	w.beat()
	return w, nil
}

// Token identifies the worker in the run's cells.
func (w *Worker) Token() string { return w.token }

// beat renews the worker's heartbeat and its cells' lease until Leave,
// keeping the last renewal's failure for Err.
func (w *Worker) beat() {
	w.heart = startHeartbeat(w.s.leaseRenew(), func() bool {
		err := w.renew(context.Background())
		w.mu.Lock()
		w.err = err
		w.mu.Unlock()
		return true
	})
}

// renew moves the worker's heartbeat, the lease of every cell it holds,
// to now: one row written, however many cells it holds. The cells it
// still holds are the fence's until one lease timeout past the moment
// before it asked; when another worker took it for gone meanwhile (a
// paused worker's cells may have been taken over), those are read back
// first.
func (w *Worker) renew(ctx context.Context) error {
	s := w.s
	w.beating.Lock()
	defer w.beating.Unlock()
	if w.left {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.fail(err)
	}
	defer tx.Rollback()
	asked := s.now()
	now, err := s.leaseNow(ctx, tx)
	if err != nil {
		return err
	}
	gen, err := w.beatIn(ctx, tx, now)
	if err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return s.named(fmt.Errorf("store: commit: %w", err))
	}
	w.hmu.Lock()
	w.renewed(asked, gen)
	w.hmu.Unlock()
	return nil
}

// beatIn moves the worker's heartbeat to now in tx, its first write (so
// that on SQLite tx holds the write lock from there on). It returns 0 when
// the heartbeat went on unbroken: the worker was not taken for gone, so
// every cell it held it still holds. Otherwise (another worker found its
// lease run out and took it for gone, taking its cells over) it makes it
// live again and reads the cells it still holds into a new generation of
// the fence, which it returns, for renewed to make current once tx is
// committed. On PostgreSQL a claimer taking the worker's cells over holds
// its row locked (FOR UPDATE) until it commits: the first update waits
// for it, then sees it gone, and the read after it sees the takeover.
// w.beating is held.
func (w *Worker) beatIn(ctx context.Context, tx *txn, now time.Time) (uint32, error) {
	s := w.s
	res, err := tx.ExecContext(ctx, `UPDATE run_workers SET heartbeat = $1 WHERE run_id = $2 AND token = $3 AND left_at = ''`, now.UnixMilli(), w.runID, w.token)
	if err != nil {
		return 0, s.fail(err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		return 0, s.fail(err)
	}
	res, err = tx.ExecContext(ctx, `UPDATE run_workers SET heartbeat = $1, left_at = '' WHERE run_id = $2 AND token = $3`, now.UnixMilli(), w.runID, w.token)
	if err != nil {
		return 0, s.fail(err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return 0, s.fail(cmp.Or(err, fmt.Errorf("store: run %s: worker %s is not registered", w.runID, w.holder)))
	}
	rows, err := tx.QueryContext(ctx, `SELECT seq, claims FROM cells WHERE run_id = $1 AND state = $2 AND token = $3`, w.runID, CellClaimed, w.token)
	if err != nil {
		return 0, s.fail(err)
	}
	defer rows.Close()
	// A generation never handed out before: one that a failed renewal
	// began is not reused.
	w.hmu.Lock()
	w.nextGen++
	gen := w.nextGen
	w.hmu.Unlock()
	for rows.Next() {
		var seq, claims int
		if err := rows.Scan(&seq, &claims); err != nil {
			return 0, s.fail(err)
		}
		// A cell the fence dropped (its session was stored) is not taken
		// up again.
		w.hmu.Lock()
		if seq >= 0 && seq < len(w.held) && w.held[seq].gen != 0 && int(w.held[seq].incarnation) == claims {
			w.held[seq].gen = gen
		}
		w.hmu.Unlock()
	}
	return gen, s.fail(rows.Err())
}

// renewed makes the fence hold its current cells until one lease timeout
// past asked, in generation gen when beatIn began one. w.hmu is held.
func (w *Worker) renewed(asked time.Time, gen uint32) {
	if gen != 0 {
		w.gen = gen
	}
	w.until = asked.Add(w.s.leaseTimeout())
}

// ErrCellLost is matched by the error of Holds for a cell the worker no
// longer holds: its lease ran out (the worker was paused, or could not
// reach the database) and another worker took the cell over, or it was
// given back.
var ErrCellLost = errors.New("the worker no longer holds the session's cell")

// Holds is the fence a worker passes before every call it makes for a
// session (sessionID, at plan position seq): nil while it holds the
// session's cell as incarnation. Within
// the lease the last claim or renewal gave it, it answers from memory;
// past it (the heartbeat stopped: the process was paused, or the database
// was out of reach) it renews at once and answers from what the database
// says, so a paused worker finds out before its next call, not after it.
// A cell another worker took over, or a later incarnation of it, is lost:
// the call is not to be made.
func (w *Worker) Holds(ctx context.Context, sessionID string, seq, incarnation int) error {
	if w.holdsNow(seq, incarnation) {
		return nil
	}
	w.fence.Lock()
	defer w.fence.Unlock()
	if w.holdsNow(seq, incarnation) {
		return nil // another call renewed meanwhile
	}
	w.checks++
	if err := w.renew(ctx); err != nil {
		return fmt.Errorf("store: run %s, session %s: the lease of its cell ran out and renewing it failed, so no call is made: %w", w.runID, sessionID, err)
	}
	if w.holdsNow(seq, incarnation) {
		return nil
	}
	return fmt.Errorf("%w: run %s, session %s (incarnation %d): the lease ran out (this worker stopped renewing it for over %s) and the cell was taken over; no call is made",
		ErrCellLost, w.runID, sessionID, incarnation, w.s.leaseTimeout())
}

// holdsNow says whether the fence knows the cell held, without asking.
func (w *Worker) holdsNow(seq, incarnation int) bool {
	w.hmu.Lock()
	defer w.hmu.Unlock()
	if seq < 0 || seq >= len(w.held) {
		return false
	}
	c := w.held[seq]
	return c.gen == w.gen && int(c.incarnation) == incarnation && w.s.now().Before(w.until)
}

// forget drops every cell from the fence: given back.
func (w *Worker) forget() {
	w.hmu.Lock()
	defer w.hmu.Unlock()
	w.held = nil
}

// forgetCell drops a stored session's cell from the fence, unless the
// worker holds it as another incarnation (the session stored is one that
// lost the cell, which the worker claimed again since): that one still
// runs, and still holds it. A session that carries no incarnation drops
// the cell.
func (w *Worker) forgetCell(seq, incarnation int) {
	w.hmu.Lock()
	defer w.hmu.Unlock()
	if seq >= 0 && seq < len(w.held) && w.held[seq].gen != 0 && (incarnation <= 0 || int(w.held[seq].incarnation) == incarnation) {
		w.held[seq] = heldCell{}
	}
}

// Err is the last heartbeat's failure, if it failed.
func (w *Worker) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Leave stops the heartbeat, gives the cells the worker still holds back
// (open, for another worker to claim at once) and records that it left.
func (w *Worker) Leave(ctx context.Context) error {
	if !w.heart.halt() {
		return nil
	}
	if err := w.Release(ctx); err != nil {
		return err
	}
	w.beating.Lock()
	defer w.beating.Unlock()
	w.left = true
	s := w.s
	_, err := s.db.ExecContext(ctx, `UPDATE run_workers SET left_at = $1 WHERE run_id = $2 AND token = $3`, ts(s.now()), w.runID, w.token)
	return s.fail(err)
}

// Release gives the cells the worker holds back to the run, open.
func (w *Worker) Release(ctx context.Context) error {
	w.forget()
	_, err := w.s.db.ExecContext(ctx, `UPDATE cells SET state = $1, token = '', holder = '', lease_until = 0 WHERE run_id = $2 AND state = $3 AND token = $4`,
		CellOpen, w.runID, CellClaimed, w.token)
	return w.s.fail(err)
}

// Stop gives the cells the worker holds back to the run and says whether
// it was the last live worker: none other has not left and beats within
// the lease timeout. A worker that is not the last is marked as left in the
// same serialized transaction, so of workers that stop at the same moment
// exactly one finds itself last (and goes on to score the run) rather than
// each leaving it to the other.
func (w *Worker) Stop(ctx context.Context) (last bool, err error) {
	marked := false
	s := w.s
	w.forget()
	// Renewals wait: one must not make a worker that stopped live again.
	w.beating.Lock()
	defer w.beating.Unlock()
	err = s.immediate(ctx, func(c *conn) error {
		if _, err := c.ExecContext(ctx, `UPDATE cells SET state = $1, token = '', holder = '', lease_until = 0 WHERE run_id = $2 AND state = $3 AND token = $4`,
			CellOpen, w.runID, CellClaimed, w.token); err != nil {
			return err
		}
		n, err := s.liveWorkersIn(ctx, c, w.runID, w.token)
		if err != nil || n == 0 {
			last = err == nil
			return err
		}
		_, err = c.ExecContext(ctx, `UPDATE run_workers SET left_at = $1 WHERE run_id = $2 AND token = $3`, ts(s.now()), w.runID, w.token)
		marked = err == nil
		return err
	})
	w.left = marked && err == nil
	return last, s.fail(err)
}

// Claimed is a cell a worker claimed: the session, its plan and schedule
// positions and the incarnation to run it as. Lost is set when the cell was
// taken from a worker whose lease ran out: that worker's incarnation was
// interrupted.
type Claimed struct {
	ID          string
	Seq, Pos    int
	Incarnation int
	Lost        *LostClaim
}

// LostClaim is the incarnation a stopped worker left unfinished.
type LostClaim struct {
	Incarnation int
	Holder      string
}

// Claim takes up to n claimable cells of the run in plan order: open ones,
// and claimed ones whose worker's lease has run out (or that left). It is
// one statement: cells another worker is claiming at the same moment are
// skipped, not waited for (PostgreSQL's SKIP LOCKED; SQLite has one writer
// at a time). A cell taken from a stopped worker gets an interrupted
// attempt that records the incarnation it lost. A claim moves the
// worker's own heartbeat too, in the same transaction: the cells it
// claims are held as long as the worker's other cells.
func (w *Worker) Claim(ctx context.Context, n int) ([]Claimed, error) {
	s := w.s
	w.beating.Lock()
	defer w.beating.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, s.fail(err)
	}
	defer tx.Rollback()
	asked := s.now() // before the database's now: the fence's lease ends no later than the stored one
	now, err := s.leaseNow(ctx, tx)
	if err != nil {
		return nil, err
	}
	gen, err := w.beatIn(ctx, tx, now)
	if err != nil {
		return nil, err
	}
	dead, seen, err := w.deadHolders(ctx, tx, now)
	if err != nil {
		return nil, err
	}
	// The cells are picked once, in materialized CTEs: as a subquery of
	// the UPDATE, PostgreSQL may run the pick again for every row it
	// compares, and with SKIP LOCKED each run picks other cells. Open
	// cells and cells of dead workers are picked apart, each the first n
	// in schedule order along the index by state: one condition with OR
	// would read every open cell of the run and sort them, at each claim.
	// The cells of dead workers are looked for only when some dead worker
	// may hold one: the claimed cells of a batch run are all its live
	// worker's, and reading past them at every claim made a claim's cost
	// grow with the run. A lapsed cell of the worker's own is not taken:
	// the worker still runs it (its heartbeat stalled, or its write is
	// under way), and as the next incarnation it would run twice in one
	// process, the first run's calls thrown away. Another worker takes it
	// over.
	lock := s.db.d.skipLocked()
	until := now.Add(s.leaseTimeout()).UnixMilli()
	args := []any{w.runID, CellOpen, n, CellClaimed, w.token, w.holder.String(), until}
	expired := ""
	if len(dead) > 0 {
		var in string
		in, args = inList(dead, args...)
		expired = `,
		expired AS MATERIALIZED (
		SELECT session_id, pos FROM cells WHERE run_id = $1 AND state = $4 AND token IN (` + in + `) ORDER BY pos LIMIT $3` + lock + `)`
	}
	claimable := `SELECT session_id, pos FROM open`
	if expired != "" {
		claimable += ` UNION ALL SELECT session_id, pos FROM expired`
	}
	rows, err := tx.QueryContext(ctx, `WITH open AS MATERIALIZED (
		SELECT session_id, pos FROM cells WHERE run_id = $1 AND state = $2 ORDER BY pos LIMIT $3`+lock+`)`+expired+`,
		picked AS MATERIALIZED (
		SELECT session_id FROM (`+claimable+`) AS claimable ORDER BY pos LIMIT $3)
		UPDATE cells SET lost_holder = CASE WHEN state = $4 THEN holder ELSE '' END,
		state = $4, token = $5, holder = $6, lease_until = $7, claims = claims + 1
		WHERE run_id = $1 AND session_id IN (SELECT session_id FROM picked) RETURNING session_id, seq, pos, claims, lost_holder`,
		args...)
	if err != nil {
		return nil, s.fail(err)
	}
	var out []Claimed
	for rows.Next() {
		var c Claimed
		var lostHolder string
		if err := rows.Scan(&c.ID, &c.Seq, &c.Pos, &c.Incarnation, &lostHolder); err != nil {
			rows.Close()
			return nil, s.fail(err)
		}
		if lostHolder != "" {
			c.Lost = &LostClaim{Incarnation: c.Incarnation - 1, Holder: lostHolder}
		}
		out = append(out, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, s.fail(err)
	}
	slices.SortFunc(out, func(a, b Claimed) int { return a.Pos - b.Pos })
	lost := attemptBulk("ON CONFLICT DO NOTHING")
	var lines []byte
	took := false
	for _, c := range out {
		if c.Lost == nil {
			continue
		}
		took = true
		a := Attempt{Incarnation: c.Lost.Incarnation, Started: now, Outcome: "interrupted", ErrorKind: WorkerLost,
			ErrorMsg: c.Lost.Holder + " stopped renewing its lease on this session; the calls it made in this incarnation were not stored"}
		lost.addAttempt(w.runID, c.Pos, c.ID, a)
		if w.Logs() {
			lines = append(lines, LogLines(w.runID, Session{ID: c.ID, Status: SessionInterrupted, Attempts: []Attempt{a}})...)
		}
	}
	if took {
		// The workers whose cells were taken are gone: one that was only
		// paused finds so at its next renewal (beatIn).
		gone := ts(now)
		in, args := inList(dead, gone, w.runID)
		if _, err := tx.ExecContext(ctx, `UPDATE run_workers SET left_at = $1 WHERE run_id = $2 AND left_at = '' AND token IN (`+in+`)`, args...); err != nil {
			return nil, s.fail(err)
		}
		for _, tok := range dead {
			if d := seen[tok]; d.left == "" {
				d.left = gone
				seen[tok] = d
			}
		}
	}
	if err := s.execBulk(ctx, tx, lost); err != nil {
		return nil, err
	}
	if err := s.logs.appendTx(ctx, tx, w.runID, lines); err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, s.named(fmt.Errorf("store: commit: %w", err))
	}
	if len(out) < n {
		// Every cell of the dead workers was taken: they hold none, and
		// are not looked at again while they stay as they are.
		for _, tok := range dead {
			if w.clean == nil {
				w.clean = map[string]deadWorker{}
			}
			w.clean[tok] = seen[tok]
		}
	}
	w.hmu.Lock()
	w.renewed(asked, gen)
	for _, c := range out {
		w.hold(c.Seq, c.Incarnation)
	}
	w.hmu.Unlock()
	return out, nil
}

// deadHolders lists the run's other workers whose cells a claim may take
// over: those whose heartbeat is older than the lease timeout, or that
// left, less those an earlier claim found holding none and that have not
// changed since (for a lease timeout at most). It returns them and what
// was read of each. On PostgreSQL their rows are locked, checked again,
// until tx ends: a worker coming back to life waits in beatIn, and then
// finds itself taken for gone if its cells were taken.
func (w *Worker) deadHolders(ctx context.Context, tx *txn, now time.Time) ([]string, map[string]deadWorker, error) {
	s := w.s
	since := now.Add(-s.leaseTimeout()).UnixMilli()
	rows, err := tx.QueryContext(ctx, `SELECT token, heartbeat, left_at FROM run_workers WHERE run_id = $1 AND token <> $2 AND (left_at <> '' OR heartbeat < $3)`,
		w.runID, w.token, since)
	if err != nil {
		return nil, nil, s.fail(err)
	}
	var dead []string
	seen := map[string]deadWorker{}
	for rows.Next() {
		var tok string
		d := deadWorker{checked: now}
		if err := rows.Scan(&tok, &d.heartbeat, &d.left); err != nil {
			rows.Close()
			return nil, nil, s.fail(err)
		}
		if c, ok := w.clean[tok]; ok && c.heartbeat == d.heartbeat && c.left == d.left && now.Sub(c.checked) < s.leaseTimeout() {
			continue
		}
		dead = append(dead, tok)
		seen[tok] = d
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(dead) == 0 || !s.db.d.postgres() {
		return dead, seen, s.fail(err)
	}
	in, args := inList(dead, w.runID, since)
	rows, err = tx.QueryContext(ctx, `SELECT token FROM run_workers WHERE run_id = $1 AND token IN (`+in+`) AND (left_at <> '' OR heartbeat < $2) FOR UPDATE`, args...)
	if err != nil {
		return nil, nil, s.fail(err)
	}
	defer rows.Close()
	dead = dead[:0]
	for rows.Next() {
		var tok string
		if err := rows.Scan(&tok); err != nil {
			return nil, nil, s.fail(err)
		}
		dead = append(dead, tok)
	}
	return dead, seen, s.fail(rows.Err())
}

// WorkerLost is the error kind of the interrupted attempt that records an
// incarnation whose worker stopped before storing it.
const WorkerLost = "worker_lost"

// WriteSessions stores sessions of cells the worker holds, in the
// transaction that marks their cells done (an interrupted session's cell
// goes back to open). A session whose cell the worker no longer holds
// (its lease ran out and another worker claimed it) is not stored as the
// cell's result: only its attempts are kept, as an interrupted
// incarnation.
func (w *Worker) WriteSessions(ctx context.Context, runID string, sessions []Session) error {
	if runID != w.runID {
		return fmt.Errorf("store: worker of run %s asked to write sessions of run %s", w.runID, runID)
	}
	// Workers writing at once can still meet in a deadlock PostgreSQL
	// breaks by failing one transaction; nothing of it was stored, and it
	// is tried again.
	var err error
	for try := 0; try < 5; try++ {
		if err = w.s.writeSessions(ctx, runID, sessions, w.guard); err == nil || !isConflict(err) {
			break
		}
	}
	return err
}

// Logs says whether the worker writes the run's log itself: on a shared
// store each batch of sessions is logged in the transaction that stores
// it, so that the log of a run many processes write is never cut or
// interleaved within a session, and a killed worker leaves nothing to
// repair. On SQLite, where one worker at a time holds the run, the run's
// log file is written as by any run.
func (w *Worker) Logs() bool { return w.s.logs.inTx() }

// guard keeps, of sessions, those whose cells the worker holds, and moves
// those cells on: done, or open again for an interrupted session. A
// session whose cell it no longer holds is kept as interrupted: its
// attempts are stored, and its cell is another worker's. It returns the
// log lines of what is stored, when the worker logs (Logs).
func (w *Worker) guard(ctx context.Context, tx *txn, sessions []Session) ([]Session, []byte, error) {
	s := w.s
	var done, reopen []Session
	for _, se := range sessions {
		if se.Status == SessionInterrupted {
			reopen = append(reopen, se)
		} else {
			done = append(done, se)
		}
	}
	// The update comes first, so that on SQLite the transaction holds the
	// write lock before it reads anything. It is the fence: a cell moves
	// on only while this worker holds it as the incarnation the session
	// ran as (a session that carries none is matched by holder alone).
	// A batch may carry two records of one cell (an incarnation that lost
	// it, and the one that holds it now): a record is the cell's result
	// only if the cell was marked done for its own incarnation, and only
	// one record is, so a cell's session is never stored twice, nor a
	// lost incarnation's because a later one matched.
	var finished map[string]int // cells marked done: their incarnation
	for _, set := range []struct {
		sessions []Session
		state    string
	}{{done, CellDone}, {reopen, CellOpen}} {
		if len(set.sessions) == 0 {
			continue
		}
		q, args := w.moveCells(set.sessions, set.state)
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, nil, s.fail(err)
		}
		moved := map[string]int{}
		for rows.Next() {
			var id string
			var claims int
			if err := rows.Scan(&id, &claims); err != nil {
				rows.Close()
				return nil, nil, s.fail(err)
			}
			moved[id] = claims
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, nil, s.fail(err)
		}
		if set.state == CellDone {
			finished = moved
		}
	}
	out := make([]Session, 0, len(sessions))
	var lines []byte
	for _, se := range sessions {
		w.forgetCell(se.Seq, se.Incarnation)
		if claims, ok := finished[se.ID]; ok && se.Status != SessionInterrupted && (se.Incarnation <= 0 || se.Incarnation == claims) {
			delete(finished, se.ID) // its one result
		} else {
			se.Status = SessionInterrupted
		}
		out = append(out, se)
		if w.Logs() {
			lines = append(lines, LogLines(w.runID, se)...)
		}
	}
	return out, lines, nil
}

// moveCells is the update that moves the cells of sessions the worker
// holds to state, returning the ids and claims of those it moved, and its
// arguments.
func (w *Worker) moveCells(sessions []Session, state string) (string, []any) {
	match, args := heldBy(sessions, state, w.runID, w.token, CellClaimed)
	at := ""
	if !w.s.db.d.postgres() {
		// SQLite would read every cell the run has claimed through
		// cells_by_state and test each against match. The sessions'
		// schedule positions (their cells' pos: a worker's sessions are
		// the jobs of the cells it claimed) find them in that index
		// directly, in the part of it the run is working on; their ids
		// would find them through the primary key, whose pages a large
		// run reads at random places.
		at = " AND pos IN (" + placeholders(len(args)+1, len(sessions)) + ")"
		for _, se := range sessions {
			args = append(args, se.SchedulePos)
		}
	}
	return `UPDATE cells SET state = $1, lease_until = 0
			WHERE run_id = $2 AND token = $3 AND state = $4` + at + ` AND (` + match + `) RETURNING session_id, claims`, args
}

// heldBy is the condition matching the cells of sessions, each at the
// incarnation it ran as when it carries one, and its arguments: first the
// leading ones, then the sessions'.
func heldBy(sessions []Session, lead ...any) (string, []any) {
	args := append(make([]any, 0, len(lead)+2*len(sessions)), lead...)
	var ids []string
	var b strings.Builder
	for _, se := range sessions {
		if se.Incarnation <= 0 {
			ids = append(ids, se.ID)
			continue
		}
		if b.Len() > 0 {
			b.WriteString(" OR ")
		}
		b.WriteString("(session_id = " + placeholders(len(args)+1, 1) + " AND claims = " + placeholders(len(args)+2, 1) + ")")
		args = append(args, se.ID, se.Incarnation)
	}
	if len(ids) > 0 {
		if b.Len() > 0 {
			b.WriteString(" OR ")
		}
		b.WriteString("session_id IN (" + placeholders(len(args)+1, len(ids)) + ")")
		for _, id := range ids {
			args = append(args, id)
		}
	}
	return b.String(), args
}

// inList is the placeholders of an IN list of ids, and the arguments:
// first the leading ones, then the ids.
func inList(ids []string, lead ...any) (string, []any) {
	args := append(make([]any, 0, len(lead)+len(ids)), lead...)
	for _, id := range ids {
		args = append(args, id)
	}
	return placeholders(len(lead)+1, len(ids)), args
}

// ErrFinishing is returned by Finisher when another live worker is scoring
// the run.
var ErrFinishing = errors.New("another worker is scoring the run")

// Finisher makes this worker the one that scores the run, once every cell
// is done. It returns false when another worker already is (and is alive);
// a finisher whose heartbeat stopped is replaced.
func (w *Worker) Finisher(ctx context.Context) (bool, error) {
	s := w.s
	mine := false
	err := s.immediate(ctx, func(c *conn) error {
		var tok string
		err := c.QueryRowContext(ctx, `SELECT token FROM run_finisher WHERE run_id = $1`, w.runID).Scan(&tok)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			_, err = c.ExecContext(ctx, `INSERT INTO run_finisher (run_id, token) VALUES ($1, $2)`, w.runID, w.token)
			mine = err == nil
			return err
		case err != nil:
			return err
		case tok == w.token:
			mine = true
			return nil
		}
		now, err := s.leaseNow(ctx, c)
		if err != nil {
			return err
		}
		var beat int64
		var left string
		err = c.QueryRowContext(ctx, `SELECT heartbeat, left_at FROM run_workers WHERE run_id = $1 AND token = $2`, w.runID, tok).Scan(&beat, &left)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if err == nil && left == "" && now.Sub(time.UnixMilli(beat)) < s.leaseTimeout() {
			return nil
		}
		_, err = c.ExecContext(ctx, `UPDATE run_finisher SET token = $1 WHERE run_id = $2`, w.token, w.runID)
		mine = err == nil
		return err
	})
	if mine {
		// Scoring reads what the workers stored since the run began.
		s.refreshStats(ctx, "sessions", "attempts", "messages")
	}
	return mine, s.fail(err)
}

// WorkerInfo is a worker of a run as stored.
type WorkerInfo struct {
	Holder    Holder          `json:"holder"`
	Joined    string          `json:"joined"`
	Heartbeat time.Time       `json:"last_heartbeat"`
	Left      string          `json:"left,omitempty"`
	Record    json.RawMessage `json:"-"` // what Join was given
}

// Workers lists the workers that joined a run, in the order they joined.
func (s *Store) Workers(ctx context.Context, runID string) ([]WorkerInfo, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT holder, host, pid, joined, heartbeat, left_at, record FROM run_workers WHERE run_id = $1 ORDER BY joined, token`, runID)
	if err != nil {
		return nil, s.fail(err)
	}
	defer rows.Close()
	var out []WorkerInfo
	for rows.Next() {
		var wi WorkerInfo
		var beat int64
		var record string
		if err := rows.Scan(&wi.Holder.Name, &wi.Holder.Host, &wi.Holder.PID, &wi.Joined, &beat, &wi.Left, &record); err != nil {
			return nil, s.fail(err)
		}
		if record != "" {
			wi.Record = json.RawMessage(record)
		}
		wi.Heartbeat = time.UnixMilli(beat).UTC()
		out = append(out, wi)
	}
	return out, s.fail(rows.Err())
}

// OpenRuns lists the runs with cells left to do, oldest first.
func (s *Store) OpenRuns(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT c.run_id, r.created FROM cells c JOIN runs r ON r.id = c.run_id WHERE c.state <> $1 ORDER BY r.created, c.run_id`, CellDone)
	if err != nil {
		return nil, s.fail(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, created string
		if err := rows.Scan(&id, &created); err != nil {
			return nil, s.fail(err)
		}
		out = append(out, id)
	}
	return out, s.fail(rows.Err())
}

// ReopenCells opens again the done cells of sessions taken back from the
// store (Unstore), for a worker to run them as their next incarnation.
func (s *Store) ReopenCells(ctx context.Context, runID string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	in, args := inList(ids, CellOpen, runID, CellDone)
	_, err := s.db.ExecContext(ctx, `UPDATE cells SET state = $1, token = '', lease_until = 0 WHERE run_id = $2 AND state = $3 AND session_id IN (`+in+`)`, args...)
	return s.fail(err)
}

// ReopenClaimed opens again the claimed cells of a run whose one writer
// holds its lease (a local store): whoever claimed them is gone. No lost
// incarnation is recorded; each cell's claims are set to the incarnations
// the store has attempts of (incarnations, by session id), so the next
// claim runs the session as the incarnation after them.
func (s *Store) ReopenClaimed(ctx context.Context, runID string, incarnations map[string]int) error {
	rows, err := s.db.QueryContext(ctx, `SELECT session_id FROM cells WHERE run_id = $1 AND state = $2`, runID, CellClaimed)
	if err != nil {
		return s.fail(err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return s.fail(err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return s.fail(err)
	}
	for _, id := range ids {
		if _, err := s.db.ExecContext(ctx, `UPDATE cells SET state = $1, token = '', holder = '', lease_until = 0, lost_holder = '', claims = $2 WHERE run_id = $3 AND session_id = $4`,
			CellOpen, incarnations[id], runID, id); err != nil {
			return s.fail(err)
		}
	}
	return nil
}

// ReleaseDead gives back, at once, the cells held by workers of the run
// that ran on this host and no longer exist (killed, or the machine
// rebooted under a new process): no need to wait for their lease to run
// out. Workers on other hosts are left to their lease. It returns how many
// cells it opened; their lost incarnations are recorded when claimed.
func (s *Store) ReleaseDead(ctx context.Context, runID string) (int, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT token, pid FROM run_workers WHERE run_id = $1 AND host = $2 AND left_at = ''`, runID, hostname())
	if err != nil {
		return 0, s.fail(err)
	}
	var dead []string
	for rows.Next() {
		var tok string
		var pid int
		if err := rows.Scan(&tok, &pid); err != nil {
			rows.Close()
			return 0, s.fail(err)
		}
		if pid > 0 && pid != os.Getpid() && !pidAlive(pid) {
			dead = append(dead, tok)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(dead) == 0 {
		return 0, s.fail(err)
	}
	in, args := inList(dead, runID, CellClaimed)
	res, err := s.db.ExecContext(ctx, `UPDATE cells SET lease_until = 0 WHERE run_id = $1 AND state = $2 AND token IN (`+in+`)`, args...)
	if err != nil {
		return 0, s.fail(err)
	}
	n, _ := res.RowsAffected()
	if _, err := s.db.ExecContext(ctx, `UPDATE run_workers SET left_at = $1 WHERE run_id = $2 AND token IN (`+in+`)`,
		append([]any{ts(s.now()), runID}, args[2:]...)...); err != nil {
		return 0, s.fail(err)
	}
	return int(n), nil
}

// OpenLedger gives a run a shared cost ledger with a limit and what the run
// has spent so far, unless it has one.
func (s *Store) OpenLedger(ctx context.Context, runID string, limit, spent float64) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO run_ledger (run_id, limit_usd, spent_usd) VALUES ($1, $2, $3) ON CONFLICT (run_id) DO NOTHING`, runID, limit, spent)
	return s.fail(err)
}

// SetLedgerLimit changes the limit of a run's cost ledger, keeping what it
// has spent.
func (s *Store) SetLedgerLimit(ctx context.Context, runID string, limit float64) error {
	_, err := s.db.ExecContext(ctx, `UPDATE run_ledger SET limit_usd = $1 WHERE run_id = $2`, limit, runID)
	return s.fail(err)
}

// Ledger reads a run's cost ledger: its limit and what it has spent; ok is
// false for a run without one.
func (s *Store) Ledger(ctx context.Context, runID string) (limit, spent float64, ok bool, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT limit_usd, spent_usd FROM run_ledger WHERE run_id = $1`, runID).Scan(&limit, &spent)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, false, nil
	}
	return limit, spent, err == nil, s.fail(err)
}

// Spend adds delta dollars to a run's ledger and returns what the run has
// spent in all.
func (s *Store) Spend(ctx context.Context, runID string, delta float64) (float64, error) {
	var total float64
	err := s.db.QueryRowContext(ctx, `UPDATE run_ledger SET spent_usd = spent_usd + $1 WHERE run_id = $2 RETURNING spent_usd`, delta, runID).Scan(&total)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("store: run %s has no cost ledger", runID)
	}
	return total, s.fail(err)
}

// StoredTokens sums the tokens of a run's stored sessions.
func (s *Store) StoredTokens(ctx context.Context, runID string) (in, out int, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0) FROM sessions WHERE run_id = $1`, runID).Scan(&in, &out)
	return in, out, s.fail(err)
}

// LiveWorkers counts the workers of a run that are alive: not left, with a
// heartbeat within the lease timeout.
func (s *Store) LiveWorkers(ctx context.Context, runID string) (int, error) {
	return s.liveWorkers(ctx, runID, "")
}

// liveWorkers is LiveWorkers, not counting the worker with token except.
func (s *Store) liveWorkers(ctx context.Context, runID, except string) (int, error) {
	n, err := s.liveWorkersIn(ctx, s.db, runID, except)
	return n, s.fail(err)
}

func (s *Store) liveWorkersIn(ctx context.Context, q querier, runID, except string) (int, error) {
	now, err := s.leaseNow(ctx, q)
	if err != nil {
		return 0, err
	}
	var n int
	err = q.QueryRowContext(ctx, `SELECT COUNT(*) FROM run_workers WHERE run_id = $1 AND token <> $2 AND left_at = '' AND heartbeat >= $3`,
		runID, except, now.Add(-s.leaseTimeout()).UnixMilli()).Scan(&n)
	return n, err
}

// OpenPace gives a run a pace of perSecond calls shared by its workers,
// unless it has one.
func (s *Store) OpenPace(ctx context.Context, runID string, perSecond int) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO run_pace (run_id, per_second, window_ms, used, last_grant) VALUES ($1, $2, 0, 0, 0) ON CONFLICT (run_id) DO NOTHING`,
		runID, perSecond)
	return s.fail(err)
}

// SetPace changes a run's pace to perSecond calls.
func (s *Store) SetPace(ctx context.Context, runID string, perSecond int) error {
	_, err := s.db.ExecContext(ctx, `UPDATE run_pace SET per_second = $1 WHERE run_id = $2`, perSecond, runID)
	return s.fail(err)
}

// PaceOf reads a run's shared pace; ok is false for a run without one.
func (s *Store) PaceOf(ctx context.Context, runID string) (perSecond int, ok bool, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT per_second FROM run_pace WHERE run_id = $1`, runID).Scan(&perSecond)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	return perSecond, err == nil, s.fail(err)
}

// TakeCalls grants up to want calls of the run's current one-second window
// (by the database's clock on PostgreSQL), in one statement: workers taking
// at once never get more than the pace between them. It returns the calls
// granted, the window and when the next one starts.
func (s *Store) TakeCalls(ctx context.Context, runID string, want int) (int, time.Time, time.Time, error) {
	now, err := s.leaseNow(ctx, s.db)
	if err != nil {
		return 0, time.Time{}, time.Time{}, err
	}
	w := now.Truncate(time.Second)
	// A taker whose clock reading is older than the store's window (its
	// statement was held up while another took from the next window) is
	// granted nothing and moves nothing: the window never goes back, or
	// the next one's count would start again.
	cur := `(CASE WHEN window_ms = $1 THEN used ELSE 0 END)`
	grant := `(CASE WHEN window_ms > $1 THEN 0 WHEN per_second - ` + cur + ` < $2 THEN per_second - ` + cur + ` ELSE $2 END)`
	var granted int
	err = s.db.QueryRowContext(ctx, `UPDATE run_pace SET last_grant = `+grant+`, used = (CASE WHEN window_ms > $1 THEN used ELSE `+cur+` + `+grant+` END), `+
		`window_ms = (CASE WHEN window_ms > $1 THEN window_ms ELSE $1 END) WHERE run_id = $3 RETURNING last_grant`,
		w.UnixMilli(), want, runID).Scan(&granted)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, w, w, fmt.Errorf("store: run %s has no pace", runID)
	}
	if err != nil {
		return 0, w, w, s.fail(err)
	}
	return max(granted, 0), w, w.Add(time.Second), nil
}
