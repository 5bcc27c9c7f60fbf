package store

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// logSessions are a complete session with a retried call, a failed and an
// interrupted session.
func logSessions() []Session {
	at := time.Date(2024, 5, 6, 5, 8, 9, 123456789, time.UTC)
	return []Session{
		{ID: "c1/I/r1", Status: SessionComplete, TraceSHA: "t1", Stop: "answered",
			Attempts: []Attempt{
				{Incarnation: 1, Call: 1, Attempt: 1, Phase: "initial", Started: at, DurationMS: 12.5, Outcome: "error",
					ErrorKind: "rate_limited", ErrorMsg: "rate_limited (HTTP 429): slow down", HTTPStatus: 429, RequestSHA: "q1"},
				{Incarnation: 1, Call: 1, Attempt: 2, Phase: "initial", Started: at.Add(time.Second), DurationMS: 30.25, Outcome: "ok",
					RequestSHA: "q1", ResponseSHA: "r1", InputTokens: 100, OutputTokens: 20, ModelID: "sim-1", Fingerprint: "fp", RequestID: "req-a", FinishReason: "stop"},
			}},
		{ID: "c2/II/r1", Status: SessionFailed, TraceSHA: "t2", FailureKind: "auth"},
		{ID: "c3", Status: SessionInterrupted},
	}
}

// The log's bytes are a format other tools read: they must not change.
// These lines were written by the encoder the runner had before the format
// moved here.
const goldenLog = `{"type":"attempt","run_id":"run-1","session_id":"c1/I/r1","incarnation":1,"call":1,"attempt":1,"phase":"initial","started":"2024-05-06T05:08:09.123456789Z","duration_ms":12.5,"outcome":"error","error_kind":"rate_limited","error_message":"rate_limited (HTTP 429): slow down","http_status":429,"request_sha256":"q1","input_tokens":0,"output_tokens":0}
{"type":"attempt","run_id":"run-1","session_id":"c1/I/r1","incarnation":1,"call":1,"attempt":2,"phase":"initial","started":"2024-05-06T05:08:10.123456789Z","duration_ms":30.25,"outcome":"ok","request_sha256":"q1","response_sha256":"r1","input_tokens":100,"output_tokens":20,"model_id":"sim-1","fingerprint":"fp","request_id":"req-a","finish_reason":"stop"}
{"type":"session","run_id":"run-1","session_id":"c1/I/r1","status":"complete","trace_sha256":"t1","stop_reason":"answered"}
{"type":"session","run_id":"run-1","session_id":"c2/II/r1","status":"failed","trace_sha256":"t2","failure_kind":"auth"}
{"type":"session","run_id":"run-1","session_id":"c3","status":"interrupted","trace_sha256":""}
`

func TestLogLinesFormat(t *testing.T) {
	var got []byte
	for _, se := range logSessions() {
		got = append(got, LogLines("run-1", se)...)
	}
	if string(got) != goldenLog {
		t.Fatalf("log lines changed:\n got %s\nwant %s", got, goldenLog)
	}
}

func TestParseLogLine(t *testing.T) {
	ses := logSessions()
	lines := strings.SplitAfter(goldenLog, "\n")
	a, err := ParseLogLine([]byte(lines[1]))
	if err != nil {
		t.Fatal(err)
	}
	want := LogRecord{Type: LogAttempt, RunID: "run-1", SessionID: "c1/I/r1", Attempt: ses[0].Attempts[1]}
	if !a.Started.Equal(want.Started) {
		t.Errorf("attempt started %v, want %v", a.Started, want.Started)
	}
	a.Started, want.Started = time.Time{}, time.Time{}
	if !reflect.DeepEqual(a, want) {
		t.Errorf("attempt record %+v\nwant %+v", a, want)
	}
	f, err := ParseLogLine([]byte(lines[3]))
	if err != nil {
		t.Fatal(err)
	}
	if want := (LogRecord{Type: LogSession, RunID: "run-1", SessionID: "c2/II/r1", Status: SessionFailed, Trace: "t2", Failure: "auth"}); !reflect.DeepEqual(f, want) {
		t.Errorf("session record %+v\nwant %+v", f, want)
	}
	for _, bad := range []string{"", lines[0][:40], `{"type":5}`, "not json\n"} {
		if rec, err := ParseLogLine([]byte(bad)); err == nil {
			t.Errorf("ParseLogLine(%q) = %+v, want an error", bad, rec)
		}
	}
}

// setLog replaces a run's log with content: log.jsonl on SQLite; on
// PostgreSQL, rows of run_logs split mid-line, as a log written in several
// flushes can be.
func setLog(t *testing.T, s *Store, runID, content string) {
	t.Helper()
	if l, ok := s.logs.(fileLogs); ok {
		if err := os.WriteFile(l.path(runID), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return
	}
	ctx := context.Background()
	if _, err := s.db.ExecContext(ctx, `DELETE FROM run_logs WHERE run_id = $1`, runID); err != nil {
		t.Fatal(err)
	}
	n := len(content)
	for _, part := range []string{content[:n/7], content[n/7 : 2*n/5], content[2*n/5 : 3*n/4], content[3*n/4:]} {
		if err := s.appendChunk(ctx, s.db, runID, []byte(part)); err != nil {
			t.Fatal(err)
		}
	}
}

func testRepairLog(t *testing.T) {
	s := openStore(t)
	createRun(t, s, "run", base)
	path := filepath.Join(s.RunDir("run"), "log.jsonl")
	if logged, err := s.RepairLog("run"); err != nil || logged.Len() != 0 {
		t.Fatalf("RepairLog without a log = %v, %v", logged, err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) || len(storedLog(t, s, "run")) > 0 {
		t.Errorf("RepairLog created a log: %v", err)
	}
	ses := logSessions()
	whole := goldenLog
	// The attempts of a fourth session whose record was lost, and a line
	// cut short.
	lost := string(LogLines("run", Session{ID: "lost", Attempts: ses[0].Attempts}))
	lost = lost[:strings.LastIndex(strings.TrimSuffix(lost, "\n"), "\n")+1]
	for _, tc := range []struct {
		name, tail string
	}{
		{"whole", ""},
		{"attempts without their session", lost},
		{"a torn last line", `{"type":"session","run_id":"run-1","sess`},
		{"a torn line, then more", "{\"type\":\"sess\n" + goldenLog},
		{"attempts and a torn session line", lost + `{"type":"session","run_id":"run","session_id":"lost","status":"comp`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setLog(t, s, "run", whole+tc.tail)
			logged, err := s.RepairLog("run")
			if err != nil {
				t.Fatal(err)
			}
			if !logged.Has(ses[0].ID) || !logged.Has(ses[1].ID) || logged.Has(ses[2].ID) || logged.Has("lost") || logged.Len() != 2 {
				t.Errorf("logged %d sessions, want %s and %s (not the interrupted session, not the lost one)", logged.Len(), ses[0].ID, ses[1].ID)
			}
			if b := storedLog(t, s, "run"); string(b) != whole {
				t.Errorf("repaired log:\n%s\nwant:\n%s", b, whole)
			}
		})
	}
	// Appending after a repair continues the log.
	if err := s.AppendLog("run", LogLines("run", Session{ID: "next", Status: SessionComplete})); err != nil {
		t.Fatal(err)
	}
	logged, err := s.RepairLog("run")
	if err != nil || !logged.Has("next") || logged.Len() != 3 {
		t.Errorf("after appending: logged %d sessions, %v", logged.Len(), err)
	}
	if err := s.AppendLog("run", nil); err != nil {
		t.Errorf("appending nothing: %v", err)
	}
}
