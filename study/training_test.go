package study

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/buildlab/budge/dataset"
	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/testkit/storetest"
)

// A data set with no store: items of a test split are never written, the
// training ones are, two one-token answers each, and the count says what
// was withheld and why.
func TestExportTrainingFromDataNeverWritesTestItems(t *testing.T) {
	data := filepath.Join(t.TempDir(), "items.jsonl")
	os.WriteFile(data, []byte(`{"id": "tr", "domain": "d", "question": "q1", "correct": "a", "incorrect": "b", "split": "train"}
{"id": "te", "domain": "d", "question": "q2", "correct": "a", "incorrect": "b", "split": "test"}
`), 0o644)
	if !TrainingFromData(data) || !TrainingFromData(dataset.SampleName) || TrainingFromData("latest") {
		t.Fatal("a file and the sample are data, a run reference is not")
	}
	tr, err := ExportTraining(context.Background(), nil, TrainingExport{Source: data, TestFraction: 0.2, SplitSeed: 42,
		Records: framing.TrainingOptions{Format: framing.FormatSFT}})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Records) != 2 || tr.Items != 2 || tr.Withheld.Total() != 1 {
		t.Fatalf("%d records of %d items, %d withheld; want 2 of 2, 1", len(tr.Records), tr.Items, tr.Withheld.Total())
	}
	var completions []string
	for _, r := range tr.Records {
		if r.ID != "tr" {
			t.Errorf("record of item %s written", r.ID)
		}
		completions = append(completions, r.Completion)
	}
	if strings.Join(completions, ",") != "1,2" {
		t.Errorf("completions %q, want the one-token answers 1 and 2", completions)
	}
	if s := tr.String(); !strings.HasPrefix(s, "wrote 2 sft records from 1 training items; withheld 1 of 2 items: ") {
		t.Errorf("summary %q", s)
	}
}

// Exporting from a run writes nothing of that run's items: every one was
// evaluated in the store. A run reference without a store is no store.
func TestExportTrainingFromARunWithholdsItsItems(t *testing.T) {
	ctx := context.Background()
	st := storetest.Open(t)
	o := DefaultFramingOptions()
	o.Bootstrap.Resamples = 50
	res, err := As[*FramingResult](Start(ctx, st, o))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := ExportTraining(ctx, st, TrainingExport{Source: res.Run.ID, TestFraction: 0.5, SplitSeed: 42,
		Records: framing.TrainingOptions{Format: framing.FormatDPO}})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Records) != 0 || tr.Items != len(res.Snapshot.Items) || tr.Withheld.Total() != tr.Items || !strings.Contains(tr.String(), "evaluated in a stored run") {
		t.Errorf("export of an evaluated run: %d records, %s", len(tr.Records), tr)
	}
	if _, err := ExportTraining(ctx, nil, TrainingExport{Source: res.Run.ID}); err == nil {
		t.Error("a run reference without a store exported")
	}
}
