package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a settable time for leases.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// leaseStores opens n stores on one location, as n processes would, all on
// the clock, renewing leases only when told to.
func leaseStores(t *testing.T, c *clock, n int) []*Store {
	t.Helper()
	open := storeOpener(t)
	var out []*Store
	for range n {
		s, err := open()
		if err != nil {
			t.Fatal(err)
		}
		s.Now, s.LeaseRenew = c.now, -1
		out = append(out, s)
	}
	return out
}

func mustAcquire(t *testing.T, s *Store, runID string, h Holder) *Lease {
	t.Helper()
	l, err := s.AcquireLease(context.Background(), runID, h)
	if err != nil {
		t.Fatalf("acquiring run %s for %s: %v", runID, h, err)
	}
	return l
}

// refused checks that h cannot take the lease and that the error says who
// holds it.
func refused(t *testing.T, s *Store, runID string, h Holder, holder Holder, since time.Time) *LeaseError {
	t.Helper()
	l, err := s.AcquireLease(context.Background(), runID, h)
	if err == nil {
		l.Release()
		t.Fatalf("%s took the lease on run %s held by %s", h, runID, holder)
	}
	var le *LeaseError
	if !errors.As(err, &le) || !errors.Is(err, ErrLeased) {
		t.Fatalf("error %v: want a *LeaseError matching ErrLeased", err)
	}
	if le.Holder != holder || le.RunID != runID || !le.Acquired.Equal(since) {
		t.Errorf("lease error names %+v on %s since %v, want %+v on %s since %v", le.Holder, le.RunID, le.Acquired, holder, runID, since)
	}
	for _, want := range []string{runID, holder.Name, fmt.Sprintf("pid %d", holder.PID), holder.Host, since.Format(time.RFC3339), "wait for it", "kill"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	return le
}

var t0 = time.Date(2024, 5, 6, 7, 0, 0, 0, time.UTC)

func testLeaseOneHolder(t *testing.T) {
	c := &clock{t: t0}
	st := leaseStores(t, c, 2)
	first := ThisProcess("budge run --resume")
	second := Holder{Host: first.Host, PID: first.PID, Name: "another resume"}
	l := mustAcquire(t, st[0], "r1", first)
	if l.RunID() != "r1" || l.Holder() != first {
		t.Errorf("lease on %s for %+v", l.RunID(), l.Holder())
	}
	// Another process (store), and this same one again: both refused.
	c.set(t0.Add(10 * time.Second))
	le := refused(t, st[1], "r1", second, first, t0)
	if !le.Heartbeat.Equal(t0) || !strings.Contains(le.Error(), "10s ago") {
		t.Errorf("lease error %q: want the heartbeat of 10s ago", le)
	}
	refused(t, st[0], "r1", first, first, t0)
	// Another run is free.
	mustAcquire(t, st[1], "r2", second).Release()

	info, ok, err := st[1].RunLease(context.Background(), "r1")
	if err != nil || !ok || info.Holder != first || info.Stale {
		t.Errorf("RunLease = %+v, %v, %v; want held by %v, live", info, ok, err, first)
	}

	// Released, it can be taken again, and releasing twice is harmless.
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Errorf("second release: %v", err)
	}
	if _, ok, err := st[1].RunLease(context.Background(), "r1"); ok || err != nil {
		t.Errorf("after release the run is still leased (%v)", err)
	}
	c.set(t0.Add(20 * time.Second))
	l2 := mustAcquire(t, st[1], "r1", second)
	defer l2.Release()
	refused(t, st[0], "r1", first, second, t0.Add(20*time.Second))
}

// Processes racing for one lease: exactly one gets it.
func testLeaseRace(t *testing.T) {
	c := &clock{t: t0}
	st := leaseStores(t, c, 8)
	type result struct {
		l   *Lease
		err error
	}
	results := make(chan result, len(st))
	for i, s := range st {
		go func() {
			l, err := s.AcquireLease(context.Background(), "r1", Holder{Host: "h", PID: 1000 + i, Name: fmt.Sprint("p", i)})
			results <- result{l, err}
		}()
	}
	won := 0
	for range st {
		r := <-results
		switch {
		case r.err == nil:
			won++
			defer r.l.Release()
		case !errors.Is(r.err, ErrLeased):
			t.Errorf("a loser got %v, want ErrLeased", r.err)
		}
	}
	if won != 1 {
		t.Errorf("%d processes got the lease, want 1", won)
	}
}

func testLeaseStaleHeartbeatIsTakenOver(t *testing.T) {
	ctx := context.Background()
	c := &clock{t: t0}
	st := leaseStores(t, c, 2)
	// Holders on other hosts: only the heartbeat's age counts.
	a := Holder{Host: "host-a", PID: 11, Name: "worker a"}
	b := Holder{Host: "host-b", PID: 22, Name: "worker b"}
	la := mustAcquire(t, st[0], "r1", a)

	c.set(t0.Add(DefaultLeaseTimeout - time.Second))
	refused(t, st[1], "r1", b, a, t0)
	if err := la.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	renewed := c.now()
	// The timeout counts from the last heartbeat, not from the acquisition.
	c.set(renewed.Add(DefaultLeaseTimeout))
	refused(t, st[1], "r1", b, a, t0)
	if info, _, _ := st[1].RunLease(ctx, "r1"); info.Stale || !info.Heartbeat.Equal(renewed) {
		t.Errorf("RunLease = %+v: want heartbeat %v, not stale", info, renewed)
	}
	c.set(renewed.Add(DefaultLeaseTimeout + time.Second))
	if info, _, _ := st[1].RunLease(ctx, "r1"); !info.Stale {
		t.Errorf("RunLease = %+v: want stale", info)
	}
	lb := mustAcquire(t, st[1], "r1", b)
	defer lb.Release()

	// The old holder finds out at its next renewal, and stops.
	select {
	case <-la.Lost():
		t.Fatal("lease reported lost before a renewal")
	default:
	}
	err := la.Renew(ctx)
	if !errors.Is(err, ErrLeaseLost) || !errors.Is(err, ErrLeased) {
		t.Fatalf("renewing a lease taken over: %v, want ErrLeaseLost", err)
	}
	if !strings.Contains(err.Error(), b.Name) || !strings.Contains(err.Error(), "lost its lease") {
		t.Errorf("error %q does not say who took it", err)
	}
	select {
	case <-la.Lost():
	default:
		t.Error("Lost not closed")
	}
	if !errors.Is(la.Err(), ErrLeaseLost) {
		t.Errorf("Err = %v", la.Err())
	}
	// Releasing the lost lease leaves the new holder's alone.
	if err := la.Release(); err != nil {
		t.Fatal(err)
	}
	if info, ok, _ := st[0].RunLease(ctx, "r1"); !ok || info.Holder != b {
		t.Errorf("after the old holder released: %+v, %v; want held by %v", info, ok, b)
	}

	// A store's own timeout.
	st[0].LeaseTimeout = time.Minute
	c.set(c.now().Add(50 * time.Second))
	refused(t, st[0], "r1", a, b, renewed.Add(DefaultLeaseTimeout+time.Second))
}

// deadPID is the id of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := osexec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if pidAlive(pid) {
		t.Skipf("pid %d was reused at once", pid)
	}
	return pid
}

func testLeaseOfDeadProcessIsTakenOver(t *testing.T) {
	if !pidAlive(os.Getpid()) {
		t.Skip("process ids cannot be checked on this system")
	}
	c := &clock{t: t0}
	st := leaseStores(t, c, 2)
	me := ThisProcess("resume")
	dead := deadPID(t)

	// A fresh lease of a live process on this host (the test's parent) and
	// of a pid on another host (which cannot be checked) are kept.
	for _, h := range []Holder{{Host: me.Host, PID: os.Getppid(), Name: "live"}, {Host: "elsewhere", PID: dead, Name: "remote"}} {
		l := mustAcquire(t, st[0], "r1", h)
		refused(t, st[1], "r1", me, h, t0)
		l.Release()
	}

	// A fresh lease of a process on this host that has exited is taken.
	gone := Holder{Host: me.Host, PID: dead, Name: "killed run"}
	stale := mustAcquire(t, st[0], "r1", gone)
	info, ok, err := st[1].RunLease(context.Background(), "r1")
	if err != nil || !ok || !info.Stale {
		t.Errorf("RunLease of a dead holder = %+v, %v, %v; want stale", info, ok, err)
	}
	l := mustAcquire(t, st[1], "r1", me)
	defer l.Release()
	if err := stale.Renew(context.Background()); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("the dead holder's renewal: %v, want ErrLeaseLost", err)
	}
}

func testCreateRunLeased(t *testing.T) {
	ctx := context.Background()
	c := &clock{t: t0}
	st := leaseStores(t, c, 2)
	me := ThisProcess("budge run")
	l, err := st[0].CreateRunLeased(ctx, testRun("r1", base), "builtin:r1", []byte("deck"), me)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st[1].GetRun(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	other := Holder{Host: me.Host, PID: me.PID, Name: "budge run --resume"}
	refused(t, st[1], "r1", other, me, t0)

	// Creating a run that exists fails whole: no lease is taken.
	l.Release()
	if _, err := st[1].CreateRunLeased(ctx, testRun("r1", base), "builtin:r1", []byte("deck"), other); err == nil {
		t.Fatal("created run r1 twice")
	}
	if _, ok, err := st[1].RunLease(ctx, "r1"); ok || err != nil {
		t.Errorf("a failed CreateRunLeased left a lease (%v)", err)
	}
	// A run whose lease someone holds cannot be created under it either.
	held := mustAcquire(t, st[0], "r2", me)
	defer held.Release()
	if _, err := st[1].CreateRunLeased(ctx, testRun("r2", base), "builtin:r2", []byte("deck"), other); !errors.Is(err, ErrLeased) {
		t.Errorf("creating a run under another's lease: %v, want ErrLeased", err)
	}
	if _, err := st[1].GetRun(ctx, "r2"); !errors.Is(err, ErrNoRun) {
		t.Errorf("the refused run was created: %v", err)
	}
}

// Check answers from memory within the lease, renews past it when nobody
// took the run over, and fails with ErrLeaseLost when another did: a
// paused holder finds out before its next call.
func testLeaseCheck(t *testing.T) {
	c := &clock{t: t0}
	st := leaseStores(t, c, 2)
	ctx := context.Background()
	l := mustAcquire(t, st[0], "r1", Holder{Host: "h", PID: 1, Name: "first"})
	c.set(t0.Add(DefaultLeaseTimeout / 2))
	if err := l.Check(ctx); err != nil {
		t.Fatal(err)
	}
	// Past the lease with nobody else: renewed.
	c.set(t0.Add(2 * DefaultLeaseTimeout))
	if err := l.Check(ctx); err != nil {
		t.Fatalf("a lapsed lease nobody took: %v", err)
	}
	if info, _, _ := st[1].RunLease(ctx, "r1"); !info.Heartbeat.Equal(t0.Add(2 * DefaultLeaseTimeout)) {
		t.Errorf("heartbeat %v; want renewed by Check", info.Heartbeat)
	}
	// Paused past the lease while another takes the run over.
	c.set(t0.Add(4 * DefaultLeaseTimeout))
	mustAcquire(t, st[1], "r1", Holder{Host: "h", PID: 2, Name: "second"})
	if err := l.Check(ctx); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("a lease taken over: %v; want ErrLeaseLost", err)
	}
	select {
	case <-l.Lost():
	default:
		t.Error("Lost not closed")
	}
}
