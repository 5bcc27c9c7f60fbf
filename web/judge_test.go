package web_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/buildlab/budge/study"
	"github.com/buildlab/budge/testkit/storetest"
	"github.com/buildlab/budge/web"
)

// A store holding a judge run opens in the viewer: every run is indexed
// (budge view does this as it starts), the runs list shows the judge
// run's headline, its session table lists every judgment, and its report
// page and a judgment's transcript answer 200.
func TestViewerShowsJudgeRuns(t *testing.T) {
	ctx := context.Background()
	st := storetest.Open(t)
	fo := study.DefaultFramingOptions()
	fo.Bootstrap.Resamples = 50
	fr, err := study.As[*study.FramingResult](study.Start(ctx, st, fo))
	if err != nil {
		t.Fatal(err)
	}
	jo := study.DefaultJudgeOptions()
	jo.Source, jo.Model = fr.Manifest.RunID, "sim"
	jr, err := study.As[*study.JudgeResult](study.Start(ctx, st, jo))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := web.New(st, web.Options{LoadReport: loadScored})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.IndexAll(ctx, nil); err != nil {
		t.Fatalf("indexing a store with a judge run: %v", err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	c := &client{t: t, base: ts.URL, http: ts.Client()}
	id := jr.Manifest.RunID
	runs := c.get("/", 200)
	if !strings.Contains(runs, "judge of run "+fr.Manifest.RunID) || !strings.Contains(runs, "tasks with a code") {
		t.Errorf("runs list lacks the judge headline")
	}
	page := c.get("/runs/"+id+"/", 200)
	ids := sessionIDs(page)
	if len(ids) == 0 || len(jr.Judgments) < len(ids) {
		t.Fatalf("judge run table lists %d judgments of %d", len(ids), len(jr.Judgments))
	}
	if !strings.Contains(page, jr.Judgments[0].Task) && len(jr.Judgments) <= 50 {
		t.Errorf("judge run table does not name task %s", jr.Judgments[0].Task)
	}
	// The table is laid out for judgments, not pressure sessions: a code
	// column, and none of the pressure protocol's columns or filters.
	if !strings.Contains(page, ">code</a>") || !strings.Contains(page, ">"+jr.Judgments[0].Code+"<") {
		t.Errorf("judge run table has no code column with the judge's codes")
	}
	for _, pressureOnly := range []string{"pressure favours", "correction applied", `name="assignment"`, ">pair</th>"} {
		if strings.Contains(page, pressureOnly) {
			t.Errorf("judge run table shows the pressure layout's %q", pressureOnly)
		}
	}
	rep := c.get("/runs/"+id+"/report", 200)
	if !strings.Contains(rep, "order-swap agreement") {
		t.Errorf("judge report page lacks the audit:\n%s", rep[:min(len(rep), 600)])
	}
	c.get("/runs/"+id+"/session?id="+ids[0], 200)
}
