package report

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Splits counts a framing run's items by train/test split ("" when the data
// declared none and none was assigned).
type Splits map[string]int

// SplitAssumed is the Splits key of items whose split the data did not
// declare: DialDefer benchmark items, evaluation data by rule.
const SplitAssumed = "test by rule (a DialDefer benchmark file that declares no split)"

// Line is the count of items per split, in split order.
func (s Splits) Line() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(s)) {
		name := k
		if name == "" {
			name = "no split"
		}
		parts = append(parts, fmt.Sprintf("%s %d", name, s[k]))
	}
	return strings.Join(parts, ", ")
}

// paras says how many items of each split were evaluated, and warns when
// training items were: a model fine-tuned on them has seen them, so its
// scores on them are not held-out scores.
func (s Splits) paras(d *doc) {
	if len(s) == 0 {
		return
	}
	d.para("items evaluated by split: " + s.Line())
	if n := s["train"]; n > 0 {
		d.para(fmt.Sprintf("warning: %d evaluated items belong to a training split; a model fine-tuned on that split has seen them, so their scores are not held-out (export-training withholds every item evaluated here)", n))
	}
}
