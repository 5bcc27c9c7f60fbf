package study

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/provider/endpoint"
	"github.com/buildlab/budge/testkit/storetest"
)

// A run with --baseline-c1 asks only C2 and is scored against another
// run's C1 on the same items (the paper's Table 5 for fine-tuned models):
// its C1 accuracies are the baseline's, its C2 ones those of its own model,
// the baseline is on its manifest and fingerprint, and a load, a resume
// after an interruption and a replay re-read the baseline from the store
// and give the same measures.
func TestFramingBaselineC1(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := storetest.Open(t)
	opts := func(model string) FramingOptions {
		o := DefaultFramingOptions()
		o.Model, o.Bootstrap.Resamples, o.Concurrency = model, 200, 4
		return o
	}
	base, err := As[*FramingResult](Start(ctx, st, opts("sim:neutral")))
	if err != nil {
		t.Fatal(err)
	}
	own, err := As[*FramingResult](Start(ctx, st, opts("sim")))
	if err != nil {
		t.Fatal(err)
	}
	o := opts("sim")
	o.BaselineC1 = base.Run.ID
	fixed, err := As[*FramingResult](Start(ctx, st, o))
	if err != nil {
		t.Fatal(err)
	}
	items := len(fixed.Snapshot.Items)
	if fixed.Manifest.Counts.Planned != 2*items {
		t.Errorf("%d sessions planned, want %d (C2 only)", fixed.Manifest.Counts.Planned, 2*items)
	}
	mine, err := fixed.Observations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, ob := range mine {
		if !ob.Condition.Dialogue() {
			t.Fatalf("the run asked C1: %s", ob.Session)
		}
	}
	// The pairing streamed from the store gives, by template, item and C1
	// condition, the baseline's unmitigated answer on the item with the
	// same content, re-indexed to this run's item; and the tally counted
	// what Summarize counts.
	baseObs, err := base.Observations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var wantBase []framing.Observation
	for _, tm := range fixed.Snapshot.Design.Templates {
		for i := range fixed.Snapshot.Items {
			it := &fixed.Snapshot.Items[i]
			for _, c := range []framing.Condition{framing.C1True, framing.C1False} {
				var match *framing.Observation
				for j, ob := range baseObs {
					if ob.Template == tm.Name && ob.Condition == c && ob.Mitigation == framing.None &&
						framing.ContentKey(base.Snapshot.Items[ob.Index]) == framing.ContentKey(*it) {
						match = &baseObs[j]
					}
				}
				if match == nil {
					t.Fatalf("the baseline has no %s answer on %s under %s", c, it.ID, tm.Name)
				}
				o := *match
				o.Index, o.Item, o.Domain, o.Stratum = i, it.ID, it.Domain, framing.Stratum(it)
				wantBase = append(wantBase, o)
			}
		}
	}
	paired, traces, err := fixed.Paired(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := append(wantBase, mine...); !reflect.DeepEqual(paired, want) {
		t.Errorf("paired observations differ from the baseline's matched by content: %d and %d", len(paired), len(want))
	}
	if len(traces) != len(paired) {
		t.Errorf("%d traces for %d paired sessions", len(traces), len(paired))
	}
	if got := summarizeFraming(&fixed.Snapshot.Design, fixed.Snapshot.Items, paired, fixed.Manifest.Bootstrap); !reflect.DeepEqual(got, fixed.Summary) {
		t.Error("the streamed summary differs from Summarize of the paired observations")
	}
	// Opened without scoring (as an export opens a finished run), the run
	// streams the same sessions under the same fingerprint and baseline.
	opened, err := As[*FramingResult](OpenForExport(ctx, st, fixed.Run.ID))
	if err != nil {
		t.Fatal(err)
	}
	again, againTraces, err := opened.Paired(ctx)
	if err != nil || !reflect.DeepEqual(again, paired) || !reflect.DeepEqual(againTraces, traces) {
		t.Errorf("the opened run streams other sessions (%v)", err)
	}
	if opened.Summary != nil || opened.Manifest.Fingerprint != fixed.Manifest.Fingerprint || opened.Manifest.BaselineC1 == nil || opened.Manifest.BaselineC1.Run != base.Run.ID {
		t.Errorf("opened run: fingerprint %s (want %s), baseline %+v", opened.Manifest.Fingerprint, fixed.Manifest.Fingerprint, opened.Manifest.BaselineC1)
	}
	b := fixed.Manifest.BaselineC1
	if b == nil || b.Run != base.Run.ID || b.Fingerprint != base.Manifest.Fingerprint || b.Items != items || b.Sessions != 2*items {
		t.Fatalf("manifest baseline %+v, want run %s fingerprint %s", b, base.Run.ID, base.Manifest.Fingerprint)
	}
	if fixed.Manifest.Fingerprint == own.Manifest.Fingerprint {
		t.Error("the fingerprint does not record the baseline run")
	}
	for dom, cell := range fixed.Summary.Arms[0].Domains {
		for _, c := range framing.Conditions {
			want := own.Summary.Arms[0].Domains[dom].Accuracy[c]
			if !c.Dialogue() {
				want = base.Summary.Arms[0].Domains[dom].Accuracy[c]
			}
			if got := cell.Accuracy[c]; got != want {
				t.Errorf("%s %s: %d/%d, want %d/%d", dom, c, got.Num, got.Den, want.Num, want.Den)
			}
		}
	}
	if got := fixed.Summary.Arms[0].Mode; got != framing.ModeFixed {
		t.Errorf("arm C1 mode %q, want %q", got, framing.ModeFixed)
	}
	var text strings.Builder
	if err := fixed.Report().Render(&text, "text"); err != nil || !strings.Contains(text.String(), "C1 from run "+base.Run.ID) {
		t.Errorf("the report does not name the baseline (%v)", err)
	}

	same := func(what string) func(*FramingResult, error) {
		return func(fr *FramingResult, err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if !reflect.DeepEqual(fr.Summary, fixed.Summary) {
				t.Errorf("%s: measures differ from the uninterrupted run", what)
			}
			if fb := fr.Manifest.BaselineC1; fb == nil || fb.Run != base.Run.ID || fb.Fingerprint != base.Manifest.Fingerprint {
				t.Errorf("%s: baseline %+v", what, fb)
			}
		}
	}
	same("load")(As[*FramingResult](Load(ctx, st, fixed.Run.ID)))
	same("replay")(As[*FramingResult](Replay(ctx, st, fixed.Run.ID, Control{})))

	// Stopped after a few sessions (Ctrl-C drains), then resumed.
	drain, stop := context.WithCancel(ctx)
	defer stop()
	its, err := LoadFramingItems(o)
	if err != nil {
		t.Fatal(err)
	}
	judge, err := openFramingJudge(o.Model, "", &o.Design, its, endpoint.Options{})
	if err != nil {
		t.Fatal(err)
	}
	o.Concurrency, o.Drain = 2, drain
	o.Provider = &slowProvider{Provider: judge, delay: time.Millisecond, after: 10, stop: stop}
	part, err := As[*FramingResult](Start(ctx, st, o))
	if err != nil {
		t.Fatal(err)
	}
	if part.Manifest.Counts.Missing == 0 {
		t.Fatal("the run was not interrupted")
	}
	id := part.Run.ID
	same("resume")(As[*FramingResult](Resume(ctx, st, id, Control{})))
}
