package web_test

import (
	"context"
	"html"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
	"github.com/buildlab/budge/web"
)

var (
	triggerLinkRe = regexp.MustCompile(`<a class="trigger" href="([^"]+)" data-trigger="([^"]+)">([^<]*): (\d+) session\(s\)</a>`)
	rowRe         = regexp.MustCompile(`data-session="([^"]+)"`)
)

// The export, the report and the viewer agree on every session's
// decision triggers: the run page opens with the decision, naming each
// kind that fired with its count; following a kind's link lists exactly
// the sessions the export gives that kind, and every session's stored
// triggers in the viewer's index are the export's.
func TestTriggersAgreeAcrossExportReportAndViewer(t *testing.T) {
	t.Parallel()
	st, id := simRunOf(t, "sim:pushover")
	ctx := context.Background()
	res, err := study.As[*study.PressureResult](study.OpenForExport(ctx, st, id))
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string][]string{} // kind → sessions
	perSession := map[string][]string{}
	if err := res.Records(ctx, "", func(r pressure.ExportRecord) error {
		perSession[r.SessionID] = r.DecisionTriggerKinds
		for _, k := range r.DecisionTriggerKinds {
			exported[k] = append(exported[k], r.SessionID)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	scored, err := study.LoadPressure(ctx, st, id)
	if err != nil {
		t.Fatal(err)
	}
	dec := scored.Summary.Decision
	if len(dec.Triggers) < 2 {
		t.Fatalf("pushover fired %d kinds of trigger; the test wants several", len(dec.Triggers))
	}
	c := serve(t, st, web.Options{})
	page := c.get("/runs/"+id+"/", 200)
	if i, j := strings.Index(page, `id="decision"`), strings.Index(page, `id="filters"`); i < 0 || j < i {
		t.Fatal("the run page does not open with the decision")
	}
	if !strings.Contains(page, html.EscapeString(dec.Headline)) {
		t.Errorf("run page lacks the headline %q", dec.Headline)
	}
	links := triggerLinkRe.FindAllStringSubmatch(page, -1)
	if len(links) != len(dec.Triggers) {
		t.Fatalf("run page links %d kinds, the decision fired %d", len(links), len(dec.Triggers))
	}
	for i, l := range links {
		f := dec.Triggers[i]
		if l[2] != f.Key || html.UnescapeString(l[3]) != f.Label || l[4] != strconv.Itoa(f.Count) || len(exported[f.Key]) != f.Count {
			t.Errorf("link %q: want %s %q %d (export %d)", l[0], f.Key, f.Label, f.Count, len(exported[f.Key]))
		}
		var shown []string
		for u := html.UnescapeString(l[1]); u != ""; {
			p := c.get("/runs/"+id+"/"+u, 200)
			for _, m := range rowRe.FindAllStringSubmatch(p, -1) {
				shown = append(shown, m[1])
			}
			u = ""
			if m := nextRe.FindStringSubmatch(p); m != nil {
				u = html.UnescapeString(m[1])
				u = u[strings.LastIndex(u, "/")+1:]
			}
		}
		slices.Sort(shown)
		want := slices.Sorted(slices.Values(exported[f.Key]))
		if !slices.Equal(shown, want) {
			t.Errorf("%s: the viewer lists %d sessions, the export %d", f.Key, len(shown), len(want))
		}
	}
	var views []store.ViewSession
	for after := ""; ; {
		pg, err := st.ViewSessions(ctx, id, store.ViewQuery{After: after, Limit: 500, NoCount: true})
		if err != nil {
			t.Fatal(err)
		}
		views = append(views, pg.Rows...)
		if after = pg.Next; after == "" {
			break
		}
	}
	for _, v := range views {
		if got, want := strings.Fields(v.Triggers), perSession[v.ID]; !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("%s: viewer triggers %q, export %q", v.ID, got, want)
		}
	}
	if len(views) != len(perSession) {
		t.Errorf("viewer index holds %d of %d sessions", len(views), len(perSession))
	}
}
