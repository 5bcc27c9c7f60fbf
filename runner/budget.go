package runner

import "sync"

// Budget stops a run before its cost would pass a limit. A session is
// admitted only when what was spent, plus what admitted sessions have
// reserved, plus its own projected cost stays under the limit; after the
// first refusal no session starts. Every call also reserves its worst case
// (its request at 3 characters a token, and the full max output tokens)
// and is not made when that could pass the limit: its session stops as
// interrupted, a missing cell that `budge run --resume` completes later.
// So a run stops cleanly, and its cost stays under the limit as long as no
// call costs more than its worst case.
type Budget struct {
	Limit      float64                   // dollars
	PerSession float64                   // projected cost of one session
	MaxOutput  int                       // max output tokens of one call
	Price      func(in, out int) float64 // cost of one call's tokens

	mu            sync.Mutex
	spent         float64
	reserved      float64 // by sessions in flight
	reservedCalls float64 // by calls in flight
	refused       bool
}

// Admit reserves a session's projected cost, or refuses it.
func (b *Budget) Admit() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.refused || b.spent+b.reserved+b.PerSession > b.Limit {
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
	if b.spent+b.reservedCalls+worst > b.Limit {
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
}

// Spent is the running cost; Refused says whether a session or a call was
// refused.
func (b *Budget) Spent() (spent float64, refused bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.spent, b.refused
}
