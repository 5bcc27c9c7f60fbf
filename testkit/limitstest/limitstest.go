// Package limitstest helps test that hostile files are refused within the
// memory the file limits allow.
package limitstest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// MaxHostileAlloc is what refusing one hostile file may allocate in total.
const MaxHostileAlloc = 200 << 20

// Allocated returns the bytes fn allocates (MemStats.TotalAlloc before and
// after; the test runs alone in its goroutine, so the delta is fn's).
func Allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Refuse runs refuse, which reads the hostile file path, and fails t when
// it allocates more than MaxHostileAlloc.
func Refuse(t testing.TB, path string, refuse func()) {
	t.Helper()
	if n := Allocated(refuse); n > MaxHostileAlloc {
		t.Errorf("refusing %s allocated %d MB, want under %d MB", path, n>>20, MaxHostileAlloc>>20)
	}
}

// WriteFile writes content to a file named name in a temporary folder and
// returns its path.
func WriteFile(t testing.TB, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
