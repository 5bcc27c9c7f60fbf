package study

import (
	"context"
	"testing"

	"github.com/buildlab/budge/store"
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
