package store

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/buildlab/budge/chat"
)

func testRun(id string, created time.Time) Run {
	return Run{ID: id, Protocol: "pressure", Created: created, Status: RunRunning, DeckName: "deck-" + id,
		DeckHash: "hash-" + id, Model: "sim", Seed: "42", Planned: 7, Manifest: json.RawMessage(`{"run_id":"` + id + `"}`)}
}

func createRun(t *testing.T, s *Store, id string, created time.Time) {
	t.Helper()
	if err := s.CreateRun(context.Background(), testRun(id, created), "builtin:"+id, []byte("deck of "+id)); err != nil {
		t.Fatal(err)
	}
}

// base is a time with nanoseconds in a zone other than UTC: the store keeps
// the instant in UTC.
var base = time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.FixedZone("CEST", 2*3600))

// testSession is a complete session of two calls, the first retried once,
// with a transcript that has tool calls, a tool result and a refusal.
func testSession(id string, seq int) Session {
	req1 := []byte(`{"session":"` + id + `","call":1}`)
	req2 := []byte(`{"session":"` + id + `","call":2}`)
	resp1 := []byte(`{"session":"` + id + `","response":1}`)
	resp2 := []byte(`{"session":"` + id + `","response":2}`)
	trace := []byte(`{"session_id":"` + id + `"}`)
	arts := map[string]Blob{}
	put := func(b []byte) string {
		sha, blob := Pack(b)
		arts[sha] = blob
		return sha
	}
	at := base.Add(time.Duration(seq) * time.Minute)
	return Session{
		ID: id, Seq: seq, SchedulePos: 100 - seq, Spec: json.RawMessage(`{"case":"` + id + `","variant":2}`),
		Status: SessionComplete, Started: at, Finished: at.Add(1500 * time.Millisecond), Stop: "answered",
		Attempts: []Attempt{
			{Incarnation: 1, Call: 1, Attempt: 1, Phase: "initial", Started: at.Add(time.Millisecond), DurationMS: 12.5,
				Outcome: "error", ErrorKind: "rate_limited", ErrorMsg: "rate_limited (HTTP 429): slow down", HTTPStatus: 429,
				RequestSHA: put(req1)},
			{Incarnation: 1, Call: 1, Attempt: 2, Phase: "initial", Started: at.Add(20 * time.Millisecond), DurationMS: 30.25,
				Outcome: "ok", RequestSHA: put(req1), ResponseSHA: put(resp1), InputTokens: 100, OutputTokens: 20,
				ModelID: "sim-1", Fingerprint: "fp_1", RequestID: "req-a", FinishReason: "tool_calls"},
			{Incarnation: 1, Call: 2, Attempt: 1, Phase: "followup", Started: at.Add(time.Second), DurationMS: 40,
				Outcome: "ok", RequestSHA: put(req2), ResponseSHA: put(resp2), InputTokens: 150, OutputTokens: 30,
				ModelID: "sim-1", Fingerprint: "fp_2", RequestID: "req-b", FinishReason: "stop"},
		},
		Messages: []chat.Entry{
			{Phase: "initial", Message: chat.Message{Role: chat.System, Content: "You are a scheduler."}},
			{Phase: "initial", Message: chat.Message{Role: chat.User, Content: "Who goes first? " + id}},
			{Phase: "initial", Message: chat.Message{Role: chat.Assistant, ToolCalls: []chat.ToolCall{
				{ID: "call_1", Name: "lookup", Arguments: json.RawMessage(`{"id":"X","n":[1,2]}`)},
				{ID: "call_2", Name: "registry"},
			}}},
			{Phase: "initial", Message: chat.Message{Role: chat.ToolRole, Content: `{"version":3}`, ToolCallID: "call_1", Name: "lookup"}},
			{Phase: "followup", Message: chat.Message{Role: chat.Assistant, Content: "X goes first.\nReally."}},
			{Phase: "followup", Message: chat.Message{Role: chat.Assistant, Refusal: "I can't help with that."}},
		},
		TraceSHA:     put(trace),
		Artifacts:    arts,
		InputTokens:  250,
		OutputTokens: 50,
	}
}

// failedSession ended after its only call failed for good.
func failedSession(id string, seq int) Session {
	se := testSession(id, seq)
	se.Status = SessionFailed
	se.Stop = ""
	se.FailedPhase, se.FailureKind, se.FailureMsg = "initial", "auth", "auth (HTTP 401): bad key"
	se.Attempts = []Attempt{{Incarnation: 1, Call: 1, Attempt: 1, Phase: "initial", Started: se.Started, DurationMS: 3,
		Outcome: "error", ErrorKind: "auth", ErrorMsg: "auth (HTTP 401): bad key", HTTPStatus: 401, RequestSHA: se.Attempts[0].RequestSHA}}
	se.Messages = se.Messages[:2]
	se.InputTokens, se.OutputTokens = 0, 0
	return se
}

// sameSession compares a loaded session with the one written: times as
// instants, everything else exactly. Artifacts are not loaded with sessions.
func sameSession(t *testing.T, got, want Session) {
	t.Helper()
	if !got.Started.Equal(want.Started) || !got.Finished.Equal(want.Finished) {
		t.Errorf("session %s: times %v..%v, want %v..%v", want.ID, got.Started, got.Finished, want.Started, want.Finished)
	}
	if len(got.Attempts) != len(want.Attempts) {
		t.Fatalf("session %s: %d attempts, want %d:\n got %+v\nwant %+v", want.ID, len(got.Attempts), len(want.Attempts), got.Attempts, want.Attempts)
	}
	g, w := got, want
	g.Attempts = append([]Attempt(nil), got.Attempts...)
	w.Attempts = append([]Attempt(nil), want.Attempts...)
	for i := range w.Attempts {
		if !g.Attempts[i].Started.Equal(w.Attempts[i].Started) {
			t.Errorf("session %s attempt %d: started %v, want %v", want.ID, i, g.Attempts[i].Started, w.Attempts[i].Started)
		}
		g.Attempts[i].Started, w.Attempts[i].Started = time.Time{}, time.Time{}
	}
	g.Started, g.Finished, w.Started, w.Finished = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	w.Artifacts = nil
	if g.Artifacts != nil {
		t.Errorf("session %s: loaded with artifacts", want.ID)
		g.Artifacts = nil
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("session %s differs after the round trip:\n got %+v\nwant %+v", want.ID, g, w)
	}
}

func sessions(t *testing.T, s *Store, runID string) []Session {
	t.Helper()
	got, err := s.Sessions(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func ids(ss []Session) []string {
	var out []string
	for _, se := range ss {
		out = append(out, se.ID)
	}
	return out
}

// packSize is how many artifact bytes a run holds: its pack file's size on
// SQLite, the bytes of its artifacts in the database on PostgreSQL.
func packSize(t *testing.T, s *Store, runID string) int64 {
	t.Helper()
	if _, ok := s.arts.(blobTable); ok {
		var n int64
		if err := s.db.QueryRowContext(context.Background(), `SELECT COALESCE(SUM(LENGTH(b.data)), 0) FROM artifacts a
			JOIN artifact_blobs b ON b.sha256 = a.sha256 WHERE a.run_id = $1`, runID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	fi, err := os.Stat(filepath.Join(s.RunDir(runID), "artifacts.pack"))
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

func artifactBytes(se Session) int64 {
	var n int64
	for _, b := range se.Artifacts {
		n += int64(len(b.Data))
	}
	return n
}

func mustArtifact(t *testing.T, s *Store, runID, sha string, want []byte) {
	t.Helper()
	got, err := s.Artifact(context.Background(), runID, sha)
	if err != nil {
		t.Fatalf("Artifact(%s): %v", sha, err)
	}
	if string(got) != string(want) {
		t.Fatalf("Artifact(%s) = %q, want %q", sha, got, want)
	}
}

func checkMode(t *testing.T, path string, want fs.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s has mode %v, want %v", path, got, want)
	}
}

// SQLite only: the permissions of the store's files on disk.
func TestOpenIsOwnerOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "store")
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkMode(t, dir, 0o700)
	checkMode(t, filepath.Join(dir, "runs"), 0o700)
	checkMode(t, filepath.Join(dir, "budge.db"), 0o600)

	// Everything written later is owner-only too: the run directory, the
	// database's journal files, the pack, the log and the manifest.
	ctx := context.Background()
	createRun(t, s, "r1", base)
	mustWrite(t, s, "r1", testSession("s1", 0))
	l, err := s.OpenLog("r1")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Write(map[string]int{"a": 1}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishRun(ctx, "r1", RunComplete, json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	n := 0
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		n++
		if d.IsDir() {
			checkMode(t, path, 0o700)
		} else {
			checkMode(t, path, 0o600)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 7 {
		t.Errorf("walked %d entries, expected the store, runs, run dir, db, pack, log and manifest", n)
	}

	// Opening an existing store again works and sees its runs.
	s2, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if _, err := s2.GetRun(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
}

func testCreateRunGetRunRoundTrip(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	want := testRun("20240506-050809-abcdef", base)
	if err := s.CreateRun(ctx, want, "decks/d.yaml", []byte("name: d\n")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(s.RunDir(want.ID))
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("run directory: %v %v", fi, err)
	}
	got, err := s.GetRun(ctx, want.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Created.Equal(want.Created) {
		t.Errorf("Created = %v, want %v", got.Created, want.Created)
	}
	if got.Finished != nil {
		t.Errorf("Finished = %v for a running run", got.Finished)
	}
	got.Created, want.Created = time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("GetRun = %+v\nwant %+v", got, want)
	}
	src, content, err := s.Deck(ctx, want.DeckHash)
	if err != nil || src != "decks/d.yaml" || string(content) != "name: d\n" {
		t.Errorf("Deck = %q, %q, %v", src, content, err)
	}
	if _, _, err := s.Deck(ctx, "nope"); err == nil {
		t.Error("Deck of an unknown hash: no error")
	}

	if err := s.CreateRun(ctx, testRun(want.ID, base), "x", nil); err == nil {
		t.Error("creating a run with an existing id: no error")
	}
	if _, err := s.GetRun(ctx, "missing"); !errors.Is(err, ErrNoRun) {
		t.Errorf("GetRun(missing) = %v, want ErrNoRun", err)
	}
}

// listedRuns returns the ids ListRuns lists, checking each run is loaded
// whole.
func listedRuns(t *testing.T, s *Store) []string {
	t.Helper()
	runs, err := s.ListRuns(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range runs {
		got = append(got, r.ID)
		if r.DeckName != "deck-"+r.ID || string(r.Manifest) != `{"run_id":"`+r.ID+`"}` || r.Planned != 7 {
			t.Errorf("run %s loaded as %+v", r.ID, r)
		}
	}
	return got
}

func testListRunsNewestFirst(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	if runs, err := s.ListRuns(ctx); err != nil || len(runs) != 0 {
		t.Fatalf("empty store: ListRuns = %v, %v", runs, err)
	}
	createRun(t, s, "b", base.Add(time.Hour))
	createRun(t, s, "a", base.Add(3*time.Hour))
	createRun(t, s, "c", base)
	createRun(t, s, "d", base.Add(2*time.Hour))
	if got, want := listedRuns(t, s), []string{"a", "d", "b", "c"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ListRuns order = %v, want %v", got, want)
	}
}

// Runs started within the same second must still be listed newest first,
// and "latest" must be the newest of them.
func testListRunsNewestFirstWithinASecond(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	sec := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	createRun(t, s, "r1-whole-second", sec)
	createRun(t, s, "r2-half", sec.Add(500*time.Millisecond))
	createRun(t, s, "r3-later", sec.Add(550*time.Millisecond))
	if got, want := listedRuns(t, s), []string{"r3-later", "r2-half", "r1-whole-second"}; !reflect.DeepEqual(got, want) {
		t.Errorf("ListRuns order = %v, want %v", got, want)
	}
	if id, err := s.Resolve(ctx, "latest"); err != nil || id != "r3-later" {
		t.Errorf("Resolve(latest) = %q, %v, want r3-later", id, err)
	}
}

func testResolve(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	for _, ref := range []string{"latest", "", "2024"} {
		_, err := s.Resolve(ctx, ref)
		if !errors.Is(err, ErrNoRun) {
			t.Errorf("empty store: Resolve(%q) = %v, want an error wrapping ErrNoRun", ref, err)
		}
	}
	createRun(t, s, "20240101-120000-aaaaaa", base.Add(-48*time.Hour))
	createRun(t, s, "20240101-120000-aabbbb", base.Add(-47*time.Hour))
	createRun(t, s, "20240102-090000-cccccc", base)
	createRun(t, s, "20231231-000000-dd", base.Add(-72*time.Hour))
	createRun(t, s, "20231231-000000-ddee", base.Add(-71*time.Hour))
	for _, tc := range []struct{ ref, want string }{
		{"latest", "20240102-090000-cccccc"},
		{"", "20240102-090000-cccccc"},
		{"20240101-120000-aaaaaa", "20240101-120000-aaaaaa"},
		{"20240102", "20240102-090000-cccccc"},
		{"20240101-120000-aab", "20240101-120000-aabbbb"},
		{"20240101-120000-aaa", "20240101-120000-aaaaaa"},
		// An exact id wins over the longer ids it is a prefix of.
		{"20231231-000000-dd", "20231231-000000-dd"},
		{"20231231-000000-dde", "20231231-000000-ddee"},
	} {
		got, err := s.Resolve(ctx, tc.ref)
		if err != nil || got != tc.want {
			t.Errorf("Resolve(%q) = %q, %v, want %q", tc.ref, got, err, tc.want)
		}
	}

	_, err := s.Resolve(ctx, "20240101-120000-aa")
	if err == nil {
		t.Fatal("ambiguous prefix resolved")
	}
	if errors.Is(err, ErrNoRun) || !strings.Contains(err.Error(), "ambiguous") ||
		!strings.Contains(err.Error(), "20240101-120000-aaaaaa") || !strings.Contains(err.Error(), "20240101-120000-aabbbb") {
		t.Errorf("ambiguous prefix: error %q should say it is ambiguous and name both candidates", err)
	}

	for _, ref := range []string{"2025", "20240101-120000-aaaaaa0", "x%", "zzz"} {
		if got, err := s.Resolve(ctx, ref); !errors.Is(err, ErrNoRun) {
			t.Errorf("Resolve(%q) = %q, %v, want an error wrapping ErrNoRun", ref, got, err)
		} else if !strings.Contains(err.Error(), ref) {
			t.Errorf("Resolve(%q): error %q does not name the reference", ref, err)
		}
	}
}

func testWriteSessionsRoundTrip(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	createRun(t, s, "run", base)
	// Written out of plan order, in two batches; ids sort differently from seq.
	a, b, c := testSession("zeta", 0), failedSession("alpha", 1), testSession("mid", 2)
	mustWrite(t, s, "run", c, a)
	mustWrite(t, s, "run", b)
	got := sessions(t, s, "run")
	if want := []string{"zeta", "alpha", "mid"}; !reflect.DeepEqual(ids(got), want) {
		t.Fatalf("Sessions order = %v, want %v (by seq)", ids(got), want)
	}
	for i, want := range []Session{a, b, c} {
		sameSession(t, got[i], want)
	}
	if got[0].Attempts[0].Outcome != "error" || got[0].Attempts[1].Outcome != "ok" || got[0].Attempts[1].Attempt != 2 {
		t.Errorf("failed and retried attempts not kept in order: %+v", got[0].Attempts)
	}
	if tc := got[0].Messages[2].ToolCalls; len(tc) != 2 || string(tc[0].Arguments) != `{"id":"X","n":[1,2]}` || tc[1].Arguments != nil {
		t.Errorf("tool calls after the round trip: %+v", tc)
	}
	stored, err := s.StoredIDs(ctx, "run")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"zeta": SessionComplete, "alpha": SessionFailed, "mid": SessionComplete}; !reflect.DeepEqual(stored, want) {
		t.Errorf("StoredIDs = %v, want %v", stored, want)
	}
	for _, se := range []Session{a, b, c} {
		for sha, blob := range se.Artifacts {
			mustArtifact(t, s, "run", sha, blob.Data)
		}
	}

	// Other runs see nothing of it.
	createRun(t, s, "other", base)
	if got := sessions(t, s, "other"); len(got) != 0 {
		t.Errorf("another run has sessions %v", ids(got))
	}
	if _, err := s.Artifact(ctx, "other", a.TraceSHA); err == nil {
		t.Error("another run can read this run's artifact")
	}
	if err := s.WriteSessions(ctx, "run", nil); err != nil {
		t.Errorf("writing no sessions: %v", err)
	}
}

func testWriteSessionsNeverOverwrites(t *testing.T) {
	first := testSession("s1", 0)
	s := storeWithRun(t, first)
	ctx := context.Background()

	// The same id again, with different content and different attempts.
	again := failedSession("s1", 5)
	again.Attempts[0].Call = 9
	if err := s.WriteSessions(ctx, "run", []Session{again}); err == nil {
		t.Fatal("writing a stored session again: no error")
	} else if !errors.Is(err, ErrAlreadyStored) || !strings.Contains(err.Error(), "another budge") {
		t.Errorf("writing a stored session again: %v, want ErrAlreadyStored asking about another budge", err)
	}

	// A batch whose second session is a duplicate stores neither, and none
	// of the new session's artifacts are indexed.
	fresh := testSession("s2", 1)
	fresh.Artifacts = map[string]Blob{}
	for sha, b := range testSession("s2", 1).Artifacts {
		fresh.Artifacts[sha] = b
	}
	only := []byte("only in s2")
	onlySHA, onlyBlob := Pack(only)
	fresh.Artifacts[onlySHA] = onlyBlob
	dup := testSession("s1", 0)
	dup.Attempts = append(dup.Attempts, Attempt{Incarnation: 2, Call: 1, Attempt: 1, Outcome: "ok", Started: base})
	if err := s.WriteSessions(ctx, "run", []Session{fresh, dup}); err == nil {
		t.Fatal("a batch with a duplicate session: no error")
	}
	// A batch repeating a session within itself fails whole too.
	twice := testSession("s3", 2)
	if err := s.WriteSessions(ctx, "run", []Session{twice, twice}); err == nil {
		t.Fatal("a batch with the same session twice: no error")
	}

	got := sessions(t, s, "run")
	if len(got) != 1 {
		t.Fatalf("stored sessions %v, want only s1", ids(got))
	}
	sameSession(t, got[0], first)
	stored, _ := s.StoredIDs(ctx, "run")
	if !reflect.DeepEqual(stored, map[string]string{"s1": SessionComplete}) {
		t.Errorf("StoredIDs = %v", stored)
	}
	orphans, _ := s.OrphanAttempts(ctx, "run")
	if len(orphans) != 0 {
		t.Errorf("failed batches left attempts behind: %v", orphans)
	}
	if _, err := s.Artifact(ctx, "run", onlySHA); err == nil {
		t.Error("an artifact of a failed batch is indexed")
	}

	// The failed sessions can still be written later, artifacts included.
	mustWrite(t, s, "run", fresh, twice)
	got = sessions(t, s, "run")
	if want := []string{"s1", "s2", "s3"}; !reflect.DeepEqual(ids(got), want) {
		t.Fatalf("stored sessions %v, want %v", ids(got), want)
	}
	sameSession(t, got[1], fresh)
	sameSession(t, got[2], twice)
	mustArtifact(t, s, "run", onlySHA, only)
	for sha, b := range fresh.Artifacts {
		mustArtifact(t, s, "run", sha, b.Data)
	}
}

func interruptedSession(id string, seq int) Session {
	se := testSession(id, seq)
	se.Status = SessionInterrupted
	se.Stop = ""
	se.Attempts = []Attempt{
		se.Attempts[0],
		{Incarnation: 1, Call: 1, Attempt: 2, Phase: "initial", Started: se.Started.Add(time.Second), DurationMS: 80,
			Outcome: "error", ErrorKind: "canceled", ErrorMsg: "canceled: context canceled", RequestSHA: se.Attempts[0].RequestSHA},
	}
	return se
}

func testInterruptedSessionsKeepOnlyAttempts(t *testing.T) {
	done := testSession("done", 0)
	cut := interruptedSession("cut", 1)
	s := storeWithRun(t, cut, done)
	ctx := context.Background()
	got := sessions(t, s, "run")
	if len(got) != 1 || got[0].ID != "done" {
		t.Fatalf("Sessions = %v, want only the complete session", ids(got))
	}
	sameSession(t, got[0], done)
	stored, err := s.StoredIDs(ctx, "run")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(stored, map[string]string{"done": SessionComplete}) {
		t.Errorf("StoredIDs = %v, want only done", stored)
	}
	orphans, err := s.OrphanAttempts(ctx, "run")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(orphans, map[string]int{"cut": 2}) {
		t.Errorf("OrphanAttempts = %v, want cut: 2", orphans)
	}
	// What a resume reads: the plan positions stored, and the incarnation
	// of each session left in flight (not of the stored ones).
	var seqs []int
	if err := s.EachStoredSeq(ctx, "run", func(seq int) { seqs = append(seqs, seq) }); err != nil || !reflect.DeepEqual(seqs, []int{0}) {
		t.Errorf("EachStoredSeq = %v, %v; want [0]", seqs, err)
	}
	if pending, err := s.PendingIncarnations(ctx, "run"); err != nil || !reflect.DeepEqual(pending, map[string]int{"cut": 1}) {
		t.Errorf("PendingIncarnations = %v, %v; want cut: 1", pending, err)
	}
	// The requests the interrupted session sent are kept as artifacts.
	mustArtifact(t, s, "run", cut.Attempts[0].RequestSHA, cut.Artifacts[cut.Attempts[0].RequestSHA].Data)

	// A later incarnation completes the session; its earlier attempts stay
	// with it and it is no longer an orphan.
	rerun := testSession("cut", 1)
	for i := range rerun.Attempts {
		rerun.Attempts[i].Incarnation = 2
	}
	mustWrite(t, s, "run", rerun)
	if orphans, _ := s.OrphanAttempts(ctx, "run"); len(orphans) != 0 {
		t.Errorf("OrphanAttempts after the rerun = %v, want none", orphans)
	}
	if pending, _ := s.PendingIncarnations(ctx, "run"); len(pending) != 0 {
		t.Errorf("PendingIncarnations after the rerun = %v, want none", pending)
	}
	got = sessions(t, s, "run")
	if len(got) != 2 || got[1].ID != "cut" {
		t.Fatalf("Sessions = %v", ids(got))
	}
	want := rerun
	want.Attempts = append(append([]Attempt(nil), cut.Attempts...), rerun.Attempts...)
	sameSession(t, got[1], want)
}

// storeWithRun opens a store with a run "run" holding sessions.
func storeWithRun(t *testing.T, ss ...Session) *Store {
	t.Helper()
	s := openStore(t)
	createRun(t, s, "run", base)
	mustWrite(t, s, "run", ss...)
	return s
}

// mustWrite stores sessions of a run.
func mustWrite(t *testing.T, s *Store, runID string, ss ...Session) {
	t.Helper()
	if err := s.WriteSessions(context.Background(), runID, ss); err != nil {
		t.Fatal(err)
	}
}

// withArtifacts is a session with the artifacts of testSession(like, seq)
// and extra ones.
func withArtifacts(id, like string, seq int, extra ...[]byte) Session {
	se := testSession(like, seq)
	se.ID = id
	for _, b := range extra {
		sha, blob := Pack(b)
		se.Artifacts[sha] = blob
	}
	return se
}

// writeGrowsPack writes sessions and checks the run's pack then holds want
// bytes: artifacts already stored are not written again.
func writeGrowsPack(t *testing.T, s *Store, runID string, want int64, ss ...Session) {
	t.Helper()
	mustWrite(t, s, runID, ss...)
	if got := packSize(t, s, runID); got != want {
		t.Fatalf("pack holds %d bytes after writing %v, want %d", got, ids(ss), want)
	}
}

// overwriteArtifact replaces the stored bytes of an artifact the way damage
// would: in the run's pack file (which must hold just that artifact) on
// SQLite, in the artifact_blobs table on PostgreSQL.
func overwriteArtifact(t *testing.T, s *Store, runID, sha, pack string, b []byte) {
	t.Helper()
	if pack == inDatabase {
		if _, err := s.db.ExecContext(context.Background(), `UPDATE artifact_blobs SET data = $1 WHERE sha256 = $2`, b, sha); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := os.WriteFile(pack, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func testArtifacts(t *testing.T) {
	one := testSession("one", 0)
	s := storeWithRun(t, one)
	ctx := context.Background()
	if !onPostgres(t) {
		checkMode(t, filepath.Join(s.RunDir("run"), "artifacts.pack"), 0o600)
	}
	size := packSize(t, s, "run")
	if size != artifactBytes(one) {
		t.Fatalf("pack holds %d bytes, want %d", size, artifactBytes(one))
	}
	for sha, b := range one.Artifacts {
		mustArtifact(t, s, "run", sha, b.Data)
		mustArtifact(t, s, "run", "sha256:"+sha, b.Data)
	}

	// The same bytes in another session, another batch: stored once.
	shared := []byte("shared evidence")
	sharedSHA := ArtifactID(shared)
	// two and three have artifacts identical to one's, and shared.
	writeGrowsPack(t, s, "run", size+int64(len(shared)), withArtifacts("two", "one", 1, shared), withArtifacts("three", "one", 2, shared))
	writeGrowsPack(t, s, "run", size+int64(len(shared)), withArtifacts("four", "one", 3, shared))
	mustArtifact(t, s, "run", sharedSHA, shared)

	// Bad and unknown addresses.
	for _, bad := range []string{"", "xyz", strings.Repeat("a", 63), strings.Repeat("a", 65),
		strings.ToUpper(sharedSHA), "sha256:" + strings.Repeat("g", 64), "../" + sharedSHA[3:], "sha1:" + sharedSHA} {
		if _, err := s.Artifact(ctx, "run", bad); err == nil || !strings.Contains(err.Error(), "not a sha256") {
			t.Errorf("Artifact(%q) = %v, want a not-a-sha256 error", bad, err)
		}
	}
	unknown := ArtifactID([]byte("never stored"))
	if _, err := s.Artifact(ctx, "run", unknown); err == nil || !strings.Contains(err.Error(), unknown) {
		t.Errorf("Artifact(unknown) = %v, want an error naming it", err)
	}

	// A corrupted byte is detected.
	createRun(t, s, "bad", base)
	victim := []byte("the exact request that was sent")
	vsha, vblob := Pack(victim)
	se := Session{ID: "v", Status: SessionComplete, Started: base, Finished: base, Artifacts: map[string]Blob{vsha: vblob}}
	mustWrite(t, s, "bad", se)
	mustArtifact(t, s, "bad", vsha, victim)
	badPack, where := filepath.Join(s.RunDir("bad"), "artifacts.pack"), []string{"offset 0"}
	if onPostgres(t) {
		badPack, where = inDatabase, []string{"artifact_blobs"}
	}
	damage := func(b []byte) { overwriteArtifact(t, s, "bad", vsha, badPack, b) }
	raw := append([]byte(nil), victim...)
	raw[5] ^= 0x20
	damage(raw)
	damaged := func(what string, err error) {
		t.Helper()
		var ae *ArtifactError
		if !errors.As(err, &ae) || !errors.Is(err, ErrArtifactCorrupt) {
			t.Fatalf("%s: %v, want an *ArtifactError", what, err)
		}
		if ae.Pack != badPack || ae.Offset != 0 || ae.SHA != vsha || ae.RunID != "bad" {
			t.Errorf("%s: error names %s offset %d sha %s of run %s", what, ae.Pack, ae.Offset, ae.SHA, ae.RunID)
		}
		for _, want := range append(where, badPack, vsha) {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not say %q", what, err, want)
			}
		}
	}
	_, err := s.Artifact(ctx, "bad", vsha)
	damaged("Artifact of a corrupted pack", err)
	if !strings.Contains(err.Error(), "hash mismatch") {
		t.Errorf("Artifact of a corrupted pack = %v, want a hash mismatch", err)
	}
	damaged("VerifyArtifacts of a corrupted pack", s.VerifyArtifacts(ctx, "bad"))
	// A truncated pack is an error too, not short data.
	damage(victim[:10])
	b, err := s.Artifact(ctx, "bad", vsha)
	if err == nil {
		t.Errorf("Artifact of a truncated pack = %q, want an error", b)
	}
	damaged("Artifact of a truncated pack", err)
	damaged("VerifyArtifacts of a truncated pack", s.VerifyArtifacts(ctx, "bad"))
	// The other run is unaffected.
	mustArtifact(t, s, "run", sharedSHA, shared)
	if err := s.VerifyArtifacts(ctx, "run"); err != nil {
		t.Errorf("VerifyArtifacts of a whole run: %v", err)
	}
}

// damageLastByte overwrites the last stored byte of an artifact.
func damageLastByte(t *testing.T, s *Store, runID string, e packEntry) {
	t.Helper()
	if e.pack == inDatabase {
		if _, err := s.db.ExecContext(context.Background(), `UPDATE artifact_blobs SET data = substring(data from 1 for length(data) - 1) || '\x23'::bytea
			WHERE sha256 = $1`, e.sha); err != nil {
			t.Fatal(err)
		}
		return
	}
	f, err := os.OpenFile(filepath.Join(s.RunDir(runID), e.pack), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte{'#'}, e.offset+e.length-1); err != nil {
		t.Fatal(err)
	}
}

// VerifyArtifacts names every damaged artifact of a run, and only those.
func testVerifyArtifacts(t *testing.T) {
	ctx := context.Background()
	s := storeWithRun(t, testSession("s1", 0), testSession("s2", 1))
	if err := s.VerifyArtifacts(ctx, "run"); err != nil {
		t.Fatalf("a whole run: %v", err)
	}
	entries, err := queryAll(ctx, s.db, scanArtifact, `SELECT `+artifactCols+` FROM artifacts WHERE run_id = 'run' ORDER BY pack_offset, sha256`)
	if err != nil || len(entries) < 4 {
		t.Fatalf("artifacts %v, %v", entries, err)
	}
	bad := map[string]bool{}
	for _, e := range []packEntry{entries[1], entries[3]} {
		damageLastByte(t, s, "run", e)
		bad[e.sha] = true
	}
	err = s.VerifyArtifacts(ctx, "run")
	for _, e := range entries {
		if named := strings.Contains(fmt.Sprint(err), e.sha); named != bad[e.sha] {
			t.Errorf("error %v: names artifact %s: %v, damaged: %v", err, e.sha, named, bad[e.sha])
		}
	}
	if !errors.Is(err, ErrArtifactCorrupt) {
		t.Errorf("error %v does not match ErrArtifactCorrupt", err)
	}
}

func testArtifactsAfterReopen(t *testing.T) {
	open := storeOpener(t)
	s, err := open()
	if err != nil {
		t.Fatal(err)
	}
	createRun(t, s, "run", base)
	first := testSession("first", 0)
	mustWrite(t, s, "run", first)
	size := packSize(t, s, "run")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = open()
	if err != nil {
		t.Fatal(err)
	}
	for sha, b := range first.Artifacts {
		mustArtifact(t, s, "run", sha, b.Data)
	}
	// The second session repeats first's artifacts and adds new ones.
	extra := []byte("new after reopening")
	extraSHA := ArtifactID(extra)
	second := withArtifacts("second", "first", 1, extra)
	writeGrowsPack(t, s, "run", size+int64(len(extra)), second)
	mustArtifact(t, s, "run", extraSHA, extra)
	for sha, b := range first.Artifacts {
		mustArtifact(t, s, "run", sha, b.Data)
	}
	third := testSession("third", 2)
	mustWrite(t, s, "run", third)
	for _, se := range []Session{first, second, third} {
		for sha, b := range se.Artifacts {
			mustArtifact(t, s, "run", sha, b.Data)
		}
	}
	if got := sessions(t, s, "run"); !reflect.DeepEqual(ids(got), []string{"first", "second", "third"}) {
		t.Errorf("Sessions = %v", ids(got))
	}
}

func testFinishRun(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	createRun(t, s, "run", base)
	before := time.Now()
	manifest := json.RawMessage(`{"run_id":"run","status":"incomplete"}`)
	if err := s.FinishRun(ctx, "run", RunIncomplete, manifest); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	path := filepath.Join(s.RunDir("run"), "manifest.json")
	if b, err := os.ReadFile(path); onPostgres(t) {
		// A shared database keeps the manifest in the runs table only.
		if err == nil {
			t.Errorf("a PostgreSQL store wrote %s", path)
		}
	} else if err != nil {
		t.Fatal(err)
	} else if string(b) != string(manifest)+"\n" {
		t.Errorf("manifest.json = %q, want %q", b, string(manifest)+"\n")
	} else {
		checkMode(t, path, 0o600)
	}
	r, err := s.GetRun(ctx, "run")
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != RunIncomplete || string(r.Manifest) != string(manifest) {
		t.Errorf("run after FinishRun: status %q manifest %s", r.Status, r.Manifest)
	}
	if r.Finished == nil || r.Finished.Before(before.Truncate(time.Microsecond)) || r.Finished.After(after) {
		t.Errorf("Finished = %v, want between %v and %v", r.Finished, before, after)
	}
	if !r.Created.Equal(base) {
		t.Errorf("FinishRun changed Created to %v", r.Created)
	}
	entries, _ := os.ReadDir(s.RunDir("run"))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".tmp") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

// storedLog is a run's log as WriteLog exports it.
func storedLog(t *testing.T, s *Store, runID string) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := s.WriteLog(context.Background(), runID, &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func testLog(t *testing.T) {
	s := openStore(t)
	createRun(t, s, "run", base)
	l, err := s.OpenLog("run")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(s.RunDir("run"), "log.jsonl")
	if !onPostgres(t) {
		checkMode(t, path, 0o600)
	}
	if err := l.Write(map[string]any{"type": "start", "n": 1}); err != nil {
		t.Fatal(err)
	}
	if err := l.WriteLines([]byte("{\"type\":\"attempt\"}\n{\"type\":\"session\"}\n")); err != nil {
		t.Fatal(err)
	}
	if err := l.Write(func() {}); err == nil {
		t.Error("writing an unencodable record: no error")
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	b := storedLog(t, s, "run")
	if want := "{\"n\":1,\"type\":\"start\"}\n{\"type\":\"attempt\"}\n{\"type\":\"session\"}\n"; string(b) != want {
		t.Fatalf("log after Flush = %q, want %q", b, want)
	}
	if err := l.WriteLines([]byte("{\"type\":\"end\"}\n")); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopening appends.
	l, err = s.OpenLog("run")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Write(struct {
		Type string `json:"type"`
	}{"resumed"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	var types []string
	sc := bufio.NewScanner(bytes.NewReader(storedLog(t, s, "run")))
	for sc.Scan() {
		var rec struct{ Type string }
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
		}
		types = append(types, rec.Type)
	}
	if want := []string{"start", "attempt", "session", "end", "resumed"}; !reflect.DeepEqual(types, want) {
		t.Errorf("log records %v, want %v", types, want)
	}
	if onPostgres(t) {
		if _, err := os.Stat(path); err == nil {
			t.Errorf("a PostgreSQL store wrote %s", path)
		}
	} else {
		checkMode(t, path, 0o600)
	}
	if _, err := s.OpenLog("no-such-run"); err == nil {
		t.Error("OpenLog of a run without a directory: no error")
	}
}

// largeSession has ten messages, two attempts, an artifact of its own and
// one shared with every other session.
func largeSession(i int, shared []byte) Session {
	id := fmt.Sprintf("s%04d", i)
	arts := map[string]Blob{}
	own := []byte("request of " + id)
	ownSHA, ownBlob := Pack(own)
	arts[ownSHA] = ownBlob
	sharedSHA, sharedBlob := Pack(shared)
	arts[sharedSHA] = sharedBlob
	se := Session{ID: id, Seq: i, SchedulePos: i * 7 % 1000, Spec: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)),
		Status: SessionComplete, Started: base.Add(time.Duration(i) * time.Second), Finished: base.Add(time.Duration(i)*time.Second + time.Millisecond),
		TraceSHA: sharedSHA, Artifacts: arts, InputTokens: i, OutputTokens: 2 * i,
		Attempts: []Attempt{
			{Incarnation: 1, Call: 1, Attempt: 1, Phase: "initial", Started: base, Outcome: "error", ErrorKind: "timeout", ErrorMsg: "timeout", RequestSHA: ownSHA},
			{Incarnation: 1, Call: 1, Attempt: 2, Phase: "initial", Started: base, Outcome: "ok", RequestSHA: ownSHA, ResponseSHA: sharedSHA, InputTokens: i, OutputTokens: 2 * i},
		}}
	if i%3 == 0 {
		se.Status, se.FailedPhase, se.FailureKind, se.FailureMsg = SessionFailed, "followup", "bad_request", "bad_request: no"
	}
	for m := range 10 {
		e := chat.Entry{Phase: fmt.Sprintf("p%d", m/4), Message: chat.Message{Role: chat.User, Content: fmt.Sprintf("%s message %d", id, m)}}
		if m%5 == 2 {
			e.Role = chat.Assistant
			e.Content = ""
			e.ToolCalls = []chat.ToolCall{{ID: fmt.Sprintf("c%d", m), Name: "lookup", Arguments: json.RawMessage(fmt.Sprintf(`{"m":%d}`, m))}}
		}
		se.Messages = append(se.Messages, e)
	}
	return se
}

// Many sessions in one call cross the multi-row insert's chunk boundary for
// every table: 64 rows exactly, and more with a remainder.
func testWriteSessionsLargeBatches(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	shared := []byte("shared by every session")
	for _, n := range []int{1, 6, 7, 64, 65, 300} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			runID := fmt.Sprintf("run-%d", n)
			createRun(t, s, runID, base)
			batch := make([]Session, n)
			for i := range batch {
				batch[n-1-i] = largeSession(i, shared) // written in reverse plan order
			}
			if err := s.WriteSessions(ctx, runID, batch); err != nil {
				t.Fatal(err)
			}
			got := sessions(t, s, runID)
			if len(got) != n {
				t.Fatalf("stored %d sessions, want %d", len(got), n)
			}
			var wantSize int64 = int64(len(shared))
			for i := range got {
				want := largeSession(i, shared)
				sameSession(t, got[i], want)
				wantSize += int64(len("request of ")) + int64(len(want.ID))
				if t.Failed() {
					t.FailNow()
				}
			}
			if got := packSize(t, s, runID); got != wantSize {
				t.Errorf("pack holds %d bytes, want %d", got, wantSize)
			}
			stored, err := s.StoredIDs(ctx, runID)
			if err != nil || len(stored) != n {
				t.Errorf("StoredIDs has %d ids, %v; want %d", len(stored), err, n)
			}
			for _, i := range []int{0, n / 2, n - 1} {
				want := largeSession(i, shared)
				for sha, b := range want.Artifacts {
					mustArtifact(t, s, runID, sha, b.Data)
				}
			}
		})
	}
}

// A failed session can be taken back out for a rerun: its row and messages
// go, its attempts stay as orphans, and the rerun as the next incarnation
// is stored beside them. A complete session is never taken out.
func testUnstoreFailed(t *testing.T) {
	failed := testSession("bad", 1)
	failed.Status, failed.FailureKind = SessionFailed, "timeout"
	s := storeWithRun(t, testSession("done", 0), failed)
	ctx := context.Background()
	kinds, err := s.FailedKinds(ctx, "run")
	if err != nil || !reflect.DeepEqual(kinds, map[string]string{"bad": "timeout"}) {
		t.Fatalf("FailedKinds = %v, %v", kinds, err)
	}
	if err := s.Unstore(ctx, "run", []string{"done"}); err == nil {
		t.Fatal("a complete session must not be taken out")
	}
	if err := s.Unstore(ctx, "run", []string{"bad"}); err != nil {
		t.Fatal(err)
	}
	if got := sessions(t, s, "run"); len(got) != 1 || got[0].ID != "done" {
		t.Fatalf("Sessions = %v, want only done", ids(got))
	}
	if orphans, _ := s.OrphanAttempts(ctx, "run"); orphans["bad"] != len(failed.Attempts) {
		t.Errorf("the failed session's attempts must stay: %v", orphans)
	}
	rerun := testSession("bad", 1)
	for i := range rerun.Attempts {
		rerun.Attempts[i].Incarnation = 2
	}
	mustWrite(t, s, "run", rerun)
	got := sessions(t, s, "run")
	if len(got) != 2 || got[1].Status != SessionComplete || len(got[1].Attempts) != 2*len(failed.Attempts) {
		t.Errorf("after the rerun: %+v", got)
	}
}

// Verifying a run reads its artifacts in pack order through an index: SQLite
// never sorts them first (a million-session run has millions).
func TestVerifyReadsArtifactsWithoutSorting(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	plan := queryPlan(t, s, inPackOrder, "run")
	joined := strings.Join(plan, "; ")
	if strings.Contains(joined, "TEMP B-TREE") || !strings.Contains(joined, "artifacts_by_pack") {
		t.Errorf("query plan %q: want the artifacts_by_pack index and no sort", joined)
	}
}

// queryPlan is the details of SQLite's plan for query q with args.
func queryPlan(t *testing.T, s *Store, q string, args ...any) []string {
	t.Helper()
	rows, err := s.db.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return plan
}
