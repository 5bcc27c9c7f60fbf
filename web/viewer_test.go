package web_test

import (
	"context"
	"html"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/buildlab/budge/review"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
	"github.com/buildlab/budge/testkit/storetest"
	"github.com/buildlab/budge/web"
)

var countLinkRe = regexp.MustCompile(`<a class="count" href="([^"]+)">(\d+)</a>`)

// Every count on the report page links to a session table that holds
// exactly the sessions it counts.
func TestReportCountsLinkTheirSessions(t *testing.T) {
	t.Parallel()
	st, id := simRun(t)
	c := serve(t, st, web.Options{})
	rep := c.get("/runs/"+id+"/report", 200)
	links := countLinkRe.FindAllStringSubmatch(rep, -1)
	if len(links) < 20 {
		t.Fatalf("report page links %d counts", len(links))
	}
	for _, l := range links {
		u, want := html.UnescapeString(l[1]), l[2]
		page := c.get(u, 200)
		m := countRe.FindStringSubmatch(page)
		if m == nil || m[1] != want {
			t.Errorf("%s: the report counts %s, the table %v", u, want, m)
		}
	}
	for _, nav := range []string{`href="/"`, `href="/runs/` + id + `/"`} {
		if !strings.Contains(rep, nav) {
			t.Errorf("report page has no navigation link %s", nav)
		}
	}
}

var headlineRe = regexp.MustCompile(`baseline <span class="rate">(\d+)/(\d+)`)

// The runs list shows the measures the run's report states, from the
// stored index.
func TestRunsListHeadline(t *testing.T) {
	t.Parallel()
	st, id := simRun(t)
	srv, err := web.New(st, web.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := serve(t, st, web.Options{})
	if page := c.get("/", 200); !strings.Contains(page, "not scored for the viewer yet") {
		t.Error("a run never scored shows a headline")
	}
	if err := srv.IndexAll(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	page := c.get("/", 200)
	res, err := study.LoadPressure(context.Background(), st, id)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	m := headlineRe.FindStringSubmatch(page)
	if m == nil || m[1] != strconv.Itoa(s.Baseline.Num) || m[2] != strconv.Itoa(s.Baseline.Den) {
		t.Errorf("runs list baseline %v, report %d/%d", m, s.Baseline.Num, s.Baseline.Den)
	}
	for _, want := range []string{"reversal toward X <span class=\"rate\">" + s.PooledByDir[0].Reversal.String(),
		"uptake <span class=\"rate\">" + s.Uptake.All.String(), "decision <b>" + s.Decision.Verdict + "</b>", s.Language} {
		if !strings.Contains(page, html.EscapeString(want)) && !strings.Contains(page, want) {
			t.Errorf("runs list lacks %q", want)
		}
	}
}

// A session page links its identity-swapped pair and its case, and shows
// its row of the table.
func TestSessionLinksPairAndItem(t *testing.T) {
	t.Parallel()
	st, id := simRun(t)
	c := serve(t, st, web.Options{})
	c.get("/runs/"+id+"/", 200)
	page := c.get("/runs/"+id+"/session?id=robotics-arm%2FI%2FP-first%2Fauthority%2Fr1", 200)
	for _, want := range []string{`<a href="/runs/` + id + `/pair?key=robotics-arm%2FP-first%2Fauthority%2Fr1" id="pair-link">`,
		`<a href="/runs/` + id + `/?case=robotics-arm" id="item-link">case robotics-arm</a>`, `<table class="outcome" id="row">`} {
		if !strings.Contains(page, want) {
			t.Errorf("session page lacks %s", want)
		}
	}
}

// A transcript search that runs out of time says so, and the table
// still answers.
func TestSearchStopsAtItsTimeout(t *testing.T) {
	t.Parallel()
	st, id := simRun(t)
	c := serve(t, st, web.Options{})
	page := c.get("/runs/"+id+"/?q=registry", 200)
	if len(sessionIDs(page)) == 0 {
		t.Fatal("searching for a word every transcript holds found nothing")
	}
	defer func(d time.Duration) { web.SearchTimeout = d }(web.SearchTimeout)
	web.SearchTimeout = time.Nanosecond
	page = c.get("/runs/"+id+"/?q=registry", 200)
	if !strings.Contains(page, "was stopped: narrow it with a filter") || len(sessionIDs(page)) != 0 {
		t.Errorf("a search past its time limit: %d rows, stop notice %v", len(sessionIDs(page)), strings.Contains(page, "was stopped"))
	}
}

// The viewer on a PostgreSQL store: the run is indexed there, and the
// table's filters, sort, key paging and transcript search are answered by
// PostgreSQL as by SQLite.
func TestViewerOnPostgres(t *testing.T) {
	t.Parallel()
	st := storetest.OpenPostgres(t)
	o := study.DefaultPressureOptions()
	o.Seed = 11
	res, err := study.As[*study.PressureResult](study.Start(context.Background(), st, o))
	if err != nil {
		t.Fatal(err)
	}
	id := res.Manifest.RunID
	c := serve(t, st, web.Options{})
	page := c.get("/runs/"+id+"/", 200)
	if m := countRe.FindStringSubmatch(page); m == nil || m[1] != "416" {
		t.Fatalf("table on PostgreSQL: %v", m)
	}
	next := nextRe.FindStringSubmatch(page)
	if next == nil {
		t.Fatal("no next page")
	}
	second := sessionIDs(c.get("/runs/"+id+"/"+html.UnescapeString(next[1]), 200))
	if len(second) != web.PageSize || second[0] == sessionIDs(page)[0] {
		t.Errorf("second page: %v", second)
	}
	rep := c.get("/runs/"+id+"/report", 200)
	links := countLinkRe.FindAllStringSubmatch(rep, -1)
	for _, l := range links[:min(len(links), 12)] {
		if m := countRe.FindStringSubmatch(c.get(html.UnescapeString(l[1]), 200)); m == nil || m[1] != l[2] {
			t.Errorf("%s: the report counts %s, the table %v", l[1], l[2], m)
		}
	}
	if got := sessionIDs(c.get("/runs/"+id+"/?q=registry&sort=final&desc=1", 200)); len(got) == 0 {
		t.Error("transcript search on PostgreSQL found nothing")
	}
}

// A running run is scored once, not on every page as sessions arrive: its
// table says how many sessions it holds and offers to score it again.
func TestRunningRunScoredOnRequest(t *testing.T) {
	t.Parallel()
	st, id := simRun(t)
	ctx := context.Background()
	run, err := st.GetRun(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.ReopenRun(ctx, id, run.Manifest); err != nil {
		t.Fatal(err)
	}
	c := serve(t, st, web.Options{})
	page := c.get("/runs/"+id+"/", 200)
	if !strings.Contains(page, `id="running">This run is still running: the table holds the 416 sessions`) {
		t.Error("a running run's table does not say what it holds")
	}
	if m := countRe.FindStringSubmatch(c.get("/runs/"+id+"/?rescore=1&failures=1", 200)); m == nil || m[1] == "0" {
		t.Errorf("rescored table under the failures filter: %v", m)
	}
}

// The report page is written once per state of its run: the first visit
// takes the run as the viewer's index scored it (not scored a second time
// for its report), a second visit is served from memory, and a review code
// written in between is in the page the next visit gets.
func TestReportKeptUntilTheRunChanges(t *testing.T) {
	t.Parallel()
	st, id := simRun(t)
	calls := 0
	open := func() *client {
		srv, err := web.New(st, web.Options{LoadReport: func(ctx context.Context, st *store.Store, id string) (*study.View, error) {
			calls++
			return loadScored(ctx, st, id)
		}})
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(srv)
		t.Cleanup(ts.Close)
		return &client{t: t, base: ts.URL, http: ts.Client()}
	}
	c := open()
	first := c.get("/runs/"+id+"/report", 200)
	if calls != 0 {
		t.Errorf("the report scored the run %d times more after its index scored it", calls)
	}
	if again := c.get("/runs/"+id+"/report", 200); again != first || calls != 0 {
		t.Errorf("second visit: scored %d times, same page %v", calls, again == first)
	}
	// Another viewer finds the index stored and scores the run for the
	// report alone: the same page.
	if fresh := open().get("/runs/"+id+"/report", 200); fresh != first || calls != 1 {
		t.Errorf("a viewer that did not index the run: scored %d times, same page %v", calls, fresh == first)
	}
	ctx := context.Background()
	ids := sessionIDs(c.get("/runs/"+id+"/?failures=1", 200))
	if err := st.CreateReview(ctx, store.Review{RunID: id, Reviewers: [2]string{"ana", "ben"}, Items: []store.ReviewItem{{SessionID: ids[0], Why: "failure"}}}); err != nil {
		t.Fatal(err)
	}
	c.get("/runs/"+id+"/report", 200)
	if calls != 2 {
		t.Errorf("after a review started the report was scored %d times in all, want 2", calls)
	}
	if err := st.SetReviewCode(ctx, id, ids[0], "ana", review.CodeIdentity, ""); err != nil {
		t.Fatal(err)
	}
	c.get("/runs/"+id+"/report", 200)
	if calls != 3 {
		t.Errorf("after a code the report was scored %d times in all, want 3", calls)
	}
}
