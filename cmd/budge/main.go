// Command budge measures how easily an LLM product's correct decision can be
// changed: by unsupported pressure, and by verified corrections.
package main

import (
	"context"
	"os"

	"github.com/buildlab/budge/internal/cli"
)

func main() {
	heapProfiles()
	stop := cpuProfile()
	code := cli.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
