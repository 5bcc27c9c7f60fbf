package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// cellRun stores a run of n cells on st, in a schedule that reverses the
// plan (so claims follow schedule positions, not plan positions).
func cellRun(t testing.TB, st *Store, id string, n int) {
	t.Helper()
	cells := make([]PlannedCell, n)
	for i := range cells {
		// The schedule position testSession has: a session's attempts are
		// kept at it, the record of a lost incarnation too.
		cells[i] = PlannedCell{ID: fmt.Sprintf("s%03d", i), Seq: i, Pos: 100 - i}
	}
	r := testRun(id, base)
	r.Planned = n
	if err := st.CreateRunCells(context.Background(), r, "builtin:"+id, []byte("deck of "+id), slices.Values(cells)); err != nil {
		t.Fatal(err)
	}
}

// asRun is testSession with every attempt of incarnation inc.
func asRun(id string, seq, inc int) Session {
	se := testSession(id, seq)
	for i := range se.Attempts {
		se.Attempts[i].Incarnation = inc
	}
	return se
}

// Three workers (three stores, as three processes) claim every cell of a
// run, concurrently: each cell is claimed once, in schedule order within
// each worker, and once stored the run has none left.
func testCellsClaimedOnce(t *testing.T) {
	c := &clock{t: t0}
	st := leaseStores(t, c, 3)
	const n = 60
	cellRun(t, st[0], "r", n)
	ctx := context.Background()
	var mu sync.Mutex
	got := map[string]int{}
	var wg sync.WaitGroup
	for k := range st {
		w, err := st[k].Join(ctx, "r", Holder{Host: "h", PID: k + 1, Name: "worker"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer w.Leave(ctx)
			last := -1
			for {
				cs, err := w.Claim(ctx, 4)
				if err != nil {
					t.Error(err)
					return
				}
				if len(cs) == 0 {
					return
				}
				if len(cs) > 4 {
					t.Errorf("asked for 4 cells, claimed %d", len(cs))
				}
				var batch []Session
				for _, cl := range cs {
					if cl.Pos <= last || cl.Incarnation != 1 || cl.Lost != nil {
						t.Errorf("claimed %+v after position %d", cl, last)
					}
					last = cl.Pos
					mu.Lock()
					got[cl.ID]++
					mu.Unlock()
					batch = append(batch, testSession(cl.ID, cl.Seq))
				}
				if err := w.WriteSessions(ctx, "r", batch); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if len(got) != n {
		t.Errorf("%d cells claimed, want %d", len(got), n)
	}
	for id, k := range got {
		if k != 1 {
			t.Errorf("cell %s claimed %d times", id, k)
		}
	}
	cc, err := st[1].Cells(ctx, "r")
	if err != nil || cc != (CellCounts{Done: n}) {
		t.Errorf("cells = %+v, %v; want all %d done", cc, err, n)
	}
	if ss := sessions(t, st[2], "r"); len(ss) != n {
		t.Errorf("%d sessions stored, want %d", len(ss), n)
	}
	ws, err := st[0].Workers(ctx, "r")
	if err != nil || len(ws) != 3 || ws[0].Left == "" {
		t.Errorf("workers = %+v, %v; want 3 that left", ws, err)
	}
}

// A worker that stops renewing loses its cells once the lease runs out:
// another claims them as the next incarnation, with an interrupted attempt
// recording the lost one; what the stopped worker writes afterwards keeps
// only its attempts, and the cell is stored once, by the new holder.
func testCellsTakenOverFromStoppedWorker(t *testing.T) {
	c, st, a, b := twoWorkers(t)
	ctx := context.Background()
	held, err := a.Claim(ctx, 2)
	if err != nil || len(held) != 2 || held[0].ID != "s002" {
		t.Fatalf("a claimed %+v, %v; want s002 and s001 (schedule order)", held, err)
	}
	// Within the lease, b gets only the cell a does not hold; renewing
	// keeps a's cells a's.
	c.set(t0.Add(DefaultLeaseTimeout - time.Second))
	if err := a.renew(ctx); err != nil {
		t.Fatal(err)
	}
	c.set(t0.Add(DefaultLeaseTimeout + time.Second))
	got, err := b.Claim(ctx, 5)
	if err != nil || len(got) != 1 || got[0].ID != "s000" {
		t.Fatalf("b claimed %+v, %v; want only s000", got, err)
	}
	// a stops renewing: past its lease, b (which renews) takes s002 and
	// s001 over.
	c.set(t0.Add(5 * DefaultLeaseTimeout / 2))
	if err := b.renew(ctx); err != nil {
		t.Fatal(err)
	}
	c.set(t0.Add(3 * DefaultLeaseTimeout))
	over, err := b.Claim(ctx, 5)
	if err != nil || len(over) != 2 {
		t.Fatalf("b took over %+v, %v; want 2 cells", over, err)
	}
	for _, cl := range over {
		if cl.Incarnation != 2 || cl.Lost == nil || cl.Lost.Incarnation != 1 || cl.Lost.Holder == "" {
			t.Errorf("taken over %+v; want incarnation 2 recording lost incarnation 1", cl)
		}
	}
	// a wakes up and writes s002: refused as the cell's result, its
	// attempts kept.
	if err := a.WriteSessions(ctx, "r", []Session{asRun("s002", 2, 1)}); err != nil {
		t.Fatal(err)
	}
	if ids, _ := st[0].StoredIDs(ctx, "r"); len(ids) != 0 {
		t.Errorf("a stored %v after losing its cells", ids)
	}
	if err := b.WriteSessions(ctx, "r", []Session{asRun("s002", 2, 2), asRun("s001", 1, 2), testSession("s000", 0)}); err != nil {
		t.Fatal(err)
	}
	se, err := st[1].Session(ctx, "r", "s002")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[int][]string{}
	for _, at := range se.Attempts {
		kinds[at.Incarnation] = append(kinds[at.Incarnation], at.Outcome+"/"+at.ErrorKind)
	}
	// Incarnation 1: the takeover record and a's attempts; 2: b's.
	n := len(testSession("x", 0).Attempts)
	if len(kinds[1]) != n+1 || kinds[1][0] != "interrupted/"+WorkerLost || len(kinds[2]) != n {
		t.Errorf("attempts of s002 by incarnation = %v", kinds)
	}
	cc, _ := st[0].Cells(ctx, "r")
	if cc != (CellCounts{Done: 3}) {
		t.Errorf("cells = %+v; want 3 done", cc)
	}
}

// One worker scores a run; another asking is refused while the first is
// alive, and takes over once it has left.
func testCellsOneFinisher(t *testing.T) {
	c := &clock{t: t0}
	st := leaseStores(t, c, 2)
	ctx := context.Background()
	cellRun(t, st[0], "r", 1)
	a, _ := st[0].Join(ctx, "r", Holder{Host: "h", PID: 1, Name: "a"}, nil)
	b, _ := st[1].Join(ctx, "r", Holder{Host: "h", PID: 2, Name: "b"}, nil)
	if mine, err := a.Finisher(ctx); !mine || err != nil {
		t.Fatalf("first asker: %v, %v", mine, err)
	}
	if mine, err := b.Finisher(ctx); mine || err != nil {
		t.Fatalf("second asker while the first is alive: %v, %v", mine, err)
	}
	if mine, _ := a.Finisher(ctx); !mine {
		t.Error("the finisher asking again is refused")
	}
	a.Leave(ctx)
	if mine, err := b.Finisher(ctx); !mine || err != nil {
		t.Errorf("after the first left: %v, %v", mine, err)
	}
}

// Workers that stop at the same moment with cells left: exactly one of
// them finds itself the last (and scores the run); none leaves it to the
// others, and the cells they held are open again.
func testCellsOneLastToStop(t *testing.T) {
	c := &clock{t: t0}
	st := leaseStores(t, c, 3)
	ctx := context.Background()
	for round := range 15 {
		id := fmt.Sprintf("r%d", round)
		cellRun(t, st[0], id, 6)
		var ws []*Worker
		for k := range st {
			w, err := st[k].Join(ctx, id, Holder{Host: "h", PID: k + 1, Name: "w"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Leave(ctx)
			if _, err := w.Claim(ctx, 1); err != nil {
				t.Fatal(err)
			}
			ws = append(ws, w)
		}
		last := make([]bool, len(ws))
		var wg sync.WaitGroup
		for k, w := range ws {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var err error
				if last[k], err = w.Stop(ctx); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		n := 0
		for _, l := range last {
			if l {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("round %d: %d workers found themselves last: %v", round, n, last)
		}
		if cells, err := st[1].Cells(ctx, id); err != nil || cells.Open != 6 || cells.Claimed != 0 {
			t.Fatalf("round %d: cells %+v, %v", round, cells, err)
		}
	}
}

// An interrupted session gives its cell back at once; ReopenCells opens
// done cells again (a retry of failed sessions).
func testCellsReopen(t *testing.T) {
	c := &clock{t: t0}
	st := leaseStores(t, c, 1)[0]
	ctx := context.Background()
	cellRun(t, st, "r", 2)
	w, _ := st.Join(ctx, "r", Holder{Host: "h", PID: 1, Name: "w"}, nil)
	cs, _ := w.Claim(ctx, 2)
	if len(cs) != 2 {
		t.Fatalf("claimed %+v", cs)
	}
	if err := w.WriteSessions(ctx, "r", []Session{interruptedSession("s001", 1), testSession("s000", 0)}); err != nil {
		t.Fatal(err)
	}
	if cc, _ := st.Cells(ctx, "r"); cc != (CellCounts{Open: 1, Done: 1}) {
		t.Errorf("after an interrupted session: %+v", cc)
	}
	again, _ := w.Claim(ctx, 2)
	if len(again) != 1 || again[0].ID != "s001" || again[0].Incarnation != 2 || again[0].Lost != nil {
		t.Errorf("claimed again %+v; want s001 as incarnation 2, not lost", again)
	}
	if err := st.ReopenCells(ctx, "r", []string{"s000"}); err != nil {
		t.Fatal(err)
	}
	if cc, _ := st.Cells(ctx, "r"); cc != (CellCounts{Open: 1, Claimed: 1}) {
		t.Errorf("after reopening: %+v", cc)
	}
	if has, _ := st.HasCells(ctx, "r"); !has {
		t.Error("HasCells = false")
	}
	if runs, _ := st.OpenRuns(ctx); len(runs) != 1 || runs[0] != "r" {
		t.Errorf("OpenRuns = %v", runs)
	}
}

// The cells of a worker on this host whose process is gone are given back
// at once, before its lease runs out; a live worker's are not.
func testCellsOfDeadProcessReleased(t *testing.T) {
	c := &clock{t: t0}
	st := leaseStores(t, c, 2)
	ctx := context.Background()
	cellRun(t, st[0], "r", 4)
	dead, _ := st[0].Join(ctx, "r", Holder{Host: hostname(), PID: deadPID(t), Name: "killed"}, nil)
	live, _ := st[1].Join(ctx, "r", Holder{Host: hostname(), PID: os.Getpid(), Name: "live"}, nil)
	dead.Claim(ctx, 2)
	live.Claim(ctx, 2)
	n, err := st[1].ReleaseDead(ctx, "r")
	if err != nil || n != 2 {
		t.Fatalf("ReleaseDead = %d, %v; want the dead worker's 2 cells", n, err)
	}
	got, _ := live.Claim(ctx, 4)
	if len(got) != 2 || got[0].Lost == nil || got[0].Lost.Holder == "" {
		t.Errorf("claimed %+v after the release; want the 2 lost cells", got)
	}
}

// Workers taking calls of one pace at once get no more than it allows in a
// window, between them; the next window starts afresh.
func testPaceSharedByWorkers(t *testing.T) {
	c := &clock{t: t0}
	st := leaseStores(t, c, 3)
	ctx := context.Background()
	cellRun(t, st[0], "r", 1)
	if err := st[0].OpenPace(ctx, "r", 10); err != nil {
		t.Fatal(err)
	}
	if err := st[1].OpenPace(ctx, "r", 99); err != nil {
		t.Fatal(err)
	}
	if n, ok, err := st[2].PaceOf(ctx, "r"); n != 10 || !ok || err != nil {
		t.Fatalf("PaceOf = %d, %v, %v; the first pace stays", n, ok, err)
	}
	var mu sync.Mutex
	total := 0
	var wg sync.WaitGroup
	for k := range st {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				n, _, next, err := st[k].TakeCalls(ctx, "r", 3)
				if err != nil || !next.Equal(t0.Truncate(time.Second).Add(time.Second)) {
					t.Errorf("TakeCalls: %v, next %v", err, next)
				}
				mu.Lock()
				total += n
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if total != 10 {
		t.Errorf("workers were granted %d calls in one window of a pace of 10", total)
	}
	c.set(t0.Add(time.Second))
	if n, _, _, _ := st[0].TakeCalls(ctx, "r", 4); n != 4 {
		t.Errorf("the next window granted %d of 4", n)
	}
	// A taker that read the clock before the window changed and reaches the
	// store after another has taken from the new window (a statement held
	// up by a busy store): it is granted nothing, and the new window's
	// count stands.
	c.set(t0)
	if n, _, _, _ := st[1].TakeCalls(ctx, "r", 3); n != 0 {
		t.Errorf("a taker behind the store's window was granted %d calls of a window that is over", n)
	}
	c.set(t0.Add(time.Second))
	if n, _, _, _ := st[2].TakeCalls(ctx, "r", 10); n != 6 {
		t.Errorf("the window granted %d more after 4 of 10; want 6", n)
	}
}

// Cells go in a thousand rows at a time: a plan larger than one insert
// keeps every cell, and adding it again changes nothing.
func testCellsManyAtOnce(t *testing.T) {
	c := &clock{t: t0}
	st := leaseStores(t, c, 1)[0]
	ctx := context.Background()
	const n = 2500
	cellRun(t, st, "r", n)
	if cc, err := st.Cells(ctx, "r"); err != nil || cc != (CellCounts{Open: n}) {
		t.Fatalf("cells %+v, %v; want %d open", cc, err, n)
	}
	more := func(yield func(PlannedCell) bool) {
		for i := range n + 10 {
			if !yield(PlannedCell{ID: fmt.Sprintf("s%03d", i), Seq: i, Pos: n + 9 - i}) {
				return
			}
		}
	}
	if err := st.AddCells(ctx, "r", more); err != nil {
		t.Fatal(err)
	}
	if cc, _ := st.Cells(ctx, "r"); cc != (CellCounts{Open: n + 10}) {
		t.Errorf("after adding the plan again with 10 more: %+v", cc)
	}
}

// BenchmarkClaim claims a run's cells 16 at a time until none is left,
// marking them done as it goes, on runs of 10,000 and 100,000 cells: the
// time a claim takes should not grow with the cells the run has (a claim
// that reads every open cell and sorts them made a worker's claims
// quadratic in the run's size).
//
//	go test ./store -run XXX -bench Claim
func BenchmarkClaim(b *testing.B) {
	for _, backend := range backends {
		b.Run(backend, func(b *testing.B) {
			for _, n := range []int{10_000, 100_000} {
				b.Run(fmt.Sprintf("cells=%d", n), func(b *testing.B) { benchClaim(b, n) })
			}
		})
	}
}

func benchClaim(b *testing.B, n int) {
	ctx := context.Background()
	st := openStore(b)
	var w *Worker
	runs, left := 0, 0
	next := func() {
		b.StopTimer()
		defer b.StartTimer()
		if w != nil {
			w.Leave(ctx)
		}
		runs++
		id := fmt.Sprintf("r%d", runs)
		cellRun(b, st, id, n)
		var err error
		if w, err = st.Join(ctx, id, Holder{Host: "h", PID: 1, Name: "worker"}, nil); err != nil {
			b.Fatal(err)
		}
		left = n
	}
	b.ResetTimer()
	for range b.N {
		if left == 0 {
			next()
		}
		got, err := w.Claim(ctx, 16)
		if err != nil {
			b.Fatal(err)
		}
		if len(got) == 0 {
			b.Fatalf("run %d: no cell claimed with %d left", runs, left)
		}
		left -= len(got)
		// The worker stores its sessions: their cells are done, so the
		// cells claimed at any moment are those in flight, as in a run.
		b.StopTimer()
		ids := make([]string, len(got))
		for i, c := range got {
			ids[i] = c.ID
		}
		in, args := inList(ids, CellDone, w.runID)
		if _, err := st.db.ExecContext(ctx, `UPDATE cells SET state = $1 WHERE run_id = $2 AND session_id IN (`+in+`)`, args...); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(runs), "runs")
}

// The fence: a worker answers Holds from memory within the lease its claim
// gave; past it, it asks the database, and finds a cell another worker
// took over lost, and one nobody took still its own (renewed). A session
// stored as an incarnation the cell no longer has is kept as interrupted,
// even by the worker that holds the cell's later incarnation.
func testCellFence(t *testing.T) {
	c, st, a, b := twoWorkers(t)
	ctx := context.Background()
	held, err := a.Claim(ctx, 2) // s002, s001
	if err != nil || len(held) != 2 {
		t.Fatalf("a claimed %+v, %v", held, err)
	}
	c.set(t0.Add(DefaultLeaseTimeout - time.Second))
	for _, cl := range held {
		if err := a.Holds(ctx, cl.ID, cl.Seq, 1); err != nil {
			t.Fatalf("within the lease: %v", err)
		}
	}
	if a.checks != 0 {
		t.Errorf("%d renewals within the lease; want none (answered from memory)", a.checks)
	}
	if err := a.Holds(ctx, "s002", 2, 2); !errors.Is(err, ErrCellLost) {
		t.Errorf("a later incarnation: %v; want ErrCellLost", err)
	}
	if err := a.Holds(ctx, "s000", 0, 1); !errors.Is(err, ErrCellLost) {
		t.Errorf("a cell never claimed: %v; want ErrCellLost", err)
	}
	// Paused past the lease: b takes s002 over (the first in schedule
	// order); s001 it leaves alone.
	c.set(t0.Add(2 * DefaultLeaseTimeout))
	over, err := b.Claim(ctx, 1)
	if err != nil || len(over) != 1 || over[0].ID != "s002" {
		t.Fatalf("b claimed %+v, %v", over, err)
	}
	if err := a.Holds(ctx, "s002", 2, 1); !errors.Is(err, ErrCellLost) || !strings.Contains(err.Error(), "taken over") {
		t.Errorf("a cell taken over: %v; want ErrCellLost", err)
	}
	if err := a.Holds(ctx, "s001", 1, 1); err != nil {
		t.Errorf("a lapsed cell nobody took: %v; want it renewed", err)
	}
	if a.checks == 0 {
		t.Error("past the lease, Holds did not ask the database")
	}
	// b ran s002 as incarnation 2; a stale copy of incarnation 1 that b
	// itself would store is not the cell's result.
	stale := asRun("s002", 2, 1)
	stale.Incarnation = 1
	if err := b.WriteSessions(ctx, "r", []Session{stale}); err != nil {
		t.Fatal(err)
	}
	if ids, _ := st[1].StoredIDs(ctx, "r"); len(ids) != 0 {
		t.Errorf("stored %v from a lost incarnation", ids)
	}
}

// A renewal writes the worker's heartbeat and no cell: the lease of the
// cells a worker holds is its heartbeat, so a worker holding every cell of
// a batch run renews one row, not each cell's (which, every few seconds
// under SQLite's one writer, made a run of 200,000 waiting sessions fail
// with SQLITE_BUSY). Its cells stay its own past their claim's lease while
// it renews, and another worker takes them over only once it stops.
func testCellRenewalWritesNoCell(t *testing.T) {
	c := &clock{t: t0}
	st := leaseStores(t, c, 2)
	ctx := context.Background()
	const n = 300
	cellRun(t, st[0], "r", n)
	a, err := st[0].Join(ctx, "r", Holder{Host: "h", PID: 1, Name: "a"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := st[1].Join(ctx, "r", Holder{Host: "h", PID: 2, Name: "b"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cs, err := a.Claim(ctx, n-1); err != nil || len(cs) != n-1 {
		t.Fatalf("a claimed %d cells, %v", len(cs), err)
	}
	cells := func() string {
		t.Helper()
		rows, err := st[0].db.QueryContext(ctx, `SELECT session_id, state, token, holder, lease_until, claims, lost_holder FROM cells WHERE run_id = $1 ORDER BY session_id`, "r")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var b strings.Builder
		for rows.Next() {
			var id, state, token, holder, lost string
			var until int64
			var claims int
			if err := rows.Scan(&id, &state, &token, &holder, &until, &claims, &lost); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintln(&b, id, state, token, holder, until, claims, lost)
		}
		return b.String()
	}
	before := cells()
	// a renews, past the lease its claim gave and beyond: no cell row
	// changes, its heartbeat does, and b finds only the one open cell.
	for k := 1; k <= 3; k++ {
		c.set(t0.Add(time.Duration(k) * DefaultLeaseTimeout * 3 / 4))
		if err := a.renew(ctx); err != nil {
			t.Fatal(err)
		}
		was, is := strings.Split(before, "\n"), strings.Split(cells(), "\n")
		var changed []string
		for i := range was {
			if is[i] != was[i] {
				changed = append(changed, is[i])
			}
		}
		if len(changed) > 0 {
			t.Fatalf("renewal %d rewrote %d cells, the first to %s", k, len(changed), changed[0])
		}
	}
	ws, err := st[1].Workers(ctx, "r")
	if i := slices.IndexFunc(ws, func(w WorkerInfo) bool { return w.Holder.Name == "a" }); err != nil || i < 0 || !ws[i].Heartbeat.Equal(t0.Add(DefaultLeaseTimeout*9/4)) {
		t.Errorf("workers %+v, %v; want a's heartbeat at its last renewal", ws, err)
	}
	if err := b.renew(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := b.Claim(ctx, n)
	if err != nil || len(got) != 1 || got[0].Lost != nil {
		t.Fatalf("b claimed %+v, %v while a renews; want only the open cell", got, err)
	}
	if err := a.Holds(ctx, "s001", 1, 1); err != nil || a.checks != 0 {
		t.Errorf("a's cell after its renewals: %v (%d renewals by Holds); want held, from memory", err, a.checks)
	}
	// a stops renewing: past its lease, b takes every cell over.
	c.set(t0.Add(DefaultLeaseTimeout*9/4 + DefaultLeaseTimeout + time.Second))
	over, err := b.Claim(ctx, n)
	if err != nil || len(over) != n-1 || over[0].Lost == nil || over[0].Incarnation != 2 {
		t.Fatalf("b took over %+v, %v; want a's %d cells", over, err, n-1)
	}
	if err := a.Holds(ctx, "s001", 1, 1); !errors.Is(err, ErrCellLost) {
		t.Errorf("a's cell taken over: %v; want ErrCellLost", err)
	}
}

// twoWorkers makes a run "r" of three cells on two stores of one location
// with a test clock, and joins worker a on the first and worker b on the
// second.
func twoWorkers(t *testing.T) (*clock, []*Store, *Worker, *Worker) {
	t.Helper()
	c := &clock{t: t0}
	st := leaseStores(t, c, 2)
	cellRun(t, st[0], "r", 3)
	var w [2]*Worker
	for k, name := range []string{"worker a", "worker b"} {
		var err error
		if w[k], err = st[k].Join(context.Background(), "r", Holder{Host: "h", PID: k + 1, Name: name}, nil); err != nil {
			t.Fatal(err)
		}
	}
	return c, st, w[0], w[1]
}

// ranAs is testSession run as incarnation inc: the session carries it, and
// so does every attempt.
func ranAs(id string, seq, inc int) Session {
	se := asRun(id, seq, inc)
	se.Incarnation = inc
	return se
}

// A cell is stored once, as the incarnation that holds it, whatever else a
// batch carries of it. A worker that ran a session as incarnation 1 and,
// its lease lapsed, as incarnation 2 (its claim took its own lapsed cell,
// or another worker's takeover was given back) may hand both records to
// one write: only the record of the incarnation the cell has is its
// result, and a lost incarnation is never stored because a later one, done
// or interrupted, matched the fence in the same batch. (A batch holding
// both once stored the session twice, failing the write with "already
// stored", or stored the lost incarnation while the interrupted later one
// opened the cell again, for the next incarnation to be stored over it.)
func testCellStoredOnceFromOneBatch(t *testing.T) {
	c, st, a, b := twoWorkers(t)
	ctx := context.Background()
	if cs, err := a.Claim(ctx, 2); err != nil || len(cs) != 2 || cs[0].ID != "s002" || cs[1].ID != "s001" {
		t.Fatalf("a claimed %+v, %v", cs, err)
	}
	// a's lease lapses; b takes both cells over as incarnation 2 and gives
	// them back (it stops), and a claims them again, as incarnation 3.
	c.set(t0.Add(2 * DefaultLeaseTimeout))
	if cs, err := b.Claim(ctx, 2); err != nil || len(cs) != 2 || cs[0].Incarnation != 2 {
		t.Fatalf("b claimed %+v, %v", cs, err)
	}
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := a.Claim(ctx, 2)
	if err != nil || len(again) != 2 || again[0].ID != "s002" || again[0].Incarnation != 3 || again[1].Incarnation != 3 {
		t.Fatalf("a claimed again %+v, %v; want s002 and s001 as incarnation 3", again, err)
	}
	// One batch: both of a's records of s002, complete; of s001, the lost
	// incarnation complete and the holding one interrupted.
	cut := interruptedSession("s001", 1)
	for i := range cut.Attempts {
		cut.Attempts[i].Incarnation = 3
	}
	cut.Incarnation = 3
	batch := []Session{ranAs("s002", 2, 1), ranAs("s002", 2, 3), ranAs("s001", 1, 1), cut}
	if err := a.WriteSessions(ctx, "r", batch); err != nil {
		t.Fatalf("writing both incarnations in one batch: %v", err)
	}
	stored, err := st[1].StoredIDs(ctx, "r")
	if err != nil || len(stored) != 1 || stored["s002"] != SessionComplete {
		t.Fatalf("stored %v, %v; want only s002", stored, err)
	}
	se, err := st[1].Session(ctx, "r", "s002")
	if err != nil {
		t.Fatal(err)
	}
	by := map[int]int{}
	for _, at := range se.Attempts {
		by[at.Incarnation]++
	}
	n := len(testSession("x", 0).Attempts)
	// Incarnation 1: a's attempts and b's record of its takeover; 3: a's
	// (b gave incarnation 2 back before making a call).
	if by[1] != n+1 || by[3] != n {
		t.Errorf("attempts of s002 by incarnation = %v; want %d of 1 (and the takeover record), %d of 3", by, n, n)
	}
	if cc, _ := st[0].Cells(ctx, "r"); cc != (CellCounts{Open: 2, Done: 1}) {
		t.Errorf("cells = %+v; want s001 open again (and s000 never claimed), s002 done", cc)
	}
	// s001 runs again, as incarnation 4, and is stored once.
	next, err := a.Claim(ctx, 1)
	if err != nil || len(next) != 1 || next[0].ID != "s001" || next[0].Incarnation != 4 {
		t.Fatalf("claimed %+v, %v; want s001 as incarnation 4", next, err)
	}
	if err := a.WriteSessions(ctx, "r", []Session{ranAs("s001", 1, 4)}); err != nil {
		t.Fatalf("storing the next incarnation of a cell whose lost one was in a batch: %v", err)
	}
}

// A worker does not take over its own cells whose lease lapsed (its
// heartbeat stalled): it still runs them, and a claim taking one as the
// next incarnation would run the session twice in one process and throw
// the first run's calls away. Another worker takes them.
func testCellsNotTakenOverBySelf(t *testing.T) {
	c, _, a, b := twoWorkers(t)
	ctx := context.Background()
	if cs, err := a.Claim(ctx, 1); err != nil || len(cs) != 1 || cs[0].ID != "s002" {
		t.Fatalf("a claimed %+v, %v", cs, err)
	}
	c.set(t0.Add(2 * DefaultLeaseTimeout))
	cs, err := a.Claim(ctx, 1)
	if err != nil || len(cs) != 1 || cs[0].ID != "s001" || cs[0].Incarnation != 1 {
		t.Fatalf("a claimed %+v, %v past its lease; want the open s001, not its own s002 again", cs, err)
	}
	if err := a.Holds(ctx, "s002", 2, 1); err != nil {
		t.Errorf("a's own lapsed cell: %v; want it still a's", err)
	}
	// a's renewal by Holds moved its lease on: past it again, b takes
	// s002 over.
	c.set(t0.Add(4 * DefaultLeaseTimeout))
	over, err := b.Claim(ctx, 3)
	if err != nil || len(over) != 3 || over[0].ID != "s002" || over[0].Incarnation != 2 || over[0].Lost == nil {
		t.Fatalf("b claimed %+v, %v; want s002 taken over first", over, err)
	}
}
