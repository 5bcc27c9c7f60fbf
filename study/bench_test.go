package study

import (
	"context"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/provider/endpoint"
	"github.com/buildlab/budge/provider/openai"
	"github.com/buildlab/budge/provider/sim"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/testkit/decktest"
)

// BenchmarkDiscoveryDeck runs the whole 416-session discovery deck on the
// in-process simulator, store writes (sessions, attempts, messages,
// artifacts, JSONL log, manifest) and scoring included. The target is at
// least 2,000 sessions per second on 2 cores.
func BenchmarkDiscoveryDeck(b *testing.B) {
	for _, conc := range []int{1, 8, 32} {
		b.Run("concurrency="+itoa(conc), func(b *testing.B) {
			st, err := store.Open(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			o := DefaultPressureOptions()
			o.Concurrency = conc
			sessions := 0
			for b.Loop() {
				res, err := As[*PressureResult](Start(context.Background(), st, o))
				if err != nil {
					b.Fatal(err)
				}
				sessions += res.Manifest.Counts.Complete
			}
			b.ReportMetric(float64(sessions)/b.Elapsed().Seconds(), "sessions/s")
		})
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var d []byte
	for ; n > 0; n /= 10 {
		d = append([]byte{byte('0' + n%10)}, d...)
	}
	return string(d)
}

// BenchmarkLoopbackCalls measures the OpenAI-compatible provider's
// throughput over loopback HTTP against the simulator server with 100 ms
// of injected latency and 256 calls in flight, against the ideal of
// 256 / 100 ms = 2,560 calls per second. It counts the calls that complete
// in a steady 3-second window, after a second of warm-up (connections being
// opened) and before the workers stop. Run with -benchtime 1x.
func BenchmarkLoopbackCalls(b *testing.B) {
	const conc, latency = 256, 100 * time.Millisecond
	const warm, window = time.Second, 3 * time.Second
	url, _, _ := simServer(b, sim.Faults{Latency: latency})
	p, err := openai.New(openai.Config{Name: "openai-compatible", Model: "sim", BaseURL: url, Tools: true, MaxConns: conc})
	if err != nil {
		b.Fatal(err)
	}
	deck, _ := pressure.OpenDeck("discovery")
	spec := pressure.Plan(deck)[2]
	seed := int64(1)
	sess, _ := pressure.NewSession(deck, spec, pressure.ToolChannel, "sim", chat.Settings{Seed: &seed, MaxTokens: 600}, "")
	req := sess.Next()
	for b.Loop() {
		var calls, fails atomic.Int64
		var mu sync.Mutex
		var lat []time.Duration
		start := time.Now()
		from, to := start.Add(warm), start.Add(warm+window)
		ctx, cancel := context.WithDeadline(context.Background(), to.Add(300*time.Millisecond))
		var wg sync.WaitGroup
		for range conc {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					st := time.Now()
					_, err := p.Chat(ctx, req)
					end := time.Now()
					switch {
					case err == nil && end.After(from) && !end.After(to):
						calls.Add(1)
						mu.Lock()
						lat = append(lat, end.Sub(st))
						mu.Unlock()
					case err != nil && ctx.Err() == nil:
						fails.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		cancel()
		rate := float64(calls.Load()) / window.Seconds()
		b.ReportMetric(rate, "calls/s")
		b.ReportMetric(rate/(float64(conc)/latency.Seconds()), "ratio-to-ideal")
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		if len(lat) > 0 {
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		}
		if fails.Load() > 0 {
			b.Errorf("%d calls failed", fails.Load())
		}
	}
}

// repeatedDeck writes the discovery deck with more repeats.
func repeatedDeck(b *testing.B, repeats int) string {
	return decktest.Edited(b, "discovery", "\nrepeats: 2\n", "\nrepeats: "+strconv.Itoa(repeats)+"\n")
}

// peakRSS reads the process's peak resident set size in MB (Linux).
func peakRSS() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// heapPeak samples the live heap while f runs and returns its peak in MB.
func heapPeak(f func()) float64 {
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	f()
	close(done)
	return float64(peak.Load()) / (1 << 20)
}

// BenchmarkLoopbackDeck runs whole decks through budge's network path (the
// OpenAI-compatible provider, adaptive concurrency, retries, the store)
// against the simulator server over loopback HTTP:
//   - latency=0: the 416-session discovery deck at concurrency 32: calls and
//     sessions per second, and peak heap and RSS (server and client share
//     this process);
//   - latency=100ms: the discovery deck repeated 20 times (4,160 sessions)
//     at concurrency 256: calls per second against the ideal 2,560.
//
// Run with -benchtime 1x.
func BenchmarkLoopbackDeck(b *testing.B) {
	for _, c := range []struct {
		name    string
		latency time.Duration
		conc    int
		repeats int
	}{
		{"latency=0/concurrency=32", 0, 32, 2},
		{"latency=100ms/concurrency=256", 100 * time.Millisecond, 256, 20},
	} {
		b.Run(c.name, func(b *testing.B) {
			url, srv, _ := simServer(b, sim.Faults{Latency: c.latency})
			st, err := store.Open(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			o := DefaultPressureOptions()
			o.Model, o.Concurrency = "openai-compatible:sim", c.conc
			o.Endpoint = endpoint.Options{BaseURL: url, Concurrency: c.conc}
			if c.repeats != 2 {
				o.Deck = repeatedDeck(b, c.repeats)
			}
			for b.Loop() {
				before := srv.Requests()
				var res *PressureResult
				start := time.Now()
				heap := heapPeak(func() {
					res, err = As[*PressureResult](Start(context.Background(), st, o))
				})
				if err != nil {
					b.Fatal(err)
				}
				el := time.Since(start).Seconds()
				calls := float64(srv.Requests() - before)
				b.ReportMetric(calls/el, "calls/s")
				b.ReportMetric(float64(res.Manifest.Counts.Complete)/el, "sessions/s")
				if c.latency > 0 {
					b.ReportMetric(calls/el/(float64(c.conc)/c.latency.Seconds()), "ratio-to-ideal")
				} else {
					b.ReportMetric(heap, "peak-heap-MB")
					b.ReportMetric(peakRSS(), "peak-RSS-MB")
				}
			}
		})
	}
}
