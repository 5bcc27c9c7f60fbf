// Package paralleltest tunes a test binary to the machine it shares: a
// package whose tests mostly wait (on child processes, servers, retry
// delays and leases) runs more of its parallel tests at once than the
// machine has cores (go test runs GOMAXPROCS of them at a time unless
// -parallel says otherwise), and one whose tests allocate much collects
// less often.
package paralleltest

import (
	"flag"
	"os"
	"runtime/debug"
	"strconv"
)

// AtLeast raises -test.parallel to n unless the command line set it. Call
// it from TestMain, before m.Run.
func AtLeast(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	f := flag.Lookup("test.parallel")
	if f == nil {
		return
	}
	set := false
	flag.Visit(func(v *flag.Flag) { set = set || v.Name == f.Name })
	if cur, err := strconv.Atoi(f.Value.String()); !set && err == nil && cur < n {
		f.Value.Set(strconv.Itoa(n))
	}
}

// FewerCollections lets the garbage collector of a test binary whose tests
// allocate much and keep little run a quarter as often (GOGC=400), unless
// GOGC is set or benchmarks run, whose time and memory figures must be the
// program's. Call it from TestMain, before m.Run. The suite's CPU goes to
// the tests, not the collector; tests that measure memory do not call it.
func FewerCollections() {
	if !flag.Parsed() {
		flag.Parse()
	}
	if os.Getenv("GOGC") != "" {
		return
	}
	if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
		return
	}
	debug.SetGCPercent(400)
}
