package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// Reason codes are the review's vocabulary (package review): to the store
// they are text.
const (
	codeIdentity     = "identity"
	codeAuthority    = "unsupported-authority"
	codeAvailability = "availability-record"
	codePending      = "pending"
	codeException    = "invented-exception"
	codeUnresolved   = "unresolved"
)

func testSessionPageFiltersAndPages(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	createRun(t, s, "r1", base)
	var ss []Session
	for i := range 30 {
		se := testSession(fmt.Sprintf("c%d/%s/P-first/%s/r1", i%3, []string{"I", "II"}[i%2], []string{"authority", "neutral"}[i/15]), i)
		se.Spec = []byte(fmt.Sprintf(`{"case_id":"c%d","identity_assignment":"%s","profile_order":"P-first","branch":"%s","repeat":1}`,
			i%3, []string{"I", "II"}[i%2], []string{"authority", "neutral"}[i/15]))
		ss = append(ss, se)
	}
	// Ids repeat every six sessions within a branch: keep them unique (12).
	seen := map[string]bool{}
	var uniq []Session
	for _, se := range ss {
		if !seen[se.ID] {
			seen[se.ID] = true
			uniq = append(uniq, se)
		}
	}
	if err := s.WriteSessions(ctx, "r1", uniq); err != nil {
		t.Fatal(err)
	}
	if err := s.PrepareBrowse(ctx); err != nil {
		t.Fatal(err)
	}
	count := func(f SessionFilter) int {
		rows, total, err := s.SessionPage(ctx, "r1", f, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != total {
			t.Errorf("%+v: %d rows, total %d", f, len(rows), total)
		}
		return total
	}
	for _, c := range []struct {
		f    SessionFilter
		want int
	}{
		{SessionFilter{}, len(uniq)},
		{SessionFilter{Branch: "authority"}, 6},
		{SessionFilter{Case: "c1", Assignment: "II"}, 2},
		{SessionFilter{Status: "failed"}, 0},
		{SessionFilter{CaseAssignments: []string{"c0/I", "c2/II"}}, 4},
		{SessionFilter{CaseAssignments: []string{}}, 0},
		{SessionFilter{Branch: "x' OR 1=1 --"}, 0},
	} {
		if got := count(c.f); got != c.want {
			t.Errorf("%+v: %d sessions, want %d", c.f, got, c.want)
		}
	}
	rows, total, err := s.SessionPage(ctx, "r1", SessionFilter{}, 10, 5)
	if err != nil || total != len(uniq) || len(rows) != 2 || rows[0].Seq >= rows[1].Seq {
		t.Errorf("last page: %d rows of %d, %v", len(rows), total, err)
	}
	got, err := s.Session(ctx, "r1", uniq[3].ID)
	if err != nil {
		t.Fatal(err)
	}
	sameSession(t, got, uniq[3])
	if _, err := s.Session(ctx, "r1", "nope"); !errors.Is(err, ErrNoSession) {
		t.Errorf("missing session: %v", err)
	}
}

// TestReviewRules walks the review workflow through the store's rules:
// one frozen sample, named reviewers, known codes, final codes after
// finishing, adjudication only of disagreements after both finished.
func testReviewRules(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	createRun(t, s, "r1", base)
	if _, err := s.GetReview(ctx, "r1"); !errors.Is(err, ErrNoReview) {
		t.Fatalf("no review yet: %v", err)
	}
	items := []ReviewItem{{"a", "failure", "unsupported reversal"}, {"b", "success sample", "success"}}
	if err := s.CreateReview(ctx, Review{RunID: "r1", Reviewers: [2]string{"ana", "ana"}, Items: items}); err == nil {
		t.Error("a review with one reviewer twice was accepted")
	}
	rev := Review{RunID: "r1", Reviewers: [2]string{"ana", "ben"}, Seed: 7, Successes: 1, Frozen: base, Items: items}
	if err := s.CreateReview(ctx, rev); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateReview(ctx, rev); !errors.Is(err, ErrReviewExists) {
		t.Errorf("second sample: %v", err)
	}
	got, err := s.GetReview(ctx, "r1")
	if err != nil || got.Seed != 7 || len(got.Items) != 2 || got.Items[0] != items[0] || !got.Frozen.Equal(base) {
		t.Fatalf("review read back: %+v %v", got, err)
	}
	steps := []struct {
		name string
		do   func() error
		want error
	}{
		{"unknown reviewer", func() error { return s.SetReviewCode(ctx, "r1", "a", "eve", codeIdentity, "") }, ErrNotReviewer},
		{"not in sample", func() error { return s.SetReviewCode(ctx, "r1", "z", "ana", codeIdentity, "") }, ErrNotInSample},
		{"no code", func() error { return s.SetReviewCode(ctx, "r1", "a", "ana", "", "") }, ErrNoCode},
		{"ana codes a", func() error { return s.SetReviewCode(ctx, "r1", "a", "ana", codeIdentity, "first") }, nil},
		{"ana changes a", func() error { return s.SetReviewCode(ctx, "r1", "a", "ana", codeAuthority, "second") }, nil},
		{"ana finishes early", func() error { return s.FinishReview(ctx, "r1", "ana") }, ErrUncodedItems},
		{"ana codes b", func() error { return s.SetReviewCode(ctx, "r1", "b", "ana", codeAvailability, "") }, nil},
		{"ana finishes", func() error { return s.FinishReview(ctx, "r1", "ana") }, nil},
		{"ana edits after", func() error { return s.SetReviewCode(ctx, "r1", "b", "ana", codePending, "") }, ErrFinished},
		{"ben codes a", func() error { return s.SetReviewCode(ctx, "r1", "a", "ben", codeException, "") }, nil},
		{"ben codes b", func() error { return s.SetReviewCode(ctx, "r1", "b", "ben", codeAvailability, "") }, nil},
		{"adjudicate early", func() error { return s.SetAdjudication(ctx, "r1", "a", codeAuthority, "") }, ErrNotBothDone},
		{"ben finishes", func() error { return s.FinishReview(ctx, "r1", "ben") }, nil},
		{"adjudicate agreement", func() error { return s.SetAdjudication(ctx, "r1", "b", codeAuthority, "") }, ErrNoDisagreement},
		{"adjudicate no code", func() error { return s.SetAdjudication(ctx, "r1", "a", "", "") }, ErrNoCode},
		{"adjudicate", func() error { return s.SetAdjudication(ctx, "r1", "a", codeAuthority, "") }, nil},
		{"leave unresolved", func() error { return s.SetAdjudication(ctx, "r1", "a", codeUnresolved, "no consensus") }, nil},
	}
	for _, st := range steps {
		if err := st.do(); !errors.Is(err, st.want) || (st.want == nil) != (err == nil) {
			t.Errorf("%s: %v, want %v", st.name, err, st.want)
		}
	}
	codes, err := s.ReviewCodes(ctx, "r1")
	if err != nil || codes["ana"]["a"].Code != codeAuthority || codes["ana"]["a"].Note != "second" || codes["ben"]["a"].Code != codeException {
		t.Errorf("codes: %+v %v", codes, err)
	}
	done, err := s.ReviewFinished(ctx, "r1")
	if err != nil || len(done) != 2 || time.Since(done["ben"]) > time.Minute {
		t.Errorf("finished: %v %v", done, err)
	}
	adj, err := s.Adjudications(ctx, "r1")
	if err != nil || adj["a"].Code != codeUnresolved || adj["a"].Note != "no consensus" {
		t.Errorf("adjudications: %+v %v", adj, err)
	}
}
