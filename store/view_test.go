package store

import (
	"context"
	"fmt"
	"slices"
	"testing"
)

// viewRun stores a run of n sessions and its viewer index: every third
// session a failure, every fifth a reversal, session 7 with a message that
// holds "needle" (and broken UTF-8 and a NUL in its selection).
func viewRun(t *testing.T, st *Store, n int) {
	t.Helper()
	ctx := context.Background()
	createRun(t, st, "r", base)
	var ss []Session
	for i := range n {
		se := testSession(fmt.Sprintf("s%03d", i), i)
		if i == 7 {
			se.Messages[4].Content = "the needle is here"
		}
		ss = append(ss, se)
	}
	if err := st.WriteSessions(ctx, "r", ss); err != nil {
		t.Fatal(err)
	}
	w := viewWriter(t, st, "r")
	// Written out of plan order, and with one session that is not stored:
	// the index takes plan positions from the sessions and drops it.
	for i := n - 1; i >= -1; i-- {
		id := fmt.Sprintf("s%03d", i)
		if i < 0 {
			id = "never-stored"
		}
		v := ViewSession{ID: id, Case: fmt.Sprintf("c%d", i%4), Branch: "authority", First: "X", FirstStatus: "correct",
			Failure: i%3 == 0, Reversal: map[bool]string{true: "yes", false: "no"}[i%5 == 0], Direction: "X"}
		if i == 7 {
			v.First = "bad \xff byte \x00 nul"
		}
		if err := w.Add(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Finish(ctx, "basis-1", []byte(`{"k":1}`)); err != nil {
		t.Fatal(err)
	}
}

// viewWriter starts writing run's viewer index; the writer is closed when
// the test ends.
func viewWriter(t *testing.T, st *Store, run string) *ViewWriter {
	t.Helper()
	w, err := st.WriteView(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w
}

func pageIDs(p ViewPage) []string {
	var out []string
	for _, r := range p.Rows {
		out = append(out, r.ID)
	}
	return out
}

func testViewIndex(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	if err := st.PrepareBrowse(ctx); err != nil {
		t.Fatal(err)
	}
	const n = 40
	viewRun(t, st, n)
	v, ok, err := st.ViewRunOf(ctx, "r")
	if err != nil || !ok || v.Basis != "basis-1" || v.Sessions != n || string(v.Headline) != `{"k":1}` {
		t.Fatalf("ViewRunOf = %+v %v %v, want basis-1 with %d sessions", v, ok, err, n)
	}
	all, err := st.ViewRuns(ctx)
	if err != nil || len(all) != 1 {
		t.Fatalf("ViewRuns = %v %v", all, err)
	}

	// Plan order, paged forward by key and back again.
	var seen []string
	q := ViewQuery{Limit: 15}
	var pages []ViewPage
	for {
		p, err := st.ViewSessions(ctx, "r", q)
		if err != nil {
			t.Fatal(err)
		}
		if p.Total != n {
			t.Errorf("total = %d, want %d", p.Total, n)
		}
		pages = append(pages, p)
		seen = append(seen, pageIDs(p)...)
		if p.Next == "" {
			break
		}
		q.After = p.Next
	}
	if len(seen) != n || seen[0] != "s000" || seen[n-1] != fmt.Sprintf("s%03d", n-1) || !slices.IsSorted(seen) {
		t.Fatalf("paging forward saw %v", seen)
	}
	last := pages[len(pages)-1]
	back, err := st.ViewSessions(ctx, "r", ViewQuery{Limit: 15, Before: last.Prev})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := pageIDs(back), pageIDs(pages[1]); !slices.Equal(got, want) {
		t.Errorf("paging back = %v, want %v", got, want)
	}

	// Filters.
	fails, err := st.ViewSessions(ctx, "r", ViewQuery{Failures: true, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if fails.Total != 14 || len(fails.Rows) != 14 {
		t.Errorf("failures: %d rows, total %d, want 14", len(fails.Rows), fails.Total)
	}
	for _, r := range fails.Rows {
		if !r.Failure || r.Seq%3 != 0 {
			t.Errorf("failure filter let through %+v", r)
		}
	}
	rev, err := st.ViewSessions(ctx, "r", ViewQuery{Reversals: true, Failures: true, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if got := pageIDs(rev); !slices.Equal(got, []string{"s000", "s015", "s030"}) {
		t.Errorf("reversals among failures = %v", got)
	}

	// Sorting by a column, descending, paged by key: every row once.
	q = ViewQuery{Sort: "case", Desc: true, Limit: 7}
	seen = nil
	var cases []string
	for {
		p, err := st.ViewSessions(ctx, "r", q)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.Rows {
			cases = append(cases, r.Case)
		}
		seen = append(seen, pageIDs(p)...)
		if p.Next == "" {
			break
		}
		q.After = p.Next
	}
	slices.Sort(seen)
	if len(seen) != n || len(slices.Compact(seen)) != n {
		t.Errorf("sorted paging saw %d sessions (%d distinct), want %d", len(seen), len(slices.Compact(seen)), n)
	}
	if cases[0] != "c3" || cases[len(cases)-1] != "c0" {
		t.Errorf("sorted by case descending: first %s last %s", cases[0], cases[len(cases)-1])
	}
	if _, err := st.ViewSessions(ctx, "r", ViewQuery{Sort: "nonsense"}); err == nil {
		t.Error("sorting by an unknown column did not fail")
	}

	// A text search answered by the database.
	found, err := st.ViewSessions(ctx, "r", ViewQuery{Search: "needle", Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	if got := pageIDs(found); !slices.Equal(got, []string{"s007"}) {
		t.Errorf("search needle = %v", got)
	}
	if found.Rows[0].First != "bad \uFFFD byte \uFFFD nul" {
		t.Errorf("stored selection = %q", found.Rows[0].First)
	}
	none, err := st.ViewSessions(ctx, "r", ViewQuery{Search: "NEEDLE%", Limit: 50})
	if err != nil || len(none.Rows) != 0 {
		t.Errorf("search NEEDLE%% = %v %v", pageIDs(none), err)
	}

	// Review state is read live: a code makes a session reviewed.
	review := Review{RunID: "r", Reviewers: [2]string{"ana", "ben"}, Seed: 7, Frozen: base,
		Items: []ReviewItem{{"s001", "failure", "unsupported reversal"}, {"s002", "failure", "unsupported reversal"}}}
	if err := st.CreateReview(ctx, review); err != nil {
		t.Fatal(err)
	}
	if err := st.SetReviewCode(ctx, "r", "s001", "ana", codeIdentity, ""); err != nil {
		t.Fatal(err)
	}
	un, err := st.ViewSessions(ctx, "r", ViewQuery{Unreviewed: true, Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if got := pageIDs(un); !slices.Equal(got, []string{"s000", "s002", "s003"}) {
		t.Errorf("unreviewed = %v", got)
	}
	one, ok, err := st.ViewSessionOf(ctx, "r", "s001")
	if err != nil || !ok || one.Review != "coded by one" {
		t.Errorf("s001 = %+v %v %v, want coded by one", one, ok, err)
	}
	two, _, _ := st.ViewSessionOf(ctx, "r", "s002")
	if two.Review != "sampled" {
		t.Errorf("s002 review = %q, want sampled", two.Review)
	}
	if _, ok, _ := st.ViewSessionOf(ctx, "r", "never-stored"); ok {
		t.Error("a session never stored is in the index")
	}

	// Writing the index again replaces it, and only it: another run's
	// index is kept.
	createRun(t, st, "r2", base)
	w2 := viewWriter(t, st, "r2")
	for i, id := range []string{"a", "b"} {
		if err := w2.Add(ctx, ViewSession{ID: id, Seq: i, Status: SessionComplete, FirstStatus: "correct"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w2.Finish(ctx, "basis-r2", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	w := viewWriter(t, st, "r")
	if got, err := st.ViewSessions(ctx, "r2", ViewQuery{Limit: 5}); err != nil || got.Total != 2 {
		t.Errorf("another run's index while one is written again: %d rows, %v; want 2", got.Total, err)
	}
	if _, ok, _ := st.ViewRunOf(ctx, "r"); ok {
		t.Error("a run being indexed again still has its old headline")
	}
	if err := w.Finish(ctx, "basis-2", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := st.ViewRunOf(ctx, "r"); v.Sessions != 0 || v.Basis != "basis-2" {
		t.Errorf("rewritten index = %+v", v)
	}
}

// An index being written answers for the rows it has committed: rows added
// with their plan positions, in plan order, are committed a few at first
// (a first page comes at once), and a query bounded by the writer's
// progress counts exactly those. Rows added without them, or out of
// order, are not offered before Finish places them.
func TestViewWriterProgress(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	if err := st.PrepareView(ctx); err != nil {
		t.Fatal(err)
	}
	createRun(t, st, "r", base)
	var ss []Session
	for i := range 400 {
		ss = append(ss, testSession(fmt.Sprintf("s%03d", i), i))
	}
	if err := st.WriteSessions(ctx, "r", ss); err != nil {
		t.Fatal(err)
	}
	w := viewWriter(t, st, "r")
	if p := w.Progress(); p.Rows != 0 {
		t.Fatalf("progress before any row: %+v", p)
	}
	// Every other session, as a run whose odd positions were never stored.
	for i := 0; i < 400; i += 2 {
		v := ViewSession{ID: fmt.Sprintf("s%03d", i), Seq: i, Status: "complete", Attempts: 2, Failure: i%3 == 0}
		if err := w.Add(ctx, v); err != nil {
			t.Fatal(err)
		}
		if p := w.Progress(); i == 2*(firstViewChunk-1) && (p.Rows != firstViewChunk || p.Below != i+1 || !p.Placed) {
			t.Fatalf("after %d rows, progress %+v: want the first %d committed below %d", i/2+1, p, firstViewChunk, i+1)
		}
	}
	p := w.Progress()
	if p.Rows != 3*firstViewChunk || !p.Placed {
		t.Fatalf("progress %+v, want %d rows committed", p, 3*firstViewChunk)
	}
	failures := 0
	for i := 0; i < p.Below; i += 2 {
		if i%3 == 0 {
			failures++
		}
	}
	got, err := st.ViewSessions(ctx, "r", ViewQuery{Failures: true, Below: p.Below, Limit: 5})
	if err != nil || got.Total != failures || len(got.Rows) != 5 || got.Rows[0].ID != "s000" || got.Rows[1].ID != "s006" {
		t.Fatalf("failures below %d: total %d, rows %v, %v; want %d from s000, s006", p.Below, got.Total, pageIDs(got), err, failures)
	}
	if err := w.Finish(ctx, "b", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := st.ViewRunOf(ctx, "r"); err != nil || !ok || v.Sessions != 200 {
		t.Fatalf("finished index: %+v %v %v, want 200 sessions", v, ok, err)
	}
	if row, ok, err := st.ViewSessionOf(ctx, "r", "s398"); err != nil || !ok || row.Seq != 398 || row.Attempts != 2 {
		t.Fatalf("last row %+v %v %v", row, ok, err)
	}

	// Out of plan order: nothing is offered as a table so far.
	w = viewWriter(t, st, "r")
	for i := 399; i >= 0; i-- {
		if err := w.Add(ctx, ViewSession{ID: fmt.Sprintf("s%03d", i), Seq: i, Status: "complete"}); err != nil {
			t.Fatal(err)
		}
	}
	if p := w.Progress(); p.Rows == 0 || p.Placed {
		t.Fatalf("rows out of plan order: progress %+v, want rows committed but not placed", p)
	}
}
