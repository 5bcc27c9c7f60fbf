package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"time"
)

// heapProfiles writes a heap profile to $BUDGE_HEAPPROFILE every
// $BUDGE_HEAPPROFILE_EVERY (default 5 s), replacing the last one, while the
// live heap is at its highest so far: the file left holds the peak. It is
// for the benchmarks under bench/; nothing is written when the variable is
// unset.
func heapProfiles() {
	path := os.Getenv("BUDGE_HEAPPROFILE")
	if path == "" {
		return
	}
	every := 5 * time.Second
	if d, err := time.ParseDuration(os.Getenv("BUDGE_HEAPPROFILE_EVERY")); err == nil && d > 0 {
		every = d
	}
	go func() {
		var peak uint64
		for range time.Tick(every) {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse+m.StackInuse <= peak {
				continue
			}
			peak = m.HeapInuse + m.StackInuse
			if err := write(path, m); err != nil {
				fmt.Fprintln(os.Stderr, "BUDGE_HEAPPROFILE:", err)
				return
			}
		}
	}()
}

func write(path string, m runtime.MemStats) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	// The Go runtime's share of the RSS is about its heap held from the
	// system (in use or not yet returned) and its stacks; the rest is
	// outside it (the embedded SQLite's allocations, the mapped binary).
	fmt.Fprintf(os.Stderr, "heap profile: heap %d MB (%d MB held from the system), stacks %d MB, goroutines %d\n", m.HeapInuse>>20, (m.HeapSys-m.HeapReleased)>>20, m.StackInuse>>20, runtime.NumGoroutine())
	return os.Rename(tmp, path)
}

// cpuProfile writes a CPU profile of the whole command to
// $BUDGE_CPUPROFILE, for the benchmarks under bench/; the function it
// returns ends it, and then copies the process's I/O counters
// (/proc/self/io on Linux: read and write calls, bytes read from the
// page cache and from the disk) to the same path with ".io" added, which
// count the store's page reads however loaded the machine is. Nothing is
// written when the variable is unset.
func cpuProfile() (stop func()) {
	path := os.Getenv("BUDGE_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "BUDGE_CPUPROFILE:", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "BUDGE_CPUPROFILE:", err)
		}
		if io, err := os.ReadFile("/proc/self/io"); err == nil {
			if err := os.WriteFile(path+".io", io, 0o644); err != nil {
				fmt.Fprintln(os.Stderr, "BUDGE_CPUPROFILE:", err)
			}
		}
	}
}
