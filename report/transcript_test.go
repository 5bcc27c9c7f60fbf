package report_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/store"
)

func TestTranscript(t *testing.T) {
	se := &store.Session{ID: "c/I/P-first/authority/r1", Status: "complete", TraceSHA: "abc",
		Messages: []chat.Entry{
			{Phase: "initial", Message: chat.Message{Role: chat.User, Content: "Which profile?\nAnswer in JSON."}},
			{Phase: "initial", Message: chat.Message{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{Name: "read_registry", Arguments: []byte(`{"id":1}`)}}}},
			{Phase: "initial", Message: chat.Message{Role: chat.ToolRole, Name: "read_registry", Content: "{}"}},
			{Phase: "follow-up", Message: chat.Message{Role: chat.Assistant, Refusal: "no"}},
		},
		Attempts: []store.Attempt{
			{Incarnation: 1, Call: 1, Attempt: 1, Phase: "initial", Outcome: "error", ErrorKind: "rate-limit", DurationMS: 12.34, RequestSHA: "r1"},
			{Incarnation: 1, Call: 1, Attempt: 2, Phase: "initial", Outcome: "ok", DurationMS: 5, RequestSHA: "r2", ResponseSHA: "s2"},
		}}
	var b strings.Builder
	if err := report.Transcript(&b, "run-1", se.ID, map[string]string{"status": "correct"}, se); err != nil {
		t.Fatal(err)
	}
	want := `session c/I/P-first/authority/r1 of run run-1

outcome:
{
  "status": "correct"
}

status complete · trace sha256:abc

messages:
[0 initial user]
    Which profile?
    Answer in JSON.
[1 initial assistant]
    call read_registry {"id":1}
[2 initial tool] read_registry
    {}
[3 follow-up assistant]
    refusal: no

attempts:
  call 1 attempt 1 (initial, incarnation 1): error rate-limit 12.3ms request sha256:r1
  call 1 attempt 2 (initial, incarnation 1): ok  5.0ms request sha256:r2 response sha256:s2
`
	if b.String() != want {
		t.Errorf("transcript:\n%s\nwant:\n%s", b.String(), want)
	}

	b.Reset()
	if err := report.Transcript(&b, "run-1", "gone", nil, nil); err != nil {
		t.Fatal(err)
	}
	if want := "session gone of run run-1\n\noutcome:\nnull\n\nno stored transcript: this cell is missing\n"; b.String() != want {
		t.Errorf("missing cell:\n%q\nwant\n%q", b.String(), want)
	}
	if err := report.Transcript(failWriter{}, "run-1", "gone", nil, nil); err == nil {
		t.Error("a failed write was not reported")
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }
