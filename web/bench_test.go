package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/web"
)

// bigRun stores a 100,000-session run: the 416 sessions of a simulator run
// repeated under new repeat numbers, written straight into the store.
func bigRun(b *testing.B) (*store.Store, string) {
	st, src := simRun(b)
	ctx := context.Background()
	ss, err := st.Sessions(ctx, src)
	if err != nil {
		b.Fatal(err)
	}
	const total = 100_000
	id := src + "-100k"
	n := 0
	cloneRun(b, st, src, id, func(*store.Session) {}) // the first 416
	n += len(ss)
	for copyN := 1; n < total; copyN++ {
		var batch []store.Session
		for _, se := range ss {
			if n >= total {
				break
			}
			var spec pressure.Spec
			if err := json.Unmarshal(se.Spec, &spec); err != nil {
				b.Fatal(err)
			}
			spec.Repeat += 2 * copyN
			se.ID = spec.ID()
			se.Spec, _ = json.Marshal(spec)
			se.Seq = n
			batch = append(batch, se)
			n++
		}
		if err := st.WriteSessions(ctx, id, batch); err != nil {
			b.Fatal(err)
		}
	}
	return st, id
}

// BenchmarkViewer100k measures the viewer on a 100,000-session run: the
// first page of the session table, a filtered page deep in the table, one
// session's transcript and one matched pair. Run it with
//
//	go test ./web -run '^$' -bench Viewer100k -benchtime 20x
func BenchmarkViewer100k(b *testing.B) {
	st, id := bigRun(b)
	start := time.Now()
	srv, err := web.New(st, web.Options{}) // creates the browse indexes over the stored run
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("viewer start on a store with 100,000 sessions and no browse indexes: %v", time.Since(start))
	get := func(b *testing.B, path string) int {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Host = "127.0.0.1:8484"
		srv.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body.String())
		}
		return rec.Body.Len()
	}
	base := "/runs/" + id
	for _, c := range []struct{ name, path string }{
		{"list", base + "/"},
		{"list-filtered-page-20", base + "/?branch=authority&direction=X&assignment=II&page=20"},
		{"list-last-page", base + fmt.Sprintf("/?page=%d", 100_000/web.PageSize)},
		{"open-session", base + "/session?id=" + url.QueryEscape("robotics-arm/II/Q-first/correction/r200")},
		{"open-pair", base + "/pair?key=" + url.QueryEscape("robotics-arm/Q-first/authority/r150")},
	} {
		b.Run(c.name, func(b *testing.B) {
			size := 0
			for b.Loop() {
				size = get(b, c.path)
			}
			b.ReportMetric(float64(size), "bytes/page")
		})
	}
}
