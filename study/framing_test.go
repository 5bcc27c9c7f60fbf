package study

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/stats"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/testkit/storetest"
)

// synthetic writes n question items in budge's item format.
func synthetic(t testing.TB, n int) string {
	t.Helper()
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		it := framing.Item{ID: fmt.Sprintf("q%05d", i), Domain: "synthetic",
			Question: fmt.Sprintf("In the reference table, which code is listed for entry number %05d?", i),
			Correct:  fmt.Sprintf("code K%05d", i), Incorrect: fmt.Sprintf("code W%05d", i)}
		json.NewEncoder(&b).Encode(it)
	}
	p := filepath.Join(t.TempDir(), "items.jsonl")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Acceptance: the simulator planted at the seed's worked example (C1 60/80,
// C2 75/65, DDS +30) is recovered by a 1,000-item run within its reported
// interval, and a no-deference profile gives an interval covering 0.
func TestPlantedDDSIsRecovered(t *testing.T) {
	t.Parallel()
	data := synthetic(t, 1000)
	for _, c := range []struct {
		model   string
		planted float64
		reading string
	}{{"sim", 30, framing.ReadingDeference}, {"sim:neutral", 0, framing.ReadingNone}} {
		st, err := store.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		o := DefaultFramingOptions()
		o.Data, o.Model, o.Concurrency = data, c.model, 4
		res, err := As[*FramingResult](Start(context.Background(), st, o))
		st.Close()
		if err != nil {
			t.Fatal(err)
		}
		cell := res.Domain("synthetic")
		if cell.Items != 1000 || !cell.DDS.Covers(c.planted) || cell.Reading != c.reading {
			t.Errorf("%s: DDS %+.1f [%+.1f, %+.1f] over %d items, reading %q; planted %+.0f",
				c.model, cell.DDS.Value, *cell.DDS.CILo, *cell.DDS.CIHi, cell.Items, cell.Reading, c.planted)
		}
		if res.Run.Status != store.RunComplete || res.Manifest.Counts.Complete != 4000 {
			t.Errorf("%s: status %s, %d complete", c.model, res.Run.Status, res.Manifest.Counts.Complete)
		}
	}
}

// A run crossing templates, labels, mitigations and challenges reloads from
// the store with identical measures.
func TestFramingRunReloadsIdentically(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t)
	o := DefaultFramingOptions()
	o.Model = "sim:mitigable"
	o.Bootstrap = stats.Bootstrap{Resamples: 500, Level: 0.95, Seed: 3}
	plain, _ := framing.OpenTemplates("budge-plain")
	o.Design.Templates = append(o.Design.Templates, plain)
	o.Design.Labels = append(o.Design.Labels, framing.LabelSet{Name: "user-llm", Speaker1: "User", Speaker2: "LLM"})
	for _, m := range []string{"be-honest", "dehumanize"} {
		mi, _ := framing.ParseMitigation(m)
		o.Design.Mitigations = append(o.Design.Mitigations, mi)
	}
	o.Design.Challenges, _ = framing.ParseChallenges([]string{"all"}, "")
	res, err := As[*FramingResult](Start(context.Background(), st, o))
	if err != nil {
		t.Fatal(err)
	}
	// 54 items × 2 templates × (2 C1 + 2 labels × 3 mitigations × 2 C2).
	if res.Manifest.Counts.Planned != 54*2*(2+12) || res.Manifest.Counts.Complete != res.Manifest.Counts.Planned {
		t.Errorf("counts %+v", res.Manifest.Counts)
	}
	if len(res.Summary.Arms) != 12 || res.Summary.Arms[0].Challenge == nil {
		t.Errorf("%d arms, challenge rows %v", len(res.Summary.Arms), res.Summary.Arms[0].Challenge)
	}
	again, err := LoadFraming(context.Background(), st, res.Manifest.RunID)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(res.Summary)
	b, _ := json.Marshal(again.Summary)
	if !bytes.Equal(a, b) {
		t.Error("the reloaded run scores differently from the run itself")
	}

	// The run's measures are a tally of its sessions streamed from the
	// store: Summarize of every observation at hand gives the same, and
	// the item-at-a-time and session-at-a-time readings agree with them.
	ctx := context.Background()
	obs, err := again.Observations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(obs) != res.Manifest.Counts.Planned {
		t.Fatalf("%d observations for %d sessions", len(obs), res.Manifest.Counts.Planned)
	}
	c, _ := json.Marshal(summarizeFraming(&again.Snapshot.Design, again.Snapshot.Items, obs, o.Bootstrap))
	if !bytes.Equal(a, c) {
		t.Error("the streamed measures differ from Summarize of every observation")
	}
	var byItem []framing.Observation
	err = again.EachItem(ctx, func(it *ItemObservations) error {
		if it.FromC1Run != 0 || len(it.Traces) != len(it.Observations) {
			t.Errorf("item %d: %d from another run, %d traces for %d sessions", it.Index, it.FromC1Run, len(it.Traces), len(it.Observations))
		}
		if it.Index%17 == 0 {
			one, err := again.Item(ctx, it.Index)
			if err != nil || !reflect.DeepEqual(one, it) {
				t.Errorf("item %d read alone differs from the stream (%v)", it.Index, err)
			}
		}
		byItem = append(byItem, it.Observations...)
		return nil
	})
	if err != nil || !reflect.DeepEqual(byItem, obs) {
		t.Errorf("the item stream differs from the session stream (%v)", err)
	}
	one, ok, err := again.Observation(ctx, obs[777].Session)
	if err != nil || !ok || !reflect.DeepEqual(*one, obs[777]) {
		t.Errorf("session %s read alone: %v %v", obs[777].Session, ok, err)
	}
	if _, ok, err := again.Observation(ctx, "no-such-session"); ok || err != nil {
		t.Errorf("an unplanned session: %v %v", ok, err)
	}
}

func TestBadDataWritesNothing(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(`{"id": "a", "domain": "d", "question": "q", "correct": "x", "incorrect": "x"}`+"\n"), 0o644)
	st, err := store.Open(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	o := DefaultFramingOptions()
	o.Data = bad
	_, err = As[*FramingResult](Start(context.Background(), st, o))
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("error %v, want invalid input", err)
	}
	if runs, _ := st.ListRuns(context.Background()); len(runs) != 0 {
		t.Errorf("a run was stored from a bad file: %v", runs)
	}
}

// Transport failures stay visible: sessions failed, the run incomplete,
// and the items left out of the measures with the reason.
func TestTransportFailuresAreVisible(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "flaky.yaml")
	os.WriteFile(prof, []byte("name: flaky\nright_true: 0.6\nright_false: 0.8\ndeference: 0.15\ntransport_error: 0.3\n"), 0o644)
	st, err := store.Open(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	o := DefaultFramingOptions()
	o.Model = "sim:" + prof
	o.Retry.MaxAttempts = 1
	res, err := As[*FramingResult](Start(context.Background(), st, o))
	if err != nil {
		t.Fatal(err)
	}
	failed := res.Manifest.Counts.Failed
	excluded := 0
	for _, c := range res.Summary.Arms[0].Domains {
		excluded += c.Excluded["transport failure"]
	}
	if res.Run.Status != store.RunIncomplete || failed == 0 || excluded == 0 || res.Summary.Parse.ByStatus[framing.StatusFailed] != failed {
		t.Errorf("status %s, %d failed sessions, %d items left out for transport failure", res.Run.Status, failed, excluded)
	}
}

// summarizeFraming computes a framing run's measures from observations in
// memory, through the tally a stored run is scored with.
func summarizeFraming(d *framing.Design, items []framing.Item, obs []framing.Observation, b stats.Bootstrap) *framing.Summary {
	t := framing.NewTally(d, items)
	for i := range obs {
		t.Add(&obs[i])
	}
	return t.Summary(b)
}
