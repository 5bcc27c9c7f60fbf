package study

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/store"
)

// EvaluatedItems maps the content key (framing.ContentKey) of every item
// of every framing run in the store to the id of the newest run that
// evaluated it. Fine-tuning data must never contain these items, whatever
// id or split they carry elsewhere. It reads only the stored item
// snapshots, not the transcripts.
func EvaluatedItems(ctx context.Context, st *store.Store) (map[string]string, error) {
	runs, err := st.ListRuns(ctx)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	out := map[string]string{}
	for _, run := range runs { // newest first
		if run.Protocol != "framing" || seen[run.DeckHash] {
			continue
		}
		seen[run.DeckHash] = true
		_, content, err := st.Deck(ctx, run.DeckHash)
		if err != nil {
			return nil, err
		}
		var snap FramingSnapshot
		if err := json.Unmarshal(content, &snap); err != nil {
			return nil, fmt.Errorf("run %s: stored items are unreadable: %w", run.ID, err)
		}
		for i := range snap.Items {
			k := framing.ContentKey(snap.Items[i])
			if _, ok := out[k]; !ok {
				out[k] = run.ID
			}
		}
	}
	return out, nil
}
