package study

import (
	"context"
	"fmt"
	"os"
	"slices"

	"github.com/buildlab/budge/dataset"
	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/store"
)

// TrainingExport is what fine-tuning data is made from, and how.
type TrainingExport struct {
	// Source is a data set (a file, a directory or "sample") or a stored
	// framing run (an id, a unique prefix or "latest"): TrainingFromData
	// tells which.
	Source string
	// Templates and Labels are the design a data set is rendered with
	// (budge's defaults when empty); a run is rendered with its own.
	Templates, Labels []string
	// TestFraction of the items without a split of their own are assigned
	// to the test split by a draw seeded with SplitSeed, keyed by item id.
	TestFraction float64
	SplitSeed    uint64
	// Records says the format, the evaluation-only data sets allowed and the
	// pressure variants; what was evaluated and which splits were assigned
	// are ExportTraining's to fill in.
	Records framing.TrainingOptions
}

// Training is fine-tuning data and what was kept out of it.
type Training struct {
	Records  []framing.TrainingRecord
	Format   string
	Items    int              // the items read
	Withheld framing.Withheld // the items never written, per reason
}

// String says what was written and what was kept out, per reason.
func (t *Training) String() string {
	s := fmt.Sprintf("wrote %d %s records from %d training items; withheld %d of %d items", len(t.Records), t.Format, t.Items-t.Withheld.Total(), t.Withheld.Total(), t.Items)
	if t.Withheld.Total() > 0 {
		s += ": " + t.Withheld.String()
	}
	return s
}

// TrainingFromData reports whether source names a data set (a path that
// exists, or the built-in sample) rather than a stored framing run.
func TrainingFromData(source string) bool {
	_, err := os.Stat(source)
	return err == nil || source == dataset.SampleName
}

// ExportTraining makes fine-tuning data from the training split only:
// never an item of an evaluation split (the data's own, or one assigned by
// the seeded draw), of an evaluation-only data set the options do not
// allow, or that any framing run in st evaluated (matched by content).
// Exporting from a run therefore writes nothing of that run's items. st
// may be nil for a data set when there is no store yet.
func ExportTraining(ctx context.Context, st *store.Store, o TrainingExport) (*Training, error) {
	items, d, err := trainingSource(ctx, st, o)
	if err != nil {
		return nil, err
	}
	ro := o.Records
	if st != nil {
		if ro.Evaluated, err = EvaluatedItems(ctx, st); err != nil {
			return nil, err
		}
	}
	if slices.Contains(ro.AllowEval, framing.EvalBenchmark) {
		framing.ReleaseAssumedSplits(items)
	}
	ro.Assigned = assignSplits(items, o.TestFraction, o.SplitSeed)
	recs, withheld, err := framing.TrainingRecords(&d, items, ro)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return &Training{Records: recs, Format: ro.Format, Items: len(items), Withheld: withheld}, nil
}

// trainingSource is the items and design fine-tuning data is made from: a
// data set with the design of the options' templates and labels, or a
// stored framing run's own.
func trainingSource(ctx context.Context, st *store.Store, o TrainingExport) ([]framing.Item, framing.Design, error) {
	if TrainingFromData(o.Source) {
		items, err := dataset.Open(o.Source, dataset.Options{})
		if err != nil {
			return nil, framing.Design{}, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		d, err := BuildDesign(DesignChoice{Templates: o.Templates, Labels: o.Labels, Mode: framing.ModeBaseline, Policy: framing.PolicyWrong})
		return items, d, err
	}
	if st == nil {
		return nil, framing.Design{}, store.ErrNoStore
	}
	fr, err := LoadFraming(ctx, st, o.Source)
	if err != nil {
		return nil, framing.Design{}, err
	}
	return fr.Snapshot.Items, fr.Snapshot.Design, nil
}

// assignSplits gives every item without a split one (dataset.AssignSplit)
// and marks which items got theirs that way.
func assignSplits(items []framing.Item, frac float64, seed uint64) []bool {
	assigned := make([]bool, len(items))
	for i := range items {
		assigned[i] = items[i].Split == ""
	}
	dataset.AssignSplit(items, frac, seed)
	return assigned
}
