package web_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/buildlab/budge/study"
	"github.com/buildlab/budge/web"
)

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

func BenchmarkRunDiffNextPage(b *testing.B) {
	url, done := diffServer(b, false)
	defer done()
	getDiff(b, url())
	for b.Loop() {
		getDiff(b, url()+"&page=2")
	}
}

func BenchmarkRunDiffChangedOnly(b *testing.B) {
	url, done := diffServer(b, false)
	defer done()
	getDiff(b, url())
	for b.Loop() {
		getDiff(b, url()+"&changed=1")
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
