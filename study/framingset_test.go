package study

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/testkit/storetest"
)

// runItems runs the framing protocol on the items of a JSONL text and
// returns the run's id.
func runItems(t *testing.T, st *store.Store, items string) string {
	t.Helper()
	data := filepath.Join(t.TempDir(), "items.jsonl")
	if err := os.WriteFile(data, []byte(items), 0o644); err != nil {
		t.Fatal(err)
	}
	o := DefaultFramingOptions()
	o.Data = data
	o.Bootstrap.Resamples = 50
	res, err := As[*FramingResult](Start(context.Background(), st, o))
	if err != nil {
		t.Fatal(err)
	}
	return res.Run.ID
}

// Two runs whose data files reuse ids for different questions (as
// TruthfulQA's two versions do) are compared by content: a reused id is
// warned about and not compared, the same question under another id is.
// One run is its own report; several in html are refused.
func TestFramingRunsAgreementMatchesByContent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.Open(t)
	a := runItems(t, st, `{"id": "truthfulqa-1", "domain": "tq", "question": "What color is the sky on a clear day?", "correct": "Blue", "incorrect": "Green"}
{"id": "truthfulqa-2", "domain": "tq", "question": "How many days are in a week?", "correct": "Seven", "incorrect": "Ten"}
{"id": "truthfulqa-3", "domain": "tq", "question": "What do bees make?", "correct": "Honey", "incorrect": "Milk"}
`)
	b := runItems(t, st, `{"id": "truthfulqa-1", "domain": "tq", "question": "What color is the sky on a clear day?", "correct": "Blue", "incorrect": "Green"}
{"id": "truthfulqa-2", "domain": "tq", "question": "What is the boiling point of water at sea level?", "correct": "100 °C", "incorrect": "50 °C"}
{"id": "truthfulqa-9", "domain": "tq", "question": "What do bees make?", "correct": "Honey", "incorrect": "Milk"}
`)
	runs, err := LoadFramingRuns(ctx, st, []string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runs.Render(ctx, st, &out, "json"); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Agreement struct {
			Matched     int      `json:"matched_items"`
			Unmatched   []int    `json:"unmatched_items"`
			IDConflicts int      `json:"id_conflicts"`
			Warnings    []string `json:"warnings"`
			All         struct{ Items int }
		}
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	ag := rep.Agreement
	if ag.Matched != 2 || len(ag.Unmatched) != 2 || ag.Unmatched[0] != 1 || ag.Unmatched[1] != 1 || ag.All.Items != 2 {
		t.Errorf("matched %d, unmatched %v, compared %d; want 2, [1 1], 2", ag.Matched, ag.Unmatched, ag.All.Items)
	}
	if ag.IDConflicts != 1 || len(ag.Warnings) != 1 || !strings.Contains(ag.Warnings[0], `id "truthfulqa-2" names different items`) {
		t.Errorf("id conflicts %d, warnings %q", ag.IDConflicts, ag.Warnings)
	}
	out.Reset()
	if err := runs.Render(ctx, st, &out, "text"); err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(out.String()), " ")
	for _, want := range []string{"items matched by content (question, both answers, context, dialogue), not by id: 2 in every run; unmatched: 1 in", "warning: id \"truthfulqa-2\""} {
		if !strings.Contains(text, want) {
			t.Errorf("text report lacks %q:\n%s", want, out.String())
		}
	}
	if err := runs.Render(ctx, st, &bytes.Buffer{}, "html"); !errors.Is(err, ErrInvalid) {
		t.Errorf("two runs in html: %v, want invalid input", err)
	}
	one, err := LoadFramingRuns(ctx, st, []string{a})
	if err != nil {
		t.Fatal(err)
	}
	var own, alone bytes.Buffer
	if err := one.Render(ctx, st, &own, "md"); err != nil {
		t.Fatal(err)
	}
	if err := one[0].Render(ctx, st, &alone, "md"); err != nil || own.String() != alone.String() {
		t.Errorf("one run's report differs from the run's own (%v)", err)
	}
	pressure := runModel(t, st, "sim")
	if _, err := LoadFramingRuns(ctx, st, []string{a, pressure}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a pressure run among framing runs: %v, want invalid input", err)
	}
}
