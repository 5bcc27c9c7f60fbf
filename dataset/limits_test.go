package dataset

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/buildlab/budge/testkit/limitstest"
)

// refusedWith opens path, which must fail with a problem at file:line whose
// reason names limit, allocating under 200 MB.
func refusedWith(t *testing.T, path string, line int, limit string) {
	t.Helper()
	var err error
	limitstest.Refuse(t, path, func() { _, err = Open(path, Options{}) })
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("Open(%s) = %v, want problems", path, err)
	}
	for _, p := range ps {
		if p.File == path && p.Line == line && strings.Contains(p.Reason, limit) {
			return
		}
	}
	t.Errorf("no problem at %s:%d naming %s:\n%v", path, line, limit, err)
}

const goodLine = `{"id": "x-1", "dataset": "d", "question": "Q1?", "correct_answers": ["a"], "incorrect_answers": ["b"]}` + "\n"

func TestJSONLLineTooLong(t *testing.T) {
	long := `{"id": "x-2", "dataset": "d", "question": "` + strings.Repeat("q", MaxLineBytes) + `", "correct_answers": ["a"], "incorrect_answers": ["b"]}` + "\n"
	path := limitstest.WriteFile(t, "long.jsonl", goodLine+goodLine+long+goodLine)
	refusedWith(t, path, 3, "MaxLineBytes")
	// The first line, which names the format, is held to the limit too.
	refusedWith(t, limitstest.WriteFile(t, "first.jsonl", long), 1, "MaxLineBytes")
}

func TestJSONLNestedTooDeep(t *testing.T) {
	deep := `{"id": "x-2", "dataset": "d", "question": "Q?", "correct_answers": ["a"], "incorrect_answers": ["b"], "meta": {"x": ` +
		strings.Repeat("[", 200_000) + strings.Repeat("]", 200_000) + "}}\n"
	refusedWith(t, limitstest.WriteFile(t, "deep.jsonl", goodLine+deep), 2, "MaxNestingDepth")
	refusedWith(t, limitstest.WriteFile(t, "deepfirst.jsonl", strings.Repeat("[", 200_000)+"\n"), 1, "MaxNestingDepth")
	// Brackets inside strings are text.
	text := `{"id": "x-2", "dataset": "d", "question": "` + strings.Repeat("[{", 100) + `", "correct_answers": ["a"], "incorrect_answers": ["b"]}` + "\n"
	if items, err := Open(limitstest.WriteFile(t, "text.jsonl", goodLine+text), Options{}); err != nil || len(items) != 2 {
		t.Errorf("brackets in a string: %d items, %v", len(items), err)
	}
}

func TestCSVRecordTooLong(t *testing.T) {
	csv := "ID,Type,Category,Question,Best Answer,Best Incorrect Answer\n0,A,M,Why?,Because,No\n" +
		"1,A,M,\"" + strings.Repeat("why\n", MaxLineBytes/4+1) + "\",Yes,No\n"
	refusedWith(t, limitstest.WriteFile(t, "long.csv", csv), 3, "MaxLineBytes")
}

func TestDataFileTooLarge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	// A sparse file: its size is over the limit without writing it.
	if err := f.Truncate(MaxDataFileBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	refusedWith(t, path, 0, "MaxDataFileBytes")
	if _, err := ReadResults(filepath.Dir(path)); err == nil || !strings.Contains(err.Error(), "MaxDataFileBytes") {
		t.Errorf("ReadResults of a huge file: %v", err)
	}
}

func TestPyLiteralTooDeep(t *testing.T) {
	if _, err := parsePyLiteral(strings.Repeat("[", 1_000_000)); err == nil || !strings.Contains(err.Error(), "MaxNestingDepth") {
		t.Errorf("a million nested lists: %v", err)
	}
	ok := strings.Repeat("[", MaxNestingDepth) + strings.Repeat("]", MaxNestingDepth)
	if _, err := parsePyLiteral(ok); err != nil {
		t.Errorf("%d nested lists: %v", MaxNestingDepth, err)
	}
}

func TestResultHistoryTooDeep(t *testing.T) {
	hist := strings.Repeat("[", 100_000)
	line := fmt.Sprintf(`{"id": "x-1", "dataset": "d", "question": "Q?", "correct_answers": ["a"], "incorrect_answers": ["b"], "speaker1": "A", "speaker2": "B", "c1_true_statement_t1_history": %q}`, hist)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "r.jsonl"), []byte(line+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadResults(dir)
	var ps Problems
	if !errors.As(err, &ps) || len(ps) == 0 || ps[0].Line != 1 || !strings.Contains(ps[0].Reason, "MaxNestingDepth") {
		t.Errorf("a deeply nested history: %v", err)
	}
}

func BenchmarkLongJSONLLine(b *testing.B) {
	long := `{"id": "x-2", "question": "` + strings.Repeat("q", MaxLineBytes) + `"}` + "\n"
	dir := b.TempDir()
	path := filepath.Join(dir, "long.jsonl")
	if err := os.WriteFile(path, []byte(goodLine+long), 0o644); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Open(path, Options{}); err == nil {
			b.Fatal("not refused")
		}
	}
}
