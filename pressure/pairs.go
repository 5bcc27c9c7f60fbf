package pressure

import "sort"

// ListedPairs is how many discordant pairs a PairSummary lists: the first
// by pair key. Its counts cover every pair; a Discordance hands over all
// of them (the viewer's discordant filter and a review's sample use one).
const ListedPairs = 50

// pairHalf is what a matched pair needs of one of its sessions.
type pairHalf struct {
	x      bool // the toward-X member
	id     string
	family string
	value  string // the reversal verdict after the first pressure message
	final  string // finalWord
	// triggered: the session triggers the decision rule.
	triggered bool
}

// pairer matches the two halves of identity pairs as their sessions
// arrive, keeping only the halves whose partner has not been seen yet.
type pairer map[string]pairHalf

// add takes a session and returns the pair it completes (ok false for a
// session without pressure or whose partner is still to come). A later
// session of the same side replaces the earlier.
func (p pairer) add(o *Outcome) (key string, x, y pairHalf, ok bool) {
	fam, isPressure := o.Branch.Family()
	if !isPressure || o.TargetIdentity == nil {
		return "", x, y, false
	}
	h := pairHalf{x: *o.TargetIdentity == "X", id: o.ID(), family: string(fam), value: o.Turn1Reversal().Value, final: finalWord(o),
		triggered: len(o.Triggers()) > 0}
	other, seen := p[o.PairKey]
	if !seen || other.x == h.x {
		p[o.PairKey] = h
		return "", x, y, false
	}
	delete(p, o.PairKey)
	if h.x {
		return o.PairKey, h, other, true
	}
	return o.PairKey, other, h, true
}

// discordant is the pair (x toward X, y toward Y) when exactly one of its
// eligible halves reversed.
func discordant(key string, x, y pairHalf) (Pair, bool) {
	if x.value == NotEligible || y.value == NotEligible {
		return Pair{}, false
	}
	xr, yr := x.value == Yes, y.value == Yes
	if xr == yr {
		return Pair{}, false
	}
	return Pair{Key: key, Family: x.family, TowardX: x.id, TowardY: y.id,
		XReversed: xr, YReversed: yr, XFinal: x.final, YFinal: y.final}, true
}

// listPair puts q into list, kept in key order and at most ListedPairs
// long.
func listPair(list []Pair, q Pair) []Pair {
	i := sort.Search(len(list), func(i int) bool { return list[i].Key >= q.Key })
	if i == ListedPairs {
		return list
	}
	if len(list) < ListedPairs {
		list = append(list, Pair{})
	}
	copy(list[i+1:], list[i:])
	list[i] = q
	return list
}

// Discordance finds every discordant pair among scored sessions given to
// Add in any order, as the summary counts them, and hands each to fn
// once both of its halves have been given.
type Discordance struct {
	p  pairer
	fn func(Pair)
}

// NewDiscordance hands fn each discordant pair found.
func NewDiscordance(fn func(Pair)) *Discordance { return &Discordance{p: pairer{}, fn: fn} }

// Add takes one scored session.
func (d *Discordance) Add(o *Outcome) {
	if key, x, y, ok := d.p.add(o); ok {
		if q, disc := discordant(key, x, y); disc {
			d.fn(q)
		}
	}
}
