package store

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The writer's commits are copied from the write-ahead log into the
// database file in the background, long before the log reaches SQLite's
// automatic checkpoint, and the store closes cleanly while that goes on.
func TestCommitsReachTheDatabaseFileInTheBackground(t *testing.T) {
	s := openStore(t)
	createRun(t, s, "run", base)
	db := filepath.Join(s.Dir, dbName)
	before, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	// About a megabyte of log, far below the automatic checkpoint.
	for b := 0; b < 10; b++ {
		var batch []Session
		for i := 0; i < 100; i++ {
			batch = append(batch, testSession(fmt.Sprintf("s%d-%d", b, i), b*100+i))
		}
		mustWrite(t, s, "run", batch...)
	}
	wal, err := os.Stat(db + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	if pages := wal.Size() / 4096; pages >= autoCheckpointPages {
		t.Fatalf("the log has %d pages: the automatic checkpoint may have copied it, which proves nothing", pages)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		fi, err := os.Stat(db)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > before.Size()+256<<10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the database file stayed at %d bytes (%d before the writes, log %d bytes): nothing was checkpointed",
				fi.Size(), before.Size(), wal.Size())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(s.Dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if got := sessions(t, s2, "run"); len(got) != 1000 {
		t.Fatalf("reopened: %d sessions, want 1000", len(got))
	}
}
