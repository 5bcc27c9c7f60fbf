package review

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/testkit/storetest"
)

// TestHiddenCodesRule: before both reviewers have finished, a reviewer sees
// only their own codes, and nobody else sees any; the summary and the
// export carry no code; afterwards everyone sees both.
func TestHiddenCodesRule(t *testing.T) {
	f := fake{
		rev: &store.Review{RunID: "r", Reviewers: [2]string{"ana", "ben"}, Items: []store.ReviewItem{
			{SessionID: "a", Why: WhyFailure, FailureType: "neutral drift"}}},
		codes: map[string]map[string]store.ReviewCode{
			"ana": {"a": {Code: CodeIdentity}}, "ben": {"a": {Code: CodeAuthority}}},
		done: map[string]time.Time{"ana": {}},
	}
	s, err := Load(context.Background(), f, "r")
	if err != nil {
		t.Fatal(err)
	}
	for who, want := range map[string][]string{"ana": {"ana"}, "ben": {"ben"}, "": nil, "eve": nil} {
		v := s.Visible(who)
		if len(v) != len(want) || (len(want) == 1 && v[want[0]] == nil) {
			t.Errorf("before both finished, %q sees the codes of %v", who, keys(v))
		}
	}
	sum := s.Summary()
	if got := sum.ByFailure["neutral drift"]; len(got) != 1 || got[StatusInReview] != 1 {
		t.Errorf("codes by failure type before both finished: %v", got)
	}
	if c, st := s.Fields("a"); c != nil || st != StatusInReview {
		t.Errorf("export fields before both finished: %v %s", c, st)
	}
	f.done["ben"] = time.Time{}
	s, _ = Load(context.Background(), f, "r")
	if v := s.Visible("ana"); v["ben"]["a"].Code != CodeAuthority {
		t.Errorf("after both finished ana sees %v", v)
	}
	if v := s.Visible(""); len(v) != 2 {
		t.Errorf("after both finished the viewer sees %v", keys(v))
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestReviewerTokens: each reviewer gets a distinct token that opens only
// their own pages; the store holds hashes only; reissuing replaces a token.
func TestReviewerTokens(t *testing.T) {
	ctx := context.Background()
	st := storetest.Open(t)
	const runID = "20261203-000000-tokens"
	outs := []pressure.Outcome{outcome("a", pressure.Incorrect), outcome("b", pressure.Correct)}
	_, tok, err := Freeze(ctx, st, runID, [2]string{"ana", "ben"}, 1, 1, slice(outs), pressure.Summary{})
	if err != nil {
		t.Fatal(err)
	}
	if tok[0] == "" || tok[0] == tok[1] || len(tok[0]) < 40 {
		t.Fatalf("tokens %q", tok)
	}
	sums, err := st.ReviewerTokens(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	for _, sum := range sums {
		if strings.Contains(sum, tok[0]) || strings.Contains(sum, tok[1]) {
			t.Error("the store holds a token, not its hash")
		}
	}
	check := func(who, token string, want bool) {
		t.Helper()
		if ok, err := Authorized(ctx, st, runID, who, token); err != nil || ok != want {
			t.Errorf("Authorized(%s, %.8s…) = %v, %v; want %v", who, token, ok, err, want)
		}
	}
	check("ana", tok[0], true)
	check("ben", tok[1], true)
	check("ben", tok[0], false) // ana's token does not open ben's pages
	check("ana", tok[1], false)
	check("ana", "", false)
	check("eve", tok[0], false)
	check("ana", strings.ToUpper(tok[0]), false)

	again, err := Reissue(ctx, st, runID, "ana")
	if err != nil {
		t.Fatal(err)
	}
	check("ana", again, true)
	check("ana", tok[0], false) // the old token stops working
	if _, err := Reissue(ctx, st, runID, "eve"); err == nil {
		t.Error("a token was issued to someone who is not a reviewer")
	}
}

// TestKappaInterval: the summary says how the interval is computed, and
// warns when it collapses (perfect agreement) or the sample is small.
func TestKappaInterval(t *testing.T) {
	f := fake{
		rev: &store.Review{RunID: "r", Reviewers: [2]string{"ana", "ben"}, Items: []store.ReviewItem{
			{SessionID: "a", FailureType: "success"}, {SessionID: "b", FailureType: "success"}}},
		codes: map[string]map[string]store.ReviewCode{
			"ana": {"a": {Code: CodeIdentity}, "b": {Code: CodeUncertain}},
			"ben": {"a": {Code: CodeIdentity}, "b": {Code: CodeUncertain}}},
		done: map[string]time.Time{"ana": {}, "ben": {}},
	}
	s, _ := Load(context.Background(), f, "r")
	sum := s.Summary()
	if sum.Kappa == nil || *sum.Kappa != 1 || sum.KappaInterval != KappaInterval || !strings.Contains(sum.Note, "collapses to a point") {
		t.Errorf("perfect agreement: %+v", sum)
	}
	f.codes["ben"]["b"] = store.ReviewCode{Code: CodeIdentity}
	s, _ = Load(context.Background(), f, "r")
	if sum := s.Summary(); !strings.Contains(sum.Note, "With 2 sessions the large-sample interval is approximate") {
		t.Errorf("small sample: %+v", sum)
	}
}
