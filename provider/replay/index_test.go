package replay

import (
	"math/rand/v2"
	"testing"
)

// The index answers as a map of the whole prefix would: the position of
// the last put of each prefix, however many prefixes share the 32 bits an
// entry keeps (told apart by the prefix read back at a position), through
// its shards' growth and for positions past what a slot holds.
func TestLineIndexAnswersAsAMap(t *testing.T) {
	for _, tc := range []struct {
		name   string
		maxPos uint64
	}{{"slots", 1<<posBits - 2}, {"positions past the slots", 5_000}} {
		t.Run(tc.name, func(t *testing.T) {
			x := newLineIndex()
			x.maxPos = tc.maxPos
			rng := rand.New(rand.NewPCG(1, 2))
			want := map[uint64]uint64{} // prefix -> pos
			at := map[uint64]uint64{}   // pos -> prefix, the journal's lines
			prefixAt := func(pos uint64) (uint64, bool) {
				p, ok := at[pos]
				return p, ok
			}
			var prefixes []uint64
			pos := uint64(0)
			for i := range 60_000 {
				var p uint64
				switch {
				case i%7 == 3 && len(prefixes) > 0:
					// A prefix again: its new line replaces the old one.
					p = prefixes[rng.IntN(len(prefixes))]
				case i%5 == 1 && len(prefixes) > 0:
					// Another prefix with the same first 32 bits.
					p = prefixes[rng.IntN(len(prefixes))]&^(1<<32-1) | uint64(rng.Uint32())
				default:
					p = rng.Uint64()
				}
				pos += 1 + uint64(rng.IntN(3))
				at[pos] = p
				x.put(p, pos, prefixAt)
				want[p] = pos
				prefixes = append(prefixes, p)
			}
			family := map[uint64]int{}
			for p := range want {
				family[p>>32]++
			}
			if x.Len() != len(want) {
				t.Errorf("%d prefixes indexed, want %d", x.Len(), len(want))
			}
			for p, wp := range want {
				found, asked := uint64(0), 0
				x.get(p, func(pos uint64) bool {
					asked++
					if at[pos] == p {
						found = pos
						return true
					}
					return false
				})
				if found != wp {
					t.Fatalf("prefix %x: position %d, want %d", p, found, wp)
				}
				if asked > family[p>>32] {
					// Only the lines of prefixes with the same 32 bits
					// are read.
					t.Errorf("prefix %x: %d positions read for it, %d prefixes share its 32 bits", p, asked, family[p>>32])
				}
			}
			x.get(rng.Uint64(), func(pos uint64) bool {
				if at[pos]>>32 == 0 {
					t.Errorf("a prefix never put gave position %d", pos)
				}
				return false
			})
			slots := 0
			for _, sh := range x.shards {
				slots += len(sh.slots)
			}
			if tc.maxPos > pos && (slots*8 > len(want)*16 || len(x.over) != 0) {
				t.Errorf("%d slots (%d bytes) for %d prefixes, %d past the slots", slots, slots*8, len(want), len(x.over))
			}
			if tc.maxPos < pos && len(x.over) == 0 {
				t.Error("no position went past the slots")
			}
		})
	}
}
