package web_test

import (
	"context"
	"database/sql"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/buildlab/budge/web"
)

// viewerRows is how many sessions BenchmarkViewerIndexed gives its run's
// index: BUDGE_VIEWER_ROWS, or the million.
func viewerRows(b *testing.B) int {
	n := 1_000_000
	if v := os.Getenv("BUDGE_VIEWER_ROWS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 416 {
			b.Fatalf("BUDGE_VIEWER_ROWS=%q: want a number of sessions, at least 416", v)
		}
	}
	return n
}

// grownIndex scores a 416-session simulator run for the viewer, then
// copies its index rows under new session ids (and plan positions past
// the run's), doubling, until the index holds n sessions: the pages read the index,
// so they do the work they would on a run that size. Transcripts are not
// copied: a text search and the report page scan the run's 416 sessions,
// and bench/viewer.sh measures them on a real run.
func grownIndex(b *testing.B, n int) (*web.Server, string) {
	st, id := simRun(b)
	srv, err := web.New(st, web.Options{LoadReport: loadScored})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := srv.IndexAll(context.Background(), nil); err != nil {
		b.Fatal(err)
	}
	b.Logf("scoring 416 sessions for the viewer: %v", time.Since(start))
	db, err := sql.Open("sqlite", "file:"+filepath.Join(st.Dir, "budge.db")+"?_pragma=busy_timeout(10000)")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	start = time.Now()
	cols := `status, attempts, case_id, branch, assignment, profile_order, item, first_sel, first_status, final_sel, final_status,
		reversal, correction, update_observed, contradiction, failure, transport, parse_failure, discordant, direction, pair`
	// Doubling: each round copies every row so far, under a new suffix
	// and past the last plan position.
	for k, have := 1, 416; have < n; k++ {
		if _, err := db.Exec(`INSERT INTO view_sessions (run_id, session_id, seq, `+cols+`)
			SELECT run_id, session_id || '#' || ?, seq + ?, `+cols+` FROM view_sessions WHERE run_id = ? ORDER BY seq LIMIT ?`,
			k, have, id, n-have); err != nil {
			b.Fatal(err)
		}
		have += min(have, n-have)
	}
	if _, err := db.Exec(`UPDATE view_runs SET sessions = (SELECT COUNT(*) FROM view_sessions WHERE run_id = ?) WHERE run_id = ?`, id, id); err != nil {
		b.Fatal(err)
	}
	if _, err := db.Exec(`PRAGMA analysis_limit = 1000; ANALYZE view_sessions`); err != nil { // as WriteView's Finish does
		b.Fatal(err)
	}
	b.Logf("index grown to %d sessions in %v", n, time.Since(start))
	return srv, id
}

// BenchmarkViewerIndexed measures the viewer's pages on a run whose index
// holds a million sessions (BUDGE_VIEWER_ROWS): the runs list, the first
// page of the session table, the failures-only filter and the page after
// it, a sort, the discordant filter, opening a session and a pair. The
// issue's targets: under 500 ms a page, under 50 ms a session. Run it with
//
//	go test ./web -run '^$' -bench ViewerIndexed -benchtime 10x -timeout 60m
func BenchmarkViewerIndexed(b *testing.B) {
	n := viewerRows(b)
	srv, id := grownIndex(b, n)
	get := func(b *testing.B, path string) []byte {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Host = "127.0.0.1:8484"
		srv.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body.String())
		}
		return rec.Body.Bytes()
	}
	base := "/runs/" + id
	page := get(b, base+"/?failures=1")
	next := nextRe.FindSubmatch(page)
	if next == nil {
		b.Fatalf("the failures filter has one page on %d sessions", n)
	}
	after, _ := url.ParseQuery(string(next[1])[1:])
	deep := base + "/?failures=1&after=" + url.QueryEscape(after.Get("after"))
	for _, c := range []struct{ name, path string }{
		{"runs-list", "/"},
		{"table-first-page", base + "/"},
		{"failures-only", base + "/?failures=1"},
		{"failures-next-page", deep},
		{"sort-final-desc", base + "/?sort=final&desc=1"},
		{"discordant-unreviewed", base + "/?discordant=1&unreviewed=1"},
		{"branch-and-direction", base + "/?branch=authority&direction=X&reversal=yes"},
		{"open-session", base + "/session?id=" + url.QueryEscape("robotics-arm/II/Q-first/correction/r1")},
		{"open-pair", base + "/pair?key=" + url.QueryEscape("robotics-arm/Q-first/authority/r1")},
	} {
		b.Run(c.name, func(b *testing.B) {
			size := 0
			for b.Loop() {
				size = len(get(b, c.path))
			}
			b.ReportMetric(float64(size), "bytes/page")
		})
	}
}
