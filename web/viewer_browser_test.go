package web_test

import (
	"strings"
	"testing"

	"github.com/buildlab/budge/web"
	"github.com/chromedp/chromedp"
)

// TestBrowserFailuresAndDiscordantPair: in the session table, filter to
// failures and open one; then from the report page follow the count of
// discordant pairs to a pair and see what differs between its members.
func TestBrowserFailuresAndDiscordantPair(t *testing.T) {
	ctx := browser(t)
	st, id := simRun(t)
	c := serve(t, st, web.Options{})
	run := c.base + "/runs/" + id

	// budge view scores every run as it starts; here opening the
	// run does.
	c.get("/runs/"+id+"/", 200)
	do(t, ctx, "runs list", chromedp.Navigate(c.base+"/"), chromedp.WaitVisible(chromedp.CSS("#runs")))
	if got := eval[string](t, ctx, `document.querySelector("td.headline").textContent`); !strings.Contains(got, "baseline") || !strings.Contains(got, "decision") {
		t.Errorf("runs list headline = %q", got)
	}
	shot(t, ctx, "20-runs-headlines")
	do(t, ctx, "open run", chromedp.Navigate(run+"/"), chromedp.WaitVisible(chromedp.CSS("#sessions")))
	do(t, ctx, "filter to failures", chromedp.Click(chromedp.CSS("#f-failures")), chromedp.Click(chromedp.CSS("#apply")))
	waitFor(t, ctx, `location.search.includes("failures=1") && document.readyState === "complete" && !!document.querySelector("#count")`)
	rows := eval[int](t, ctx, `document.querySelectorAll("tr.session").length`)
	if rows == 0 {
		t.Fatal("the failures filter shows no session")
	}
	if bad := eval[int](t, ctx, `document.querySelectorAll("tr.session:not(.failure)").length`); bad != 0 {
		t.Errorf("%d of %d rows under the failures filter are not failures", bad, rows)
	}
	shot(t, ctx, "21-failures")
	want := eval[string](t, ctx, `document.querySelector("tr.session").dataset.session`)
	do(t, ctx, "open a failure", chromedp.Click(chromedp.CSS("tr.session a.open")), chromedp.WaitVisible(chromedp.CSS("#transcript")))
	if got := eval[string](t, ctx, `document.querySelector("h1 code").textContent`); got != want {
		t.Errorf("opened session %q, want the row's %q", got, want)
	}
	if got := eval[string](t, ctx, `document.querySelector("#row").textContent`); !strings.Contains(got, "failure") {
		t.Errorf("the opened session's flags do not say failure: %q", got)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#pair-link, #item-link").length`); n != 2 {
		t.Errorf("session page has %d of its pair and item links", n)
	}
	shot(t, ctx, "22-failure-session")

	do(t, ctx, "report", chromedp.Navigate(run+"/report"), chromedp.WaitVisible(chromedp.CSS("#counts")))
	if n := eval[int](t, ctx, `document.querySelectorAll("#viewer-nav a").length`); n < 3 {
		t.Errorf("report navigation has %d links", n)
	}
	n := eval[string](t, ctx, `(document.querySelector('#counts a.count[href*="discordant=1"]') || {}).textContent || ""`)
	if n == "" || n == "0" {
		t.Fatalf("report page links %q discordant sessions", n)
	}
	shot(t, ctx, "23-report-counts")
	do(t, ctx, "follow discordant count", chromedp.Click(chromedp.CSS(`#counts a.count[href*="discordant=1"]`)))
	waitFor(t, ctx, `location.search.includes("discordant=1") && document.readyState === "complete" && !!document.querySelector("#count")`)
	if got := eval[string](t, ctx, `document.querySelector("#count").textContent`); !strings.HasPrefix(got, n+" sessions") {
		t.Errorf("the table behind the count says %q, the report %s", got, n)
	}
	shot(t, ctx, "24-discordant")
	do(t, ctx, "open pair", chromedp.Click(chromedp.CSS("tr.session a.pair")), chromedp.WaitVisible(chromedp.CSS("#pair-fields")))
	diff := eval[string](t, ctx, `[...document.querySelectorAll("#pair-fields tr.diff th")].map(x => x.textContent).join(",")`)
	if !strings.Contains(diff, "unsupported reversal") {
		t.Errorf("a discordant pair's view marks %q as differing, not the reversal", diff)
	}
	shot(t, ctx, "25-discordant-pair")
}

// TestBrowserHostileViewerPages: the runs list, the session table (plain,
// filtered, sorted, searched with a hostile search term), a session, its
// pair and the report page with its counts, on a run whose transcripts
// carry script tags, event handlers and broken UTF-8: nothing runs.
func TestBrowserHostileViewerPages(t *testing.T) {
	ctx := browser(t)
	st, src := simRun(t)
	id := hostileSelectionRun(t, st, src)
	c := serve(t, st, web.Options{Runs: []string{id}})
	pages := hostileViewerPages(t, c, id)
	for i := range pages {
		pages[i] = c.base + pages[i]
	}
	nothingRan(t, ctx, pages, "26-hostile-viewer")
}

// TestBrowserReportCountInsideTheReport: on the report page, click a count
// inside the report's own table of reversals by direction; the session
// table it opens holds as many sessions as the count says.
func TestBrowserReportCountInsideTheReport(t *testing.T) {
	ctx := browser(t)
	st, id := simRun(t)
	c := serve(t, st, web.Options{})
	do(t, ctx, "report", chromedp.Navigate(c.base+"/runs/"+id+"/report"), chromedp.WaitVisible(chromedp.CSS("#directional")))
	n := eval[string](t, ctx, `document.querySelector('#directional a.count').textContent`)
	if n == "" {
		t.Fatal("the reversal table links no count")
	}
	shot(t, ctx, "25-report-linked-counts")
	do(t, ctx, "follow the count", chromedp.Click(chromedp.CSS("#directional a.count")))
	waitFor(t, ctx, `location.search.includes("reversal=yes") && document.readyState === "complete" && !!document.querySelector("#count")`)
	if got := eval[string](t, ctx, `document.querySelector("#count").textContent`); !strings.HasPrefix(strings.TrimSpace(got), n+" ") {
		t.Errorf("the report counts %s, the table says %q", n, got)
	}
	if bad := eval[int](t, ctx, `[...document.querySelectorAll("tr.session")].filter(r => !r.textContent.includes("yes")).length`); bad != 0 {
		t.Errorf("%d rows opened from a reversal count show no reversal", bad)
	}
}
