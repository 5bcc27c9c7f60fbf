package runner

import (
	"sync"
	"time"
)

// Budget stops a run before its cost would pass a limit. A session is
// admitted only when what was spent, plus what admitted sessions have
// reserved, plus its own projected cost stays under the limit; after the
// first refusal no session starts. Every call also reserves its worst case
// (its request at 3 characters a token, and the full max output tokens)
// and is not made when that could pass the limit: its session stops as
// interrupted, a missing cell that `budge run --resume` completes later.
// So a run stops cleanly, and its cost stays under the limit as long as no
// call costs more than its worst case.
//
// With a Ledger, the limit is shared by every process running the run
// (workers): each adds what it spends to the ledger a few times a second
// and counts what the others spent, as of its last look, as spent. The
// others' calls in flight are not seen, so together they can pass the limit
// by at most what their calls in flight and one sync interval cost.
type Budget struct {
	Limit      float64                   // dollars
	PerSession float64                   // projected cost of one session
	MaxOutput  int                       // max output tokens of one call
	Price      func(in, out int) float64 // cost of one call's tokens
	// Ledger, when set, adds delta dollars to the run's shared spending
	// and returns the run's spending in all.
	Ledger func(delta float64) (total float64, err error)

	mu            sync.Mutex
	spent         float64
	others        float64 // spent by other processes, as of the last sync
	reserved      float64 // by sessions in flight
	reservedCalls float64 // by calls in flight
	parked        float64 // of reservedCalls, by calls parked for a batch's wave
	refused       bool

	syncMu   sync.Mutex // one sync at a time
	synced   float64    // of spent, what the ledger has
	lastSync time.Time
	syncErr  error
}

// ledgerEvery is how often a budget with a ledger syncs at most, unless
// its unsynced spending passes a hundredth of the limit.
const ledgerEvery = 200 * time.Millisecond

// Sync adds this process's unsynced spending to the ledger and reads what
// the others spent. Without a ledger it does nothing.
func (b *Budget) Sync() error {
	if b.Ledger == nil {
		return nil
	}
	b.syncMu.Lock()
	defer b.syncMu.Unlock()
	b.mu.Lock()
	delta, spent := b.spent-b.synced, b.spent
	b.mu.Unlock()
	total, err := b.Ledger(delta)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lastSync, b.syncErr = time.Now(), err
	if err != nil {
		return err
	}
	b.synced = spent
	// What the ledger holds beyond this process's synced spending is the
	// others'.
	b.others = max(0, total-spent)
	return nil
}

// maybeSync syncs when the last sync is old or much is unsynced.
func (b *Budget) maybeSync() {
	if b.Ledger == nil {
		return
	}
	b.mu.Lock()
	due := time.Since(b.lastSync) >= ledgerEvery || b.spent-b.synced >= b.Limit/100
	b.mu.Unlock()
	if due {
		b.Sync()
	}
}

// Admit reserves a session's projected cost, or refuses it.
func (b *Budget) Admit() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.refused || b.spent+b.others+b.reserved+b.PerSession > b.Limit {
		b.refused = true
		return false
	}
	b.reserved += b.PerSession
	return true
}

// Release ends a session's reservation.
func (b *Budget) Release() {
	b.mu.Lock()
	b.reserved -= b.PerSession
	b.mu.Unlock()
}

// Call reserves the worst-case cost of a call whose request body has n
// bytes, or refuses the call.
func (b *Budget) Call(n int) (float64, bool) {
	if b.Price == nil {
		return 0, true
	}
	worst := b.Price(n/3+1, b.MaxOutput)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.spent+b.others+b.reservedCalls+worst > b.Limit {
		b.refused = true
		return 0, false
	}
	b.reservedCalls += worst
	return worst, true
}

// Settle ends a call's reservation and adds what it cost.
func (b *Budget) Settle(reserved float64, in, out int) {
	c := 0.0
	if b.Price != nil {
		c = b.Price(in, out)
	}
	b.mu.Lock()
	b.reservedCalls -= reserved
	b.spent += c
	b.mu.Unlock()
	b.maybeSync()
}

// Spent is the running cost; Refused says whether a session or a call was
// refused.
func (b *Budget) Spent() (spent float64, refused bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.spent, b.refused
}

// Park keeps the reservation of a call a batch holds for its next wave
// (ErrParked) until Unpark: the wave's calls count against the limit
// while they wait, as calls in flight do.
func (b *Budget) Park(reserved float64) {
	b.mu.Lock()
	b.parked += reserved
	b.mu.Unlock()
}

// Unpark ends the reservations of the parked calls once their wave is in:
// the sessions that asked them settle each call's cost when they run
// again.
func (b *Budget) Unpark() {
	b.mu.Lock()
	b.reservedCalls -= b.parked
	b.parked = 0
	b.mu.Unlock()
}
