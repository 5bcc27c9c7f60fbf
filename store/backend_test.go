package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/buildlab/budge/testkit/pgtest"
)

// The conformance suite: every store test that is not about SQLite's files
// is in suite, and runs once on each backend (TestBackends), under the
// subtests "sqlite" and "postgres"; openStore and storeOpener open the
// backend the subtest names. Tests about SQLite's files (a damaged or
// emptied database file, pack files, WAL, permissions on disk) call
// neither and say so.

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// backends are the backends every conformance test runs on.
var backends = []string{"sqlite", "postgres"}

// suite is the conformance suite: the store's behaviour that both backends
// share, each test as it runs on one backend (openStore and storeOpener
// open a store of it). TestBackends runs every test on SQLite and on
// PostgreSQL (with BUDGE_PG_TESTS=1; see testkit/pgtest); run one with
// go test -run 'TestBackends/sqlite/Artifacts$'.
var suite = []struct {
	name string
	test func(t *testing.T)
}{
	{"CellsClaimedOnce", testCellsClaimedOnce},
	{"CellsTakenOverFromStoppedWorker", testCellsTakenOverFromStoppedWorker},
	{"CellsOneFinisher", testCellsOneFinisher},
	{"CellsOneLastToStop", testCellsOneLastToStop},
	{"CellsReopen", testCellsReopen},
	{"CellsOfDeadProcessReleased", testCellsOfDeadProcessReleased},
	{"PaceSharedByWorkers", testPaceSharedByWorkers},
	{"CellsManyAtOnce", testCellsManyAtOnce},
	{"CellFence", testCellFence},
	{"CellRenewalWritesNoCell", testCellRenewalWritesNoCell},
	{"CellStoredOnceFromOneBatch", testCellStoredOnceFromOneBatch},
	{"CellsNotTakenOverBySelf", testCellsNotTakenOverBySelf},
	{"LeaseOneHolder", testLeaseOneHolder},
	{"LeaseRace", testLeaseRace},
	{"LeaseStaleHeartbeatIsTakenOver", testLeaseStaleHeartbeatIsTakenOver},
	{"LeaseOfDeadProcessIsTakenOver", testLeaseOfDeadProcessIsTakenOver},
	{"CreateRunLeased", testCreateRunLeased},
	{"LeaseCheck", testLeaseCheck},
	{"SessionPageFiltersAndPages", testSessionPageFiltersAndPages},
	{"ReviewRules", testReviewRules},
	{"RepairLog", testRepairLog},
	{"CorruptColumnsAreErrors", testCorruptColumnsAreErrors},
	{"CreateRunGetRunRoundTrip", testCreateRunGetRunRoundTrip},
	{"ListRunsNewestFirst", testListRunsNewestFirst},
	{"ListRunsNewestFirstWithinASecond", testListRunsNewestFirstWithinASecond},
	{"Resolve", testResolve},
	{"WriteSessionsRoundTrip", testWriteSessionsRoundTrip},
	{"WriteSessionsNeverOverwrites", testWriteSessionsNeverOverwrites},
	{"InterruptedSessionsKeepOnlyAttempts", testInterruptedSessionsKeepOnlyAttempts},
	{"Artifacts", testArtifacts},
	{"VerifyArtifacts", testVerifyArtifacts},
	{"ArtifactsAfterReopen", testArtifactsAfterReopen},
	{"FinishRun", testFinishRun},
	{"Log", testLog},
	{"WriteSessionsLargeBatches", testWriteSessionsLargeBatches},
	{"UnstoreFailed", testUnstoreFailed},
	{"TextFromOutsideRoundTrips", testTextFromOutsideRoundTrips},
	{"ViewIndex", testViewIndex},
	{"Batches", testBatches},
}

// TestBackends runs the conformance suite on every backend.
func TestBackends(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			for _, c := range suite {
				t.Run(c.name, c.test)
			}
		})
	}
}

// onPostgres reports whether t runs under TestBackends' postgres subtest.
func onPostgres(t testing.TB) bool {
	return strings.Contains(t.Name()+"/", "/postgres/")
}

// storeOpener returns a function that opens one new store each time it is
// called on the same location (a directory, or a fresh PostgreSQL schema),
// closing it when the test ends.
func storeOpener(t testing.TB) func() (*Store, error) {
	t.Helper()
	if !onPostgres(t) {
		dir := filepath.Join(t.TempDir(), "store")
		return func() (*Store, error) { return track(t)(Open(dir)) }
	}
	url := pgtest.Shared(t).FreshURL(t)
	cache := t.TempDir()
	return func() (*Store, error) { return track(t)(OpenURL(context.Background(), url, cache)) }
}

// track closes an opened store when the test ends.
func track(t testing.TB) func(*Store, error) (*Store, error) {
	return func(s *Store, err error) (*Store, error) {
		if err == nil {
			t.Cleanup(func() { s.Close() })
		}
		return s, err
	}
}

// openStore opens a new, empty store on the test's backend and closes it
// when the test ends.
func openStore(t testing.TB) *Store {
	t.Helper()
	s, err := storeOpener(t)()
	if err != nil {
		t.Fatal(err)
	}
	return s
}
