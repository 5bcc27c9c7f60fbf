package cli

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/buildlab/budge/provider/batch"
)

// defaultBatchSessions is the most requests in one wave of a --batch run
// unless --concurrency says otherwise: the most requests one wave holds.
const defaultBatchSessions = 100_000

// batchPrinter prints a batch run's waves and the states of its batches
// on stderr, one line each.
func batchPrinter(std IO) func(batch.Event) {
	return func(e batch.Event) {
		switch {
		case e.Requests > 0 && e.Note == "":
			fmt.Fprintf(std.Err, "batch: wave %d: %d request(s) in %d batch(es); the provider's window is %s\n", e.Wave, e.Requests, e.Batches, e.Window)
		case len(e.Counts) > 0:
			var parts []string
			for _, k := range slices.Sorted(maps.Keys(e.Counts)) {
				parts = append(parts, fmt.Sprintf("%s %d", k, e.Counts[k]))
			}
			fmt.Fprintf(std.Err, "batch: wave %d: %s (%s)\n", e.Wave, e.Note, strings.Join(parts, ", "))
		case e.Note != "":
			fmt.Fprintf(std.Err, "batch: %s\n", e.Note)
		}
	}
}

// intList is a repeatable integer flag.
type intList []int

func (l *intList) String() string { return fmt.Sprint([]int(*l)) }

func (l *intList) Set(v string) error {
	var n int
	if _, err := fmt.Sscan(v, &n); err != nil {
		return fmt.Errorf("not a whole number: %q", v)
	}
	*l = append(*l, n)
	return nil
}
