package store

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// knows tells whether the store's writer holds sha as known in the run's
// artifact index, in the generation of the session se.
func knows(s *Store, runID string, se Session, sha string) bool {
	a := s.arts.(*packFiles)
	a.mu.Lock()
	defer a.mu.Unlock()
	k, _ := shaKey(sha)
	return a.known[runID] != nil && a.known[runID].has(artKey{generation(se.SchedulePos), k})
}

// TestKnownArtifactsOnceCommitted: the artifacts of a batch that was not
// committed are not taken as stored (a later batch stores them); those of
// a committed one are, and are not stored again.
func TestKnownArtifactsOnceCommitted(t *testing.T) {
	open := storeOpener(t)
	s, err := open()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	createRun(t, s, "run", base)
	one := testSession("one", 0)
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := s.arts.put(ctx, tx, "run", []Session{one})
	if err != nil || committed == nil {
		t.Fatalf("put: %v", err)
	}
	tx.Rollback() // committed is not called
	for sha := range one.Artifacts {
		if knows(s, "run", one, sha) {
			t.Fatalf("artifact %s of a rolled-back batch is known", sha)
		}
	}
	mustWrite(t, s, "run", one)
	for sha, b := range one.Artifacts {
		mustArtifact(t, s, "run", sha, b.Data)
		if !knows(s, "run", one, sha) {
			t.Errorf("artifact %s of a committed batch is not known", sha)
		}
	}
	size := packSize(t, s, "run")
	writeGrowsPack(t, s, "run", size, withArtifacts("two", "one", 1))
	if err := s.VerifyArtifacts(ctx, "run"); err != nil {
		t.Fatal(err)
	}
	// Another process (a store opened again) does not know them, asks the
	// index, and does not store them again either.
	s.Close()
	s2, err := open()
	if err != nil {
		t.Fatal(err)
	}
	writeGrowsPack(t, s2, "run", size, withArtifacts("three", "one", 2))
}

func TestRecentSetKeepsTheLatest(t *testing.T) {
	r := &recentSet{cur: map[artKey]struct{}{}}
	key := func(i int) artKey {
		var k artKey
		copy(k.sha[:], fmt.Sprintf("%032d", i))
		return k
	}
	for i := range 3 * knownLimit {
		r.add(key(i))
	}
	if n := len(r.cur) + len(r.prev); n > knownLimit {
		t.Errorf("holds %d hashes, more than %d", n, knownLimit)
	}
	for i := 3*knownLimit - knownLimit/2; i < 3*knownLimit; i++ {
		if !r.has(key(i)) {
			t.Fatalf("hash %d of the latest %d is not held", i, knownLimit/2)
		}
	}
	if r.has(key(0)) {
		t.Error("the first hash is still held")
	}
}

// BenchmarkWriteSessions stores batches of 64 sessions of a run shaped
// like a discovery-deck run's: seven artifacts a session, of which the
// answers recur across sessions.
func BenchmarkWriteSessions(b *testing.B) {
	s, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := s.CreateRun(ctx, testRun("run", base), "builtin:run", []byte("deck")); err != nil {
		b.Fatal(err)
	}
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		batch := make([]Session, 64)
		for i := range batch {
			se := testSession(fmt.Sprintf("s%d", n), n)
			for k := range 3 {
				sha, blob := Pack(fmt.Appendf(nil, `{"answer":%d,"of":%d}`, n%50, k))
				se.Artifacts[sha] = blob
			}
			se.Spec = json.RawMessage(fmt.Sprintf(`{"case":"s%d"}`, n))
			batch[i] = se
			n++
		}
		if err := s.WriteSessions(ctx, "run", batch); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMoveCellsByPrimaryKey: on SQLite the update that moves a batch's
// cells on finds them by their ids, not by reading every claimed cell of
// the run through cells_by_state.
func TestMoveCellsByPrimaryKey(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	cellRun(t, s, "r", 50)
	w, err := s.Join(ctx, "r", Holder{Host: "h", PID: 1, Name: "w"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	q, args := w.moveCells([]Session{asRun("s001", 1, 1), asRun("s002", 2, 0)}, CellDone)
	plan := queryPlan(t, s, q, args...)
	if len(plan) == 0 || !strings.Contains(strings.Join(plan, "\n"), "sqlite_autoindex_cells_1 (run_id=? AND session_id=?)") {
		t.Errorf("the update's plan is %q, want a search by the primary key", plan)
	}
}

// SQLite only: a run stores an artifact once in each generation of its
// sessions. A session of the generation that has it stores it again
// neither from this process's memory nor, once the store is opened again,
// from the index; a session of the next generation stores it once more
// (both copies verify, either is what Artifact reads); a session far
// behind the generations being written (resumed) finds it in its own.
func TestArtifactsOncePerGeneration(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s := openCurrent(t, dir)
	createRun(t, s, "run", base)
	at := func(id string, pos int) Session {
		se := withArtifacts(id, "shared", 0)
		se.Seq, se.SchedulePos = pos, pos
		return se
	}
	first := at("a", 0)
	size := artifactBytes(first)
	writeGrowsPack(t, s, "run", size, first)
	writeGrowsPack(t, s, "run", size, at("b", artifactGen-1))
	s.Close()
	s = openCurrent(t, dir)
	writeGrowsPack(t, s, "run", size, at("c", 1))
	writeGrowsPack(t, s, "run", 2*size, at("d", artifactGen))
	writeGrowsPack(t, s, "run", 2*size, at("e", 2*artifactGen-1), at("f", 5))
	for sha, b := range first.Artifacts {
		mustArtifact(t, s, "run", sha, b.Data)
		var rows int
		if err := s.db.QueryRow(`SELECT COUNT(*) FROM artifacts WHERE run_id = 'run' AND sha256 = $1`, sha).Scan(&rows); err != nil || rows != 2 {
			t.Errorf("artifact %s has %d rows (%v), want one in each of two generations", sha, rows, err)
		}
	}
	if err := s.VerifyArtifacts(context.Background(), "run"); err != nil {
		t.Error(err)
	}
	// Found in a generation after the first too (the lookup steps through
	// them), and in none of another run.
	late := at("g", 3*artifactGen)
	late.Artifacts = map[string]Blob{}
	sha, blob := Pack([]byte("only in generation 3"))
	late.Artifacts[sha] = blob
	mustWrite(t, s, "run", late)
	mustArtifact(t, s, "run", sha, blob.Data)
	createRun(t, s, "other", base)
	if _, err := s.Artifact(context.Background(), "other", sha); err == nil {
		t.Error("another run's artifact was found")
	}
}

// SQLite only: finding an artifact by hash seeks it in each generation
// through the whole key of artifacts_by_gen (run, generation, the hash's
// first digits), never reading a generation's entries one by one.
func TestArtifactLookupUsesTheWholeKey(t *testing.T) {
	s := openCurrent(t, filepath.Join(t.TempDir(), "store"))
	sha := strings.Repeat("ab", 32)
	plan := queryPlan(t, s, inAnyGeneration, shaHead(sha), "run", sha)
	whole := false
	for _, step := range plan {
		whole = whole || strings.Contains(step, "artifacts_by_gen (run_id=? AND gen=? AND <expr>=?)")
	}
	if !whole {
		t.Errorf("the lookup does not seek by the whole key:\n%s", strings.Join(plan, "\n"))
	}
}
