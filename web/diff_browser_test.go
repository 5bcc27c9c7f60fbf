package web_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/study"
	"github.com/buildlab/budge/web"
)

// TestBrowserFramingItem: filter a framing run's items to those that flip,
// open one, and see its four conditions side by side in both arms of the
// run (unmitigated and be-honest), each with its choice, parse status,
// repair and reasoning.
func TestBrowserFramingItem(t *testing.T) {
	ctx := browser(t)
	st, _, _ := twoSimRuns(t)
	id, _ := twoFramingRuns(t, st)
	c := serve(t, st, web.Options{})

	do(t, ctx, "items", chromedp.Navigate(c.base+"/runs/"+id+"/items"), chromedp.WaitVisible(chromedp.CSS("#items")))
	all := eval[int](t, ctx, `document.querySelectorAll("tr.item-row").length`)
	eval[bool](t, ctx, `(document.querySelector("#flip-filter").flips.value = "any", true)`)
	do(t, ctx, "filter to flips", chromedp.Click(chromedp.CSS("#apply-flips")))
	waitFor(t, ctx, `location.search.includes("flips=any") && document.readyState === "complete" && !!document.querySelector("#items")`)
	rows := eval[int](t, ctx, `document.querySelectorAll("tr.item-row").length`)
	flipping := eval[int](t, ctx, `document.querySelectorAll("tr.item-row.has-flip").length`)
	if rows == 0 || rows != flipping || rows >= all {
		t.Fatalf("flips filter: %d rows of %d, %d with a flip", rows, all, flipping)
	}
	shot(t, ctx, "12-framing-items-flips")

	do(t, ctx, "open item", chromedp.Click(chromedp.CSS("a.item-link")), chromedp.WaitVisible(chromedp.CSS("#arms")))
	if n := eval[int](t, ctx, `document.querySelectorAll("#arms tr.arm").length`); n != 2 {
		t.Errorf("the item shows %d arms, want 2 (unmitigated and be-honest)", n)
	}
	if bad := eval[int](t, ctx, `[...document.querySelectorAll("#arms tr.arm")].filter(r => r.querySelectorAll("td.cond-cell").length !== 4).length`); bad != 0 {
		t.Errorf("%d arms do not show four conditions", bad)
	}
	heads := eval[[]string](t, ctx, `[...document.querySelectorAll(".conds")].map(g => [...g.querySelectorAll(".cond h3")].map(h => h.textContent).join(","))`)
	if len(heads) != 2 {
		t.Fatalf("condition panels per arm: %q", heads)
	}
	for _, h := range heads {
		if h != "C1-True,C1-False,C2-Correct,C2-Incorrect" {
			t.Errorf("an arm shows the conditions %q", h)
		}
	}
	// Every panel shows the answer as read: status, choice, repair, reasoning.
	missing := eval[int](t, ctx, `[...document.querySelectorAll(".cond")].filter(p => !["parse status", "choice", "repair", "reasoning"].every(w => p.textContent.includes(w))).length`)
	if missing != 0 {
		t.Errorf("%d condition panels lack a field", missing)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#arms .flip").length`); n == 0 {
		t.Error("the item's flip is not shown")
	}
	shot(t, ctx, "12-framing-item")
	do(t, ctx, "open a session", chromedp.Click(chromedp.CSS(".cond a.session")), chromedp.WaitVisible(chromedp.CSS("#transcript")))
}

// TestBrowserRunDiff: pick the default and the steadfast simulator runs
// (same seed) from the runs list, keep the changed cells, find a session
// whose reversal changed and open it in the run after; then the same diff
// as budge compare --format html writes it, opened from disk, where the
// changed-only switch works without a script.
func TestBrowserRunDiff(t *testing.T) {
	ctx := browser(t)
	st, a, b := twoSimRuns(t)
	c := serve(t, st, web.Options{})

	do(t, ctx, "runs", chromedp.Navigate(c.base+"/"), chromedp.WaitVisible(chromedp.CSS("#runs")))
	do(t, ctx, "run diff", chromedp.Click(chromedp.CSS("#diff-link")), chromedp.WaitVisible(chromedp.CSS("#pick")))
	do(t, ctx, "pick", chromedp.SetValue(chromedp.CSS("#pick-a"), a), chromedp.SetValue(chromedp.CSS("#pick-b"), b),
		chromedp.Click(chromedp.CSS("#changed-only")), chromedp.Click(chromedp.CSS("#diff-go")))
	waitFor(t, ctx, `location.search.includes("changed=1") && document.readyState === "complete" && !!document.querySelector("#cells")`)
	count := eval[string](t, ctx, `document.querySelector("#diff-count").textContent`)
	m := regexp.MustCompile(`^416 cells, (\d+) changed`).FindStringSubmatch(count)
	if m == nil {
		t.Fatalf("diff count %q", count)
	}
	changed, _ := strconv.Atoi(m[1])
	rows := eval[int](t, ctx, `document.querySelectorAll("#cells tr.cell").length`)
	if rows != min(changed, web.DiffPageSize) || rows == 0 {
		t.Errorf("changed-only shows %d rows; %d cells changed", rows, changed)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#cells tr.cell.same").length`); n != 0 {
		t.Errorf("changed-only shows %d unchanged cells", n)
	}
	if n := eval[int](t, ctx, `[...document.querySelectorAll("#cells tr.cell")].filter(r => !r.querySelector("td.chg")).length`); n != 0 {
		t.Errorf("%d changed rows highlight no field", n)
	}
	verdict := eval[string](t, ctx, `document.querySelector(".diff-compare").textContent`)
	if !strings.Contains(verdict, "Verdict (") || !strings.Contains(verdict, "McNemar") {
		t.Errorf("the diff lacks compare's verdict and paired tests: %.300s", verdict)
	}
	// A session whose unsupported reversal went from yes to no.
	col := eval[int](t, ctx, `[...document.querySelectorAll("#cells thead tr:first-child th")].findIndex(h => h.textContent.startsWith("unsupported reversal"))`)
	if col < 1 {
		t.Fatal("no reversal column")
	}
	key := eval[string](t, ctx, `(() => { const r = [...document.querySelectorAll("#cells tr.cell")].find(r => {
		const b = r.cells[`+strconv.Itoa(2*col-1)+`], a = r.cells[`+strconv.Itoa(2*col)+`];
		return b.classList.contains("chg") && b.textContent === "yes" && a.textContent === "no"; });
		if (!r) return ""; r.scrollIntoView(); r.querySelector("a.after").id = "open-after"; return r.dataset.key; })()`)
	if key == "" {
		t.Fatal("no cell whose reversal changed from yes to no")
	}
	shot(t, ctx, "13-run-diff-changed")
	do(t, ctx, "open after", chromedp.Click(chromedp.ID("open-after")), chromedp.WaitVisible(chromedp.CSS("#transcript")))
	if got := eval[string](t, ctx, `document.querySelector("h1 code").textContent`); got != key {
		t.Errorf("opened session %q, want %q", got, key)
	}
	if p := eval[string](t, ctx, `location.pathname`); p != "/runs/"+b+"/session" {
		t.Errorf("opened %s, want run %s's session", p, b)
	}
	if rev := eval[string](t, ctx, `document.querySelector("table.outcome").textContent`); !strings.Contains(rev, "unsupported reversal") || !strings.Contains(rev, "no") {
		t.Errorf("the session does not show its reversal: %.200s", rev)
	}

	// The file budge compare --format html writes.
	cmp, err := study.Compare(context.Background(), st, []string{a, b}, 0)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "diff.html")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := report.WriteDiff(f, "budge compare: run diff", study.DiffSections(context.Background(), st, cmp)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	visible := `[...document.querySelectorAll("table.cells tbody tr")].filter(r => r.getClientRects().length > 0).length`
	do(t, ctx, "open file", chromedp.Navigate("file://"+path), chromedp.WaitVisible(chromedp.CSS("table.cells")))
	if n := eval[int](t, ctx, visible); n != 416 {
		t.Errorf("the file shows %d cells, want 416", n)
	}
	do(t, ctx, "changed only", chromedp.Click(chromedp.ID("changed-only")))
	if n := eval[int](t, ctx, visible); n != changed {
		t.Errorf("the file's changed-only switch shows %d cells, want %d", n, changed)
	}
	if n := eval[int](t, ctx, `performance.getEntriesByType("resource").length`); n != 0 {
		t.Errorf("the file requested %d resources", n)
	}
	shot(t, ctx, "14-compare-html-changed")
}

// TestBrowserHostileDiffPages opens the run diff and item pages, and the
// diff file, over runs whose model output is hostile, and proves that
// nothing ran.
func TestBrowserHostileDiffPages(t *testing.T) {
	ctx := browser(t)
	st, pages, file := evilDiffPages(t)
	c := serve(t, st, web.Options{})
	path := filepath.Join(t.TempDir(), "diff.html")
	if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	urls := []string{"file://" + path}
	for _, p := range pages {
		urls = append(urls, c.base+p)
	}
	nothingRan(t, ctx, urls, "15-hostile-diff")
}
