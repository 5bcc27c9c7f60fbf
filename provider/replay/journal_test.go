package replay

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/provider"
	"github.com/buildlab/budge/testkit/providertest"
)

// long answers with more than the reader's buffer of content.
type long struct{ counting }

func (l *long) Chat(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	r, err := l.counting.Chat(ctx, req)
	if err == nil {
		r.Message.Content += strings.Repeat("x", 200_000)
	}
	return r, err
}

// A journal answers, in a later process, what an earlier one recorded, and
// asks for the rest; a line a kill cut short and a file of another format
// are ignored; failures are not recorded.
func TestJournal(t *testing.T) {
	dir := t.TempDir()
	inner := &long{}
	j, err := OpenJournal(dir, inner)
	if err != nil {
		t.Fatal(err)
	}
	providertest.Basic(t, j, providertest.Request())
	req := providertest.Request()
	ctx := provider.WithRepeat(context.Background(), 1)
	first, _ := j.Chat(ctx, req)
	second, _ := j.Chat(provider.WithRepeat(context.Background(), 2), req)
	if hits, misses := j.Counts(); hits != 0 || misses != 3 {
		t.Errorf("first process: %d hits, %d misses; want 0 and 3 (it asks what it records)", hits, misses)
	}
	j.Close()
	// The kill cut a last line short; a stray file is not a journal.
	files, _ := filepath.Glob(filepath.Join(dir, "*"+journalSuffix))
	if len(files) != 1 {
		t.Fatalf("%d journal files, want one per process", len(files))
	}
	f, _ := os.OpenFile(files[0], os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(strings.Repeat("a", keyWidth) + "\t{\"response\":")
	f.Close()
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x\n"), 0o600)

	later := &long{}
	later.fail = true
	j2, err := OpenJournal(dir, later)
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	a, err := j2.Chat(ctx, req)
	if err != nil || a.Message.Content != first.Message.Content || string(a.Raw) != `{"raw":true}` || a.Meta.ModelID != "m-1" {
		t.Fatalf("recorded answer: %v, %.40q", err, a.Message.Content)
	}
	b, _ := j2.Chat(provider.WithRepeat(context.Background(), 2), req)
	if b == nil || b.Message.Content != second.Message.Content {
		t.Error("repeat 2's recorded answer is not repeat 2's")
	}
	seed := int64(99)
	req.Settings.Seed = &seed
	if _, err := j2.Chat(ctx, req); err == nil {
		t.Error("a request never answered must be asked (and here fail)")
	}
	if hits, misses := j2.Counts(); hits != 2 || misses != 0 || later.calls.Load() != 1 {
		t.Errorf("later process: %d hits, %d misses, %d calls", hits, misses, later.calls.Load())
	}
	// The failure was not recorded: a third process asks again.
	j3, _ := OpenJournal(dir, &long{})
	defer j3.Close()
	if _, err := j3.Chat(ctx, req); err != nil {
		t.Fatal(err)
	}
	if hits, misses := j3.Counts(); hits != 0 || misses != 1 {
		t.Errorf("a failure was recorded: %d hits, %d misses", hits, misses)
	}
}

// A failed attempt a batch gave is kept under its own key, answered in
// this process and in a later one, and is never taken for an answer.
func TestJournalKeepsFailures(t *testing.T) {
	var key, other [32]byte
	key[0], other[0] = 1, 2
	fill := func(j *Journal) {
		if err := j.KeepFailure(key, &provider.Error{Kind: provider.Transient, Status: 500, Msg: "failed in its batch"}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(j *Journal, when string) {
		t.Helper()
		e, ok := j.Failure(key)
		if !ok || e.Kind != provider.Transient || e.Status != 500 || e.Msg != "failed in its batch" {
			t.Errorf("%s: failure %+v, %v", when, e, ok)
		}
		if _, ok := j.Failure(other); ok {
			t.Errorf("%s: a failure for a key never failed", when)
		}
		if r, ok := j.Answer(key); ok {
			t.Errorf("%s: the failure answered as %+v", when, r)
		}
	}
	inBothProcesses(t, fill, check)
}

// Two keys that share the index's first 8 bytes never answer for each
// other: the later one is indexed and the earlier one is missed (asked
// again), in this process and in a later one.
func TestJournalKeysSharingAPrefix(t *testing.T) {
	var earlier, later [32]byte
	earlier[31], later[31] = 1, 2
	fill := func(j *Journal) {
		for i, k := range [][32]byte{earlier, later} {
			resp := &chat.Response{Message: chat.Message{Role: chat.Assistant, Content: []string{"earlier", "later"}[i]}}
			if err := j.Keep(k, resp, true); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(j *Journal, when string) {
		t.Helper()
		if r, ok := j.Answer(later); !ok || r.Message.Content != "later" {
			t.Errorf("%s: the later key's answer: %+v, %v", when, r, ok)
		}
		if r, ok := j.Answer(earlier); ok {
			t.Errorf("%s: the earlier key answered with %q; want a miss", when, r.Message.Content)
		}
	}
	inBothProcesses(t, fill, check)
}

// inBothProcesses opens a journal in a new directory, has fill keep in it
// what a test keeps, and checks the journal as this process has it, then,
// once closed, as a later process opens it.
func inBothProcesses(t *testing.T, fill func(*Journal), check func(*Journal, string)) {
	t.Helper()
	dir := t.TempDir()
	j, err := OpenJournal(dir, &long{})
	if err != nil {
		t.Fatal(err)
	}
	fill(j)
	check(j, "same process")
	j.Close()
	j2, err := OpenJournal(dir, &long{})
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	check(j2, "later process")
}
