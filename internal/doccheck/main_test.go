package doccheck

import (
	"os"
	"testing"

	"github.com/buildlab/budge/testkit/paralleltest"
)

// TestMain lets the collector run less often: the documented commands run
// whole decks in this process, allocating much and keeping little.
func TestMain(m *testing.M) {
	paralleltest.FewerCollections()
	os.Exit(m.Run())
}
