package dataset

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/stats"
)

// Sample draws n items with a seed. With field set it stratifies by that
// metadata field (or "domain"): the n items are spread evenly over the
// strata, a stratum smaller than its share gives all it has and the rest
// goes to the others. Without field it is a simple random sample. The
// sample keeps the input order. n ≤ 0 or n ≥ len(items) returns items.
func Sample(items []framing.Item, n int, field string, seed uint64) []framing.Item {
	if n <= 0 || n >= len(items) {
		return items
	}
	rng := rand.New(rand.NewPCG(seed, 0x73616d706c65))
	strata := map[string][]int{}
	var keys []string
	for i := range items {
		k := ""
		if field != "" {
			k = items[i].MetaString(field)
		}
		if _, ok := strata[k]; !ok {
			keys = append(keys, k)
		}
		strata[k] = append(strata[k], i)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s := strata[k]
		rng.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
	}
	take := map[string]int{}
	left := n
	for left > 0 {
		open := 0
		for _, k := range keys {
			if take[k] < len(strata[k]) {
				open++
			}
		}
		share := max(left/max(open, 1), 1)
		for _, k := range keys {
			if left == 0 {
				break
			}
			add := min(share, len(strata[k])-take[k], left)
			take[k] += add
			left -= add
		}
	}
	var chosen []int
	for _, k := range keys {
		chosen = append(chosen, strata[k][:take[k]]...)
	}
	sort.Ints(chosen)
	out := make([]framing.Item, len(chosen))
	for i, j := range chosen {
		out[i] = items[j]
	}
	return out
}

// AssignSplit puts every item without a split into "test" with probability
// testFraction and into "train" otherwise. The draw is a hash of the seed
// and the item id alone, so an item lands in the same split whatever file,
// order or sample it arrives in: no item can be trained on in one export
// and evaluated in another with the same seed. Items that carry a split
// from their source keep it.
func AssignSplit(items []framing.Item, testFraction float64, seed uint64) {
	for i := range items {
		if items[i].Split != "" {
			continue
		}
		if stats.Draw(seed, items[i].ID) < testFraction {
			items[i].Split = "test"
		} else {
			items[i].Split = "train"
		}
	}
}

// checkField is CheckStratify for the flag that named the field.
func checkField(items []framing.Item, field, flag string) error {
	if field == "" || len(items) == 0 {
		return nil
	}
	fields := map[string]bool{"domain": true, "split": true}
	for i := range items {
		if items[i].MetaString(field) != "" {
			return nil
		}
		for k := range items[i].Meta {
			fields[k] = true
		}
	}
	return fmt.Errorf("%s: no item has the field %q; the items have: %s", flag, field, strings.Join(slices.Sorted(maps.Keys(fields)), ", "))
}
