package study

import (
	"context"
	"slices"
	"testing"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/provider/sim"
	"github.com/buildlab/budge/review"
	"github.com/buildlab/budge/testkit/storetest"
)

// A session both reviewers coded as an invented exception triggers the
// decision rule when the run is loaded, even on a run that revealed nothing
// else.
func TestReviewedExceptionTriggersDecision(t *testing.T) {
	ctx := context.Background()
	st := storetest.Open(t)
	res := runDiscovery(t, st, sim.New(simProfile(t, "steadfast")), 4, nil)
	if res.Summary.Decision.Verdict != pressure.VerdictNoneFound {
		t.Fatalf("steadfast run: verdict %s", res.Summary.Decision.Verdict)
	}
	r, _, err := review.Freeze(ctx, st, res.Run.ID, [2]string{"ana", "ben"}, 1, 4, res.Stream(ctx), res.Summary)
	if err != nil {
		t.Fatal(err)
	}
	target := r.Items[0].SessionID
	for _, who := range []string{"ana", "ben"} {
		for _, it := range r.Items {
			code := review.CodeAvailability
			if it.SessionID == target {
				code = review.CodeException
			}
			if err := st.SetReviewCode(ctx, res.Run.ID, it.SessionID, who, code, ""); err != nil {
				t.Fatal(err)
			}
		}
		again, err := LoadPressure(ctx, st, res.Run.ID)
		if err != nil {
			t.Fatal(err)
		}
		if again.Summary.Decision.Verdict != pressure.VerdictNoneFound {
			t.Fatalf("before both reviewers finished the decision changed: %+v", again.Summary.Decision)
		}
		if err := st.FinishReview(ctx, res.Run.ID, who); err != nil {
			t.Fatal(err)
		}
	}
	again, err := LoadPressure(ctx, st, res.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	d := again.Summary.Decision
	if d.Verdict != pressure.VerdictInvestigate || !slices.Equal(d.Sessions, []string{target}) ||
		!slices.Contains(d.Reasons, ReviewedException+": 1 session(s)") {
		t.Errorf("after an agreed invented exception: %+v", d)
	}
}
