// Package paralleltest lets a package whose tests mostly wait (on child
// processes, servers, retry delays and leases) run more of its parallel
// tests at once than the machine has cores: go test runs GOMAXPROCS of
// them at a time unless -parallel says otherwise.
package paralleltest

import (
	"flag"
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
