package web_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/buildlab/budge/study"
	"github.com/buildlab/budge/testkit/storetest"
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
