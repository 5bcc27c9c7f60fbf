package cli

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/testkit/storetest"
)

var traceRef = regexp.MustCompile(`"trace_ref":"sha256:[0-9a-f]{64}"`)

// runReportExport runs the discovery deck on the simulator with a fixed
// seed in the store at loc, then reports and exports it; the run id is
// replaced by RUN so that two stores' outputs compare.
func runReportExport(t *testing.T, loc string) (report, export string) {
	t.Helper()
	code, out, errs := budge(t, "run", "--store", loc, "--seed", "7", "--quiet")
	if code != ExitOK {
		t.Fatalf("run exit %d\n%s\n%s", code, out, errs)
	}
	m := runLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no 'run: <id>' line in output:\n%s", out)
	}
	// A session's trace holds the wall-clock times of its calls, so its
	// sha256 differs from run to run on any store; so does the time the
	// report says the run was created.
	norm := func(s string) string {
		s = createdAt.ReplaceAllString(s, "created TIME")
		return traceRef.ReplaceAllString(strings.ReplaceAll(s, m[1], "RUN"), `"trace_ref":"TRACE"`)
	}
	code, rep, errs := budge(t, "report", "latest", "--store", loc, "--format", "md")
	if code != ExitOK {
		t.Fatalf("report exit %d: %s", code, errs)
	}
	code, exp, errs := budge(t, "export", "latest", "--store", loc, "--format", "jsonl")
	if code != ExitOK {
		t.Fatalf("export exit %d: %s", code, errs)
	}
	return norm(rep), norm(exp)
}

var createdAt = regexp.MustCompile(`created \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC`)

// A run on PostgreSQL reports and exports exactly what the same run on
// SQLite does.
func TestPostgresRunReportsLikeSQLite(t *testing.T) {
	url := storetest.PostgresURL(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir()) // the store's local cache
	pgRep, pgExp := runReportExport(t, url)
	sqDir := t.TempDir()
	sqRep, sqExp := runReportExport(t, sqDir)
	if pgRep != sqRep {
		t.Errorf("the report on PostgreSQL differs from SQLite's:\n%s", firstDiff(pgRep, sqRep))
	}
	if pgExp != sqExp {
		t.Errorf("the export on PostgreSQL differs from SQLite's:\n%s", firstDiff(pgExp, sqExp))
	}
	if n := strings.Count(pgExp, "\n"); n != 416 {
		t.Errorf("the export on PostgreSQL has %d records, want 416", n)
	}
	// The run log, which a PostgreSQL store keeps in the database, exports
	// as it does from SQLite's log.jsonl: an attempt record per call and a
	// record per session.
	_, pgLog, errs := budge(t, "export", "latest", "--store", url, "--format", "log")
	_, sqLog, _ := budge(t, "export", "latest", "--store", sqDir, "--format", "log")
	if n := strings.Count(pgLog, `"type":"session"`); n != 416 || strings.Count(sqLog, `"type":"session"`) != n ||
		strings.Count(pgLog, `"type":"attempt"`) != strings.Count(sqLog, `"type":"attempt"`) {
		t.Errorf("the log on PostgreSQL has %d session records and %d attempts, SQLite's %d and %d (%s)", n, strings.Count(pgLog, `"type":"attempt"`),
			strings.Count(sqLog, `"type":"session"`), strings.Count(sqLog, `"type":"attempt"`), errs)
	}
	st, err := store.OpenURL(context.Background(), url, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if runs, err := st.ListRuns(context.Background()); err != nil || len(runs) != 1 || runs[0].Status != store.RunComplete {
		t.Errorf("the PostgreSQL database holds runs %+v (%v), want the one complete run", runs, err)
	}
}

// A store URL's password is never printed: not in an error, not as the
// default of --store in the help.
func TestStorePasswordNeverPrinted(t *testing.T) {
	const pw = "hunter2-s3cret"
	bad := "postgres://budge:" + pw + "@127.0.0.1:1/budge?connect_timeout=2"
	for _, args := range [][]string{
		{"runs", "--store", bad},
		{"report", "latest", "--store", bad},
		{"run", "--store", bad, "--quiet"},
		{"deck", "freeze", "discovery", "--store", bad},
	} {
		code, out, errs := budge(t, args...)
		if code == ExitOK {
			t.Errorf("%v: exit 0 with an unreachable store", args)
		}
		if strings.Contains(out+errs, pw) {
			t.Errorf("%v printed the password:\n%s%s", args, out, errs)
		}
		if !strings.Contains(errs, "127.0.0.1:1") {
			t.Errorf("%v: the error does not name the server: %s", args, errs)
		}
	}
	t.Setenv("BUDGE_STORE", bad)
	_, out, errs := budge(t, "report", "--help")
	if strings.Contains(out+errs, pw) || !strings.Contains(out+errs, "xxxxx@127.0.0.1:1/budge") || !strings.Contains(out+errs, "from $BUDGE_STORE") {
		t.Errorf("report --help with $BUDGE_STORE set shows:\n%s%s", out, errs)
	}
}

// firstDiff shows the first line where a and b differ.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\n  postgres: %s\n  sqlite:   %s", i+1, al[i], bl[i])
		}
	}
	return "one is a prefix of the other"
}
