package replay

import "math/bits"

// lineIndex maps the first 8 bytes of a key (its prefix) to where its line
// starts in the journal: a position counted across the journal's files
// (pos). It is what a batch run's memory grows by with its sessions (about
// three answers a session), so it keeps an entry in one 8-byte slot of an
// open-addressing table: 24 bits of the prefix and the position (40 bits,
// a terabyte of journal). Slots are 53-80% full, about 12 bytes an answer
// (36 MB for the 3 million answers of a million-session batch run, where
// Go's map of the whole prefix took 25 bytes, 75 MB).
//
// The table is split in 256 shards by the prefix's first byte, so growing
// one moves a 256th of the entries (Go's map grows in steps as small). An
// entry keeps the prefix's next 24 bits (its tag), which also place it in
// its shard. Two prefixes with the same 32 bits are told apart by the
// prefix read back from the journal (prefixAt), so an entry is replaced
// only by its own prefix, as a map's would be: the index answers exactly
// as a map of the whole prefix. A lookup gives every position whose entry
// has the prefix's 32 bits, and the reader checks the whole key at each.
// A position past 40 bits goes to an exact map instead.
type lineIndex struct {
	shards [256]indexShard
	over   map[uint64]uint64 // prefix -> pos, for positions past maxPos
	n      int
	maxPos uint64 // the largest position a slot holds (tests lower it)
}

type indexShard struct {
	slots []uint64 // tag<<posBits | pos+1; 0 is empty
	n     int
}

const (
	posBits = 40
	tagBits = 64 - posBits
)

func newLineIndex() *lineIndex { return &lineIndex{maxPos: 1<<posBits - 2} }

// Len is how many prefixes the index holds.
func (x *lineIndex) Len() int { return x.n }

// split is the shard and tag of a prefix.
func split(prefix uint64) (shard int, tag uint64) {
	return int(prefix >> 56), prefix >> (56 - tagBits) & (1<<tagBits - 1)
}

// home is where a tag's probe starts in slots of length n.
func home(tag uint64, n int) int {
	hi, _ := bits.Mul64(tag<<(64-tagBits), uint64(n))
	return int(hi)
}

// put indexes pos under prefix, replacing the position an earlier put of
// the same prefix gave. prefixAt reads the prefix of the line at a
// position (false when it cannot be read).
func (x *lineIndex) put(prefix, pos uint64, prefixAt func(pos uint64) (uint64, bool)) {
	if x.over != nil {
		if _, ok := x.over[prefix]; ok {
			x.over[prefix] = pos
			return
		}
	}
	s, tag := split(prefix)
	sh := &x.shards[s]
	if pos > x.maxPos {
		// A position no slot holds: an earlier entry of the prefix in the
		// slots is shadowed by this one (get reads over first).
		if x.over == nil {
			x.over = map[uint64]uint64{}
		}
		if _, ok := sh.find(tag, prefix, prefixAt); !ok {
			x.n++
		}
		x.over[prefix] = pos
		return
	}
	if i, ok := sh.find(tag, prefix, prefixAt); ok {
		sh.slots[i] = tag<<posBits | (pos + 1)
		return
	}
	if (sh.n+1)*5 > len(sh.slots)*4 {
		sh.grow()
	}
	sh.insert(tag<<posBits | (pos + 1))
	sh.n++
	x.n++
}

// find is the slot of prefix's entry.
func (sh *indexShard) find(tag, prefix uint64, prefixAt func(uint64) (uint64, bool)) (int, bool) {
	n := len(sh.slots)
	if n == 0 {
		return 0, false
	}
	for i := home(tag, n); ; i++ {
		if i == n {
			i = 0
		}
		v := sh.slots[i]
		if v == 0 {
			return 0, false
		}
		if v>>posBits == tag {
			if p, ok := prefixAt(v&(1<<posBits-1) - 1); ok && p == prefix {
				return i, true
			}
		}
	}
}

// insert places a slot's value at the first empty slot from its home.
func (sh *indexShard) insert(v uint64) {
	n := len(sh.slots)
	for i := home(v>>posBits, n); ; i++ {
		if i == n {
			i = 0
		}
		if sh.slots[i] == 0 {
			sh.slots[i] = v
			return
		}
	}
}

// grow makes the shard half as large again (at least 8 slots).
func (sh *indexShard) grow() {
	old := sh.slots
	sh.slots = make([]uint64, max(8, len(old)*3/2))
	for _, v := range old {
		if v != 0 {
			sh.insert(v)
		}
	}
}

// get calls fn with each position that may be prefix's line, until fn
// says true (the line's whole key is the one asked for).
func (x *lineIndex) get(prefix uint64, fn func(pos uint64) bool) {
	if x.over != nil {
		if pos, ok := x.over[prefix]; ok {
			fn(pos)
			return
		}
	}
	s, tag := split(prefix)
	sh := &x.shards[s]
	n := len(sh.slots)
	if n == 0 {
		return
	}
	for i := home(tag, n); ; i++ {
		if i == n {
			i = 0
		}
		v := sh.slots[i]
		if v == 0 {
			return
		}
		if v>>posBits == tag && fn(v&(1<<posBits-1)-1) {
			return
		}
	}
}
