package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// A run is run by one process at a time: the holder of its lease, a row of
// run_leases. The holder renews the lease's heartbeat while it runs and
// deletes the row when it is done. A second process asking for the lease
// gets a *LeaseError saying who holds it; a lease whose heartbeat is older
// than the lease timeout, or whose holder was a process on this host that
// no longer exists, is stale and is taken over.
//
// The SQL is plain (one SELECT, then an INSERT or an UPDATE guarded by the
// old token) so that the same protocol works on a shared server database.

// Lease timing defaults (Store.LeaseTimeout, Store.LeaseRenew).
const (
	DefaultLeaseTimeout = 30 * time.Second
	DefaultLeaseRenew   = 5 * time.Second
)

// Holder is the process that holds, or asks for, a run's lease.
type Holder struct {
	Host string `json:"host"` // the machine it runs on (os.Hostname)
	PID  int    `json:"pid"`  // its process id on Host
	Name string `json:"name"` // what it is, for people: "budge run --resume"
}

// ThisProcess describes the calling process as a lease holder.
func ThisProcess(name string) Holder {
	return Holder{Host: hostname(), PID: os.Getpid(), Name: name}
}

func (h Holder) String() string {
	name := h.Name
	if name == "" {
		name = "a budge process"
	}
	return fmt.Sprintf("%s (pid %d on %s)", name, h.PID, h.Host)
}

// hostname is this machine's name, as leases record it.
func hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "unknown-host"
	}
	return h
}

// LeaseInfo is a run's lease as stored.
type LeaseInfo struct {
	RunID     string
	Holder    Holder
	Acquired  time.Time
	Heartbeat time.Time
	// Stale is set by RunLease when the lease would be taken over: its
	// heartbeat is older than the lease timeout, or its holder was a
	// process on this host that no longer exists.
	Stale bool
}

// ErrLeased is matched (errors.Is) by every *LeaseError: the run is held by
// another process.
var ErrLeased = errors.New("the run is in use by another process")

// ErrLeaseLost is matched by the *LeaseError of a holder whose lease another
// process took over (its heartbeat had stopped for too long).
var ErrLeaseLost = errors.New("the lease on the run was lost")

// LeaseError says who holds a run's lease, since when, and what to do.
type LeaseError struct {
	LeaseInfo
	Now     time.Time     // when it was found held
	Timeout time.Duration // the lease timeout
	Lost    bool          // the caller held the lease and lost it to Holder
}

func (e *LeaseError) Error() string {
	ago := e.Now.Sub(e.Heartbeat).Round(time.Second)
	if e.Lost {
		return fmt.Sprintf("store: run %s: this process lost its lease: %s took it over at %s, after this process's heartbeat "+
			"had stopped for over %s; stop writing to the run (the other process runs it now)",
			e.RunID, e.Holder, e.Acquired.Format(time.RFC3339), e.Timeout)
	}
	return fmt.Sprintf("store: run %s is in use by %s since %s (last heartbeat %s ago): "+
		"wait for it to finish, or stop it (kill %d on %s) and try again; "+
		"if that process is gone, its lease is taken over once its heartbeat is %s old",
		e.RunID, e.Holder, e.Acquired.Format(time.RFC3339), ago, e.Holder.PID, e.Holder.Host, e.Timeout)
}

func (e *LeaseError) Is(target error) bool {
	return target == ErrLeased || (e.Lost && target == ErrLeaseLost)
}

// Lease is a held run lease. Release it when done; while held, a goroutine
// renews its heartbeat every Store.LeaseRenew.
type Lease struct {
	s        *Store
	runID    string
	token    string
	holder   Holder
	acquired time.Time

	beat       *heartbeat
	release    sync.Once
	releaseErr error

	lostOnce sync.Once
	lost     chan struct{}
	mu       sync.Mutex
	lostErr  error
	// until is when, on this process's clock, the lease surely still
	// holds: one lease timeout past the moment before its last taking or
	// renewal. Check reads it before every call.
	until time.Time
}

// RunID is the run the lease is on.
func (l *Lease) RunID() string { return l.runID }

// Holder is who holds the lease.
func (l *Lease) Holder() Holder { return l.holder }

// Lost is closed when a renewal finds that another process took the lease
// over; Err then says who.
func (l *Lease) Lost() <-chan struct{} { return l.lost }

// Err is the *LeaseError (ErrLeaseLost) of a lost lease, or nil.
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lostErr
}

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// leaseNow is the time of lease heartbeats and their staleness: Store.Now
// when a test sets it; on PostgreSQL the database server's clock, which
// every machine sharing the database reads alike (their own clocks may
// disagree by more than a lease timeout); otherwise this machine's.
func (s *Store) leaseNow(ctx context.Context, q querier) (time.Time, error) {
	if s.Now != nil || !s.db.d.postgres() {
		return s.now(), nil
	}
	var t time.Time
	if err := q.QueryRowContext(ctx, `SELECT CURRENT_TIMESTAMP`).Scan(&t); err != nil {
		return time.Time{}, s.fail(err)
	}
	return t, nil
}

func (s *Store) leaseTimeout() time.Duration {
	if s.LeaseTimeout > 0 {
		return s.LeaseTimeout
	}
	return DefaultLeaseTimeout
}

func (s *Store) leaseRenew() time.Duration {
	if s.LeaseRenew != 0 {
		return s.LeaseRenew
	}
	return DefaultLeaseRenew
}

// AcquireLease takes the lease on a run for h, which must describe the
// calling process (ThisProcess). It fails with a *LeaseError (ErrLeased)
// while another holder's lease is live, including one held by this same
// process: a lease is not re-entrant. A stale lease is taken over, in the
// same transaction that checked it.
func (s *Store) AcquireLease(ctx context.Context, runID string, h Holder) (*Lease, error) {
	var l *Lease
	err := s.immediate(ctx, func(c *conn) error {
		var err error
		l, err = s.acquireIn(ctx, c, runID, h)
		return err
	})
	if err != nil {
		return nil, err
	}
	l.start()
	return l, nil
}

// CreateRunLeased is CreateRun that also takes the new run's lease for h,
// in the same transaction: no other process can take the run between its
// creation and its first session.
func (s *Store) CreateRunLeased(ctx context.Context, r Run, deckSource string, deck []byte, h Holder) (*Lease, error) {
	if err := os.MkdirAll(s.RunDir(r.ID), 0o700); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	var l *Lease
	err := s.immediate(ctx, func(c *conn) error {
		if err := s.insertRun(ctx, c, r, deckSource, deck); err != nil {
			return err
		}
		var err error
		l, err = s.acquireIn(ctx, c, r.ID, h)
		return err
	})
	if err != nil {
		return nil, err
	}
	l.start()
	return l, nil
}

// RunLease returns a run's lease as stored, and false when nobody holds
// it. A run whose status is still running but has no live lease was left
// so by a process that died.
func (s *Store) RunLease(ctx context.Context, runID string) (LeaseInfo, bool, error) {
	cur, ok, err := queryOne(ctx, s.db, scanLease, `SELECT `+leaseCols+` FROM run_leases WHERE run_id = $1`, runID)
	if err != nil || !ok {
		return LeaseInfo{}, ok, err
	}
	now, err := s.leaseNow(ctx, s.db)
	if err != nil {
		return LeaseInfo{}, false, err
	}
	cur.Stale = s.stale(cur.LeaseInfo, now)
	return cur.LeaseInfo, true, nil
}

// immediate runs fn in a write transaction taken at its start (SQLite's
// BEGIN IMMEDIATE, PostgreSQL's advisory write lock), so that what fn reads
// is still so when it writes.
func (s *Store) immediate(ctx context.Context, fn func(c *conn) error) error {
	c, err := s.db.Conn(ctx)
	if err != nil {
		return s.fail(err)
	}
	defer c.Close()
	if err := c.beginWrite(ctx); err != nil {
		return s.fail(err)
	}
	if err := fn(c); err != nil {
		c.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		return err
	}
	if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
		c.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
		return s.fail(err)
	}
	return nil
}

// execQuerier runs statements and queries: a transaction or a connection.
type execQuerier interface {
	querier
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// acquireIn takes the lease on runID for h inside a write transaction.
func (s *Store) acquireIn(ctx context.Context, q execQuerier, runID string, h Holder) (*Lease, error) {
	asked := s.now()
	now, err := s.leaseNow(ctx, q)
	if err != nil {
		return nil, err
	}
	token, err := newToken()
	if err != nil {
		return nil, err
	}
	cur, held, err := queryOne(ctx, q, scanLease, `SELECT `+leaseCols+` FROM run_leases WHERE run_id = $1`, runID)
	if err != nil {
		return nil, s.named(err)
	}
	var res sql.Result
	if held {
		if !s.stale(cur.LeaseInfo, now) {
			return nil, &LeaseError{LeaseInfo: cur.LeaseInfo, Now: now, Timeout: s.leaseTimeout()}
		}
		// Guarded by the old token: of two processes taking over the same
		// stale lease, one changes the row.
		res, err = q.ExecContext(ctx, `UPDATE run_leases SET token = $1, holder = $2, host = $3, pid = $4, acquired = $5, heartbeat = $6
			WHERE run_id = $7 AND token = $8`, token, h.Name, h.Host, h.PID, ts(now), ts(now), runID, cur.token)
	} else {
		res, err = q.ExecContext(ctx, `INSERT INTO run_leases (run_id, token, holder, host, pid, acquired, heartbeat) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			runID, token, h.Name, h.Host, h.PID, ts(now), ts(now))
	}
	if err == nil {
		var n int64
		if n, err = res.RowsAffected(); err == nil && n != 1 {
			err = fmt.Errorf("%w: another process took the lease over at the same time", ErrLeased)
		}
	}
	if err != nil {
		if isConstraint(err) {
			err = fmt.Errorf("%w: another process took the lease at the same time", ErrLeased)
		}
		return nil, s.named(fmt.Errorf("store: taking the lease on run %s: %w", runID, err))
	}
	return &Lease{s: s, runID: runID, token: token, holder: h, acquired: now, until: asked.Add(s.leaseTimeout()),
		lost: make(chan struct{})}, nil
}

// stale reports whether a lease may be taken over at now: its heartbeat is
// older than the lease timeout, or its holder ran on this host and its
// process no longer exists.
func (s *Store) stale(cur LeaseInfo, now time.Time) bool {
	if now.Sub(cur.Heartbeat) > s.leaseTimeout() {
		return true
	}
	return cur.Holder.Host == hostname() && cur.Holder.PID > 0 && cur.Holder.PID != os.Getpid() && !pidAlive(cur.Holder.PID)
}

func newToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("store: lease token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// heartbeat calls a renewal at a fixed interval in the background until
// it is halted: the one heartbeat of run leases (Lease) and of workers'
// cells (Worker).
type heartbeat struct {
	stop, done chan struct{}
	halted     sync.Once
}

// startHeartbeat calls renew every interval until halt, or until renew
// returns false; a negative interval renews only when the holder asks.
func startHeartbeat(every time.Duration, renew func() bool) *heartbeat {
	h := &heartbeat{stop: make(chan struct{}), done: make(chan struct{})}
	if every < 0 {
		close(h.done)
		return h
	}
	go func() {
		defer close(h.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-h.stop:
				return
			case <-t.C:
				if !renew() {
					return
				}
			}
		}
	}()
	return h
}

// halt stops the heartbeat and waits for a renewal under way; it reports
// whether this call halted it (false when it was halted before).
func (h *heartbeat) halt() bool {
	first := false
	h.halted.Do(func() {
		first = true
		close(h.stop)
		<-h.done
	})
	return first
}

// start renews the heartbeat in the background until Release, or until
// the lease is found lost: a failed renewal (a busy or full database) is
// tried again at the next tick.
func (l *Lease) start() {
	l.beat = startHeartbeat(l.s.leaseRenew(), func() bool {
		return !errors.Is(l.Renew(context.Background()), ErrLeaseLost)
	})
}

// Renew records a heartbeat now. It fails with a *LeaseError matching
// ErrLeaseLost when another process took the lease over, and closes Lost.
func (l *Lease) Renew(ctx context.Context) error {
	if err := l.Err(); err != nil {
		return err
	}
	asked := l.s.now()
	now, err := l.s.leaseNow(ctx, l.s.db)
	if err != nil {
		return err
	}
	res, err := l.s.db.ExecContext(ctx, `UPDATE run_leases SET heartbeat = $1 WHERE run_id = $2 AND token = $3`, ts(now), l.runID, l.token)
	if err != nil {
		return l.s.named(fmt.Errorf("store: renewing the lease on run %s: %w", l.runID, err))
	}
	if n, err := res.RowsAffected(); err != nil || n == 1 {
		if err == nil {
			l.mu.Lock()
			l.until = asked.Add(l.s.leaseTimeout())
			l.mu.Unlock()
		}
		return l.s.fail(err)
	}
	lost := &LeaseError{LeaseInfo: LeaseInfo{RunID: l.runID, Holder: Holder{Name: "another process", Host: "?"}}, Now: now, Timeout: l.s.leaseTimeout(), Lost: true}
	if cur, ok, err := l.s.RunLease(ctx, l.runID); err == nil && ok {
		lost.LeaseInfo = cur
	} else if err == nil {
		lost.Holder.Name = "another process (which has released it since)"
	}
	l.lostOnce.Do(func() {
		l.mu.Lock()
		l.lostErr = lost
		l.mu.Unlock()
		close(l.lost)
	})
	return l.Err()
}

// Check is the fence a holder passes before every call it makes: nil
// while it holds the lease. Within the lease its last taking or renewal
// gave, it answers from memory; past it (the heartbeat stopped: the
// process was paused, or the database was out of reach) it renews at once,
// so a paused process finds out that another took the run over before its
// next call, not after it. A lost lease fails with ErrLeaseLost.
func (l *Lease) Check(ctx context.Context) error {
	l.mu.Lock()
	ok, lost := l.s.now().Before(l.until), l.lostErr
	l.mu.Unlock()
	switch {
	case lost != nil:
		return lost
	case ok:
		return nil
	}
	return l.Renew(ctx)
}

// Release stops the heartbeat and gives the lease up. Releasing a lost
// lease leaves the new holder's lease alone. Release is idempotent.
func (l *Lease) Release() error {
	l.release.Do(func() {
		l.beat.halt()
		if _, err := l.s.db.ExecContext(context.Background(), `DELETE FROM run_leases WHERE run_id = $1 AND token = $2`, l.runID, l.token); err != nil {
			l.releaseErr = l.s.named(fmt.Errorf("store: releasing the lease on run %s: %w", l.runID, err))
		}
	})
	return l.releaseErr
}

// storedLease is a lease row with its token.
type storedLease struct {
	LeaseInfo
	token string
}

// leaseCols are the columns scanLease reads, in its order.
const leaseCols = `run_id, token, holder, host, pid, acquired, heartbeat`

func scanLease(sc rowScanner) (storedLease, error) {
	var l storedLease
	var acquired, heartbeat string
	if err := sc.Scan(&l.RunID, &l.token, &l.Holder.Name, &l.Holder.Host, &l.Holder.PID, &acquired, &heartbeat); err != nil {
		return l, err
	}
	p := parser{table: "run_leases", row: "lease on run " + l.RunID}
	l.Acquired = p.time("acquired", acquired)
	l.Heartbeat = p.time("heartbeat", heartbeat)
	return l, p.err
}
