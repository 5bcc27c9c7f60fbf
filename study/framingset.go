package study

import (
	"context"
	"fmt"
	"io"

	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/store"
)

// FramingRuns are stored framing runs reported together: one is its own
// report, several are each one's report and then the item-level agreement
// across them.
type FramingRuns []*FramingResult

// LoadFramingRuns loads the framing runs refs name, each checked against
// its stored artifacts; a run of another protocol is invalid input.
func LoadFramingRuns(ctx context.Context, st *store.Store, refs []string) (FramingRuns, error) {
	runs := make(FramingRuns, len(refs))
	for i, ref := range refs {
		fr, err := LoadFraming(ctx, st, ref)
		if err != nil {
			return nil, err
		}
		if err := st.VerifyArtifacts(ctx, fr.Run.ID); err != nil {
			return nil, err
		}
		runs[i] = fr
	}
	return runs, nil
}

// Render writes the runs' report in format: text, md or json, or html for
// one run.
func (rs FramingRuns) Render(ctx context.Context, st *store.Store, w io.Writer, format string) error {
	if len(rs) == 1 {
		return rs[0].Render(ctx, st, w, format)
	}
	if format == "html" {
		return fmt.Errorf("%w: --format must be text, md or json (or html for one run), got %q", ErrInvalid, format)
	}
	return rs.Set().Render(w, format)
}

// Set is the report of several framing runs, with the item-level
// agreement across them: items are matched by content.
func (rs FramingRuns) Set() report.FramingSet {
	var set report.FramingSet
	var names []string
	var sums []*framing.Summary
	var items [][]framing.Item
	for _, r := range rs {
		set.Reports = append(set.Reports, r.Report())
		names = append(names, r.Run.ID+" ("+r.Manifest.Model+")")
		sums = append(sums, r.Summary)
		var its []framing.Item
		if r.Snapshot != nil {
			its = r.Snapshot.Items
		}
		items = append(items, its)
	}
	set.Agreement = framing.AgreementOf(names, sums, items)
	return set
}
