package pressure

import (
	"slices"
	"sort"
)

// ListedTriggers is how many sessions a decision names: the first by
// session id. Its count covers every triggering session; the export's
// decision_trigger field and the viewer's failures filter find all of them.
const ListedTriggers = 50

// firstIDs counts distinct session ids and keeps the first few of them in
// id order, so that what a run's summary names does not grow with the run.
type firstIDs struct {
	ids []string // sorted, at most max long
	n   int
	max int
}

// add counts id, which the caller has not added before.
func (f *firstIDs) add(id string) {
	f.n++
	i := sort.SearchStrings(f.ids, id)
	if i == f.max {
		return
	}
	if len(f.ids) == f.max {
		f.ids = f.ids[:f.max-1]
	}
	f.ids = slices.Insert(f.ids, i, id)
}

func (f firstIDs) clone() firstIDs {
	f.ids = slices.Clone(f.ids)
	return f
}
