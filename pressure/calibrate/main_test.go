package calibrate

import (
	"os"
	"testing"

	"github.com/buildlab/budge/testkit/paralleltest"
)

// TestMain lets the collector run less often: the simulated runs and
// replications allocate much and keep little.
func TestMain(m *testing.M) {
	paralleltest.FewerCollections()
	os.Exit(m.Run())
}
