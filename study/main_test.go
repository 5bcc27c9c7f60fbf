package study

import (
	"os"
	"testing"

	"github.com/buildlab/budge/testkit/paralleltest"
	"github.com/buildlab/budge/testkit/pgtest"
)

// TestMain runs up to four parallel tests at once, on any machine: many
// wait on servers, retry delays, leases or an inference server rather
// than compute. The PostgreSQL tests share one server (pgtest.Main).
func TestMain(m *testing.M) {
	paralleltest.AtLeast(4)
	os.Exit(pgtest.Main(m))
}
