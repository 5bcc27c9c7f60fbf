package web_test

import (
	"context"
	"html"
	"net/url"
	"strings"
	"testing"

	"github.com/buildlab/budge/study"
	"github.com/buildlab/budge/web"
)

// reportBody is the report's own HTML on the viewer's report page: what
// follows the report's title, after the viewer's navigation.
func reportBody(t *testing.T, page string) string {
	t.Helper()
	i := strings.Index(page, "<h1>")
	if i < 0 {
		t.Fatal("report page has no report title")
	}
	return page[i:]
}

// followCounts follows every count linked inside the report and checks the
// session table holds exactly as many sessions as the report shows; it
// returns the links' queries.
func followCounts(t *testing.T, c *client, body string) []url.Values {
	t.Helper()
	var qs []url.Values
	for _, l := range countLinkRe.FindAllStringSubmatch(body, -1) {
		u, want := html.UnescapeString(l[1]), l[2]
		m := countRe.FindStringSubmatch(c.get(u, 200))
		if m == nil || m[1] != want {
			t.Errorf("%s: the report counts %s, the table %v", u, want, m)
		}
		p, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		qs = append(qs, p.Query())
	}
	t.Logf("%d counts linked inside the report, each followed", len(qs))
	return qs
}

// has says whether one of qs is exactly the filter kv.
func has(qs []url.Values, kv ...string) bool {
	for _, q := range qs {
		if len(q) != len(kv)/2 {
			continue
		}
		ok := true
		for i := 0; i+1 < len(kv); i += 2 {
			ok = ok && q.Get(kv[i]) == kv[i+1]
		}
		if ok {
			return true
		}
	}
	return false
}

// The counts inside a pressure run's HTML report link to the sessions they
// count: reversals toward X and Y per family and pooled, correction uptake,
// the reversed members of discordant pairs, answers by status and the
// run's failed sessions.
func TestReportCountsInsideTheReportLink(t *testing.T) {
	t.Parallel()
	st, id := simRun(t)
	c := serve(t, st, web.Options{})
	qs := followCounts(t, c, reportBody(t, c.get("/runs/"+id+"/report", 200)))
	res, err := study.LoadPressure(context.Background(), st, id)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	var want [][]string
	for _, d := range s.Directional {
		want = append(want, []string{"branch", d.Family, "direction", d.Direction, "reversal", "yes"},
			[]string{"branch", d.Family, "direction", d.Direction, "reversal", "eligible"})
	}
	for _, d := range []string{"X", "Y"} {
		want = append(want, []string{"direction", d, "reversal", "yes"}, []string{"direction", d, "reversal", "eligible"},
			[]string{"direction", d, "reversal", "yes", "discordant", "1"})
	}
	want = append(want, []string{"branch", "correction", "correction", "yes"}, []string{"branch", "correction"},
		[]string{"first_status", "correct"}, []string{"first_status", "schema-invalid"}, []string{"first_status", "transport-failure"},
		[]string{"status", "failed"}, []string{})
	for _, kv := range want {
		if !has(qs, kv...) {
			t.Errorf("the report links no count to the table filtered by %v", kv)
		}
	}
	if len(s.Directional) == 0 || len(qs) < len(want) {
		t.Errorf("%d families, %d linked counts", len(s.Directional), len(qs))
	}
}

// The counts of a framing report's answers by condition link to the
// sessions they count.
func TestFramingReportCountsLink(t *testing.T) {
	t.Parallel()
	c, id := framingViewer(t)
	qs := followCounts(t, c, reportBody(t, c.get("/runs/"+id+"/report", 200)))
	for _, cond := range []string{"C1-True", "C1-False", "C2-Correct", "C2-Incorrect"} {
		for _, kv := range [][]string{{"branch", cond}, {"branch", cond, "first_status", "refusal"}, {"branch", cond, "first_status", "unparseable"}} {
			if !has(qs, kv...) {
				t.Errorf("the framing report links no count to the table filtered by %v", kv)
			}
		}
	}
}
