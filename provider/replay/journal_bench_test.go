package replay

import (
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// BenchmarkJournalAppend records answers of about 2 KB from 256 calls at
// once, as a run at --concurrency 256 does: "grouped" is the journal,
// "one-write-each" the same lines written one write each under the lock
// (the journal before group writing). writes/op is the writes per answer;
// compare the two with benchstat, or read the ns/op ratio.
func BenchmarkJournalAppend(b *testing.B) {
	entry := []byte(`{"response":{"message":{"role":"assistant","content":"` + strings.Repeat("x", 2000) + `"}}}`)
	b.Run("one-write-each", func(b *testing.B) {
		f, err := os.Create(filepath.Join(b.TempDir(), "j"+journalSuffix))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		var mu sync.Mutex
		b.SetParallelism(128) // 256 goroutines on 2 cores
		b.SetBytes(int64(len(entry)))
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			var key [32]byte
			for pb.Next() {
				mu.Lock()
				line := make([]byte, 0, keyWidth+2+len(entry))
				line = hex.AppendEncode(line, key[:])
				line = append(append(append(line, '\t'), entry...), '\n')
				f.Write(line)
				mu.Unlock()
			}
		})
		b.ReportMetric(1, "writes/op")
	})
	b.Run("grouped", func(b *testing.B) {
		j, err := OpenJournal(b.TempDir(), &counting{})
		if err != nil {
			b.Fatal(err)
		}
		defer j.Close()
		b.SetParallelism(128)
		b.SetBytes(int64(len(entry)))
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			var key [32]byte
			for pb.Next() {
				if err := j.append(key, entry, false); err != nil {
					b.Error(err)
				}
			}
		})
		b.StopTimer()
		j.mu.Lock()
		b.ReportMetric(float64(j.written)/float64(b.N), "writes/op")
		j.mu.Unlock()
	})
}

// BenchmarkJournalIndex opens a journal an earlier process left with
// 300,000 answers (a batch run of 100,000 sessions) and reports the heap
// its index holds per answer (index-B/answer): what a batch run's memory
// grows by with its sessions, about three answers a session.
func BenchmarkJournalIndex(b *testing.B) {
	const answers = 300_000
	dir := b.TempDir()
	f, err := os.Create(filepath.Join(dir, "earlier"+journalSuffix))
	if err != nil {
		b.Fatal(err)
	}
	line := make([]byte, 0, 256)
	for i := range answers {
		var key [32]byte
		binary.LittleEndian.PutUint64(key[:], uint64(i)*0x9E3779B97F4A7C15)
		line = hex.AppendEncode(line[:0], key[:])
		line = append(line, "\t{\"response\":{\"message\":{\"role\":\"assistant\",\"content\":\"ok\"}}}\n"...)
		if _, err := f.Write(line); err != nil {
			b.Fatal(err)
		}
	}
	f.Close()
	b.ResetTimer()
	for range b.N {
		before := liveHeap()
		j, err := OpenJournal(dir, &counting{})
		if err != nil {
			b.Fatal(err)
		}
		after := liveHeap()
		if got := j.index.Len(); got != answers {
			b.Fatalf("indexed %d answers, want %d", got, answers)
		}
		j.Close()
		b.ReportMetric(float64(after-before)/answers, "index-B/answer")
	}
}

func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
