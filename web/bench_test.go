package web_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/buildlab/budge/study"
	"github.com/buildlab/budge/testkit/storetest"
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

// The run diff's cost is counted in scorings of one run (BenchmarkLoadPressure,
// 416 sessions): a diff's first request loads both runs, runs compare's
// paired pass and counts the cells (six scorings); a later page of the same
// diff reads the cells only up to the page it shows, and the changed-only
// filter reads them all (at most two scorings, no measures).

func getDiff(b *testing.B, url string) {
	resp, err := http.Get(url)
	if err != nil || resp.StatusCode != 200 {
		b.Fatal(err, resp.Status)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

func diffServer(b *testing.B, fresh bool) (func() string, func()) {
	st, a, bb := twoSimRuns(b)
	var ts *httptest.Server
	start := func() {
		srv, err := web.New(st, web.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if ts != nil {
			ts.Close()
		}
		ts = httptest.NewServer(srv)
	}
	start()
	return func() string {
			if fresh {
				b.StopTimer()
				start()
				b.StartTimer()
			}
			return ts.URL + "/diff?a=" + a + "&b=" + bb
		}, func() {
			ts.Close()
		}
}

func BenchmarkRunDiffFirstRequest(b *testing.B) {
	url, done := diffServer(b, true)
	defer done()
	for b.Loop() {
		getDiff(b, url())
	}
}

func BenchmarkRunDiffNextPage(b *testing.B) { benchDiffAfterFirst(b, "&page=2") }

func BenchmarkRunDiffChangedOnly(b *testing.B) { benchDiffAfterFirst(b, "&changed=1") }

// benchDiffAfterFirst times a request of a diff with query added, after
// its first request.
func benchDiffAfterFirst(b *testing.B, query string) {
	url, done := diffServer(b, false)
	defer done()
	getDiff(b, url())
	for b.Loop() {
		getDiff(b, url()+query)
	}
}

func BenchmarkLoadPressure(b *testing.B) {
	st, a, _ := twoSimRuns(b)
	for b.Loop() {
		if _, err := study.LoadPressure(context.Background(), st, a); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunDiffMemory serves the first request of a diff (the whole of
// both runs read: compare's passes and every cell counted) on runs of the
// discovery deck repeated 2 times (416 sessions) and 16 times (3,328), and
// reports the peak live heap during the request: it should not grow with
// the runs (a batch of each run and a page of cells), while the time grows
// linearly. Run it with
//
//	go test ./web -run '^$' -bench RunDiffMemory -benchtime 1x
func BenchmarkRunDiffMemory(b *testing.B) {
	src, err := os.ReadFile(filepath.Join("..", "pressure", "decks", "discovery.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	for _, repeats := range []int{2, 16} {
		b.Run(fmt.Sprintf("sessions-%d", 208*repeats), func(b *testing.B) {
			deck := filepath.Join(b.TempDir(), "discovery.yaml")
			text := strings.Replace(string(src), "\nrepeats: 2\n", fmt.Sprintf("\nrepeats: %d\n", repeats), 1)
			if err := os.WriteFile(deck, []byte(text), 0o644); err != nil {
				b.Fatal(err)
			}
			st := storetest.Open(b)
			var ids []string
			for _, model := range []string{"sim", "sim:steadfast"} {
				o := study.DefaultPressureOptions()
				o.Seed, o.Model, o.Deck = 11, model, deck
				res, err := study.As[*study.PressureResult](study.Start(context.Background(), st, o))
				if err != nil {
					b.Fatal(err)
				}
				ids = append(ids, res.Manifest.RunID)
			}
			var peak uint64
			for b.Loop() {
				srv, err := web.New(st, web.Options{})
				if err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				var base runtime.MemStats
				runtime.ReadMemStats(&base)
				stop := make(chan struct{})
				done := make(chan uint64)
				go func() {
					var m runtime.MemStats
					var top uint64
					for {
						runtime.ReadMemStats(&m)
						top = max(top, m.HeapInuse)
						select {
						case <-stop:
							done <- top
							return
						case <-time.After(2 * time.Millisecond):
						}
					}
				}()
				rec := httptest.NewRecorder()
				req := httptest.NewRequest(http.MethodGet, "/diff?a="+ids[0]+"&b="+ids[1], nil)
				req.Host = "127.0.0.1:8484"
				srv.ServeHTTP(rec, req)
				close(stop)
				top := <-done
				if rec.Code != 200 || !strings.Contains(rec.Body.String(), fmt.Sprintf("%d cells", 208*repeats)) {
					b.Fatalf("diff: %d %.300s", rec.Code, rec.Body.String())
				}
				if top > base.HeapInuse {
					peak = max(peak, top-base.HeapInuse)
				}
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
		})
	}
}
