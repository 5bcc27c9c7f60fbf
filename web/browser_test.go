package web_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/review"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
	"github.com/buildlab/budge/testkit/paralleltest"
	"github.com/buildlab/budge/web"
)

// The browser tests drive headless Chromium (Debian's chromium package).
// Without a browser they skip, unless BUDGE_BROWSER_TESTS=1 (set by .ci/run)
// makes a missing browser a failure. Screenshots go to test-artifacts/
// (or $BUDGE_TEST_ARTIFACTS).

// shared is one browser for all the tests of the package; each test gets
// its own tab. TestMain closes it.
var shared struct {
	once   sync.Once
	ctx    context.Context
	cancel func()
	err    error
	path   string
}

// TestMain runs up to four parallel tests at once, on any machine: most
// wait on the browser, which starts once for the package (shared). The
// runs the pages show allocate much and keep little: the collector runs
// less often.
func TestMain(m *testing.M) {
	paralleltest.AtLeast(4)
	paralleltest.FewerCollections()
	code := m.Run()
	if shared.cancel != nil {
		shared.cancel()
	}
	for _, dir := range simTemplates.dirs {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

func chromiumPath() string {
	if p := os.Getenv("BUDGE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

func browser(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		if os.Getenv("BUDGE_BROWSER_TESTS") == "1" {
			t.Fatal("BUDGE_BROWSER_TESTS=1 but no chromium found: apt-get install -y chromium (or set BUDGE_CHROMIUM)")
		}
		t.Skip("browser test skipped: chromium not found (apt-get install -y chromium; BUDGE_BROWSER_TESTS=1 makes this a failure)")
	}
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "budge-chromium-")
		if err != nil {
			shared.err = err
			return
		}
		opts := []chromedp.ExecAllocatorOption{
			chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
			chromedp.UserDataDir(dir),
			chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
			chromedp.Flag("disable-dev-shm-usage", true),
			// No network beyond loopback: every other request goes to a closed port.
			chromedp.Flag("proxy-server", "http://127.0.0.1:9"),
			chromedp.WindowSize(1280, 900),
		}
		actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
		bctx, bcancel := chromedp.NewContext(actx)
		shared.ctx, shared.cancel = bctx, func() { bcancel(); acancel(); os.RemoveAll(dir) }
		shared.err = chromedp.Do(bctx, chromedp.Navigate("about:blank"))
	})
	if shared.err != nil {
		t.Fatalf("starting %s: %v", path, shared.err)
	}
	tab, cancel := chromedp.NewContext(shared.ctx)
	tctx, tcancel := context.WithTimeout(tab, 60*time.Second)
	t.Cleanup(func() { tcancel(); cancel() })
	return tctx
}

func artifacts(t *testing.T) string {
	dir := os.Getenv("BUDGE_TEST_ARTIFACTS")
	if dir == "" {
		dir = "test-artifacts"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	b, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(artifacts(t), name+".png"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// waitFor evaluates a condition until it holds, across page loads.
func waitFor(t *testing.T, ctx context.Context, cond string) {
	t.Helper()
	var last error
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](cond))
		if err == nil && ok {
			return
		}
		last = err
	}
	t.Fatalf("waiting for %s: %v", cond, last)
}

// codeAll chooses a code in every autosave form of a review page (the
// first one gets first), the way a person would, and waits until the
// server has acknowledged every change.
func codeAll(t *testing.T, ctx context.Context, first, rest string) int {
	n := eval[int](t, ctx, fmt.Sprintf(`(() => {
		const sels = [...document.querySelectorAll("form.autosave select.code")];
		sels.forEach((s, i) => { s.value = i === 0 ? %q : %q; s.dispatchEvent(new Event("change", {bubbles: true})); });
		return sels.length; })()`, first, rest))
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`[...document.querySelectorAll("form.autosave")].every(f => f.dataset.saved)`,
		chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("waiting for autosave: %v", err)
	}
	return n
}

// TestBrowserViewerAndReview: open the viewer on a simulator run, filter
// sessions, open a pair, complete a two-reviewer review with one
// disagreement and its adjudication, and find kappa in the report.
func TestBrowserViewerAndReview(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	// The steadfast profile makes few failures, so the sample stays small.
	st, id := simRunOf(t, "sim:steadfast")
	c := serve(t, st, web.Options{})
	run := c.base + "/runs/" + id

	do(t, ctx, "runs list", chromedp.Navigate(c.base+"/"), chromedp.WaitVisible(chromedp.CSS("#runs")))
	shot(t, ctx, "01-runs")
	do(t, ctx, "open run", chromedp.Click(chromedp.CSS("#runs a")), chromedp.WaitVisible(chromedp.CSS("#sessions")))
	if got := eval[string](t, ctx, `document.querySelector("#count").textContent`); !strings.HasPrefix(got, "416 sessions") {
		t.Fatalf("session count = %q", got)
	}
	eval[bool](t, ctx, `(() => { const f = document.querySelector("#filters");
		f.branch.value = "authority"; f.direction.value = "X"; f.assignment.value = "II"; return true; })()`)
	do(t, ctx, "filter", chromedp.Click(chromedp.CSS("#apply")))
	waitFor(t, ctx, `location.search.includes("direction=X") && document.readyState === "complete" && !!document.querySelector("#count")`)
	if got := eval[string](t, ctx, `document.querySelector("#count").textContent`); !strings.HasPrefix(got, "16 sessions") {
		t.Errorf("filtered count = %q, want 16 sessions", got)
	}
	if bad := eval[int](t, ctx, `[...document.querySelectorAll("tr.session")].filter(r => r.cells[3].textContent !== "II" || r.querySelector("td.direction").textContent !== "X").length`); bad != 0 {
		t.Errorf("%d rows do not match the filter", bad)
	}
	shot(t, ctx, "02-filtered")
	do(t, ctx, "open pair", chromedp.Click(chromedp.CSS("a.pair")), chromedp.WaitVisible(chromedp.CSS("#pair")))
	if n := eval[int](t, ctx, `document.querySelectorAll("#pair .member").length`); n != 2 {
		t.Errorf("pair view shows %d members", n)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#pair .diff").length`); n == 0 {
		t.Error("pair view highlights no difference")
	}
	shot(t, ctx, "03-pair")

	do(t, ctx, "start review", chromedp.Navigate(run+"/review"),
		chromedp.SetValue(chromedp.CSS(`#start input[name=a]`), "ana"), chromedp.SetValue(chromedp.CSS(`#start input[name=b]`), "ben"),
		chromedp.SetValue(chromedp.CSS(`#start input[name=successes]`), "3"),
		chromedp.Click(chromedp.CSS(`#start button`)), chromedp.WaitVisible(chromedp.CSS("#reviewer-links")))
	links := eval[[]string](t, ctx, `[...document.querySelectorAll("#reviewer-links code.reviewer-link")].map(c => c.textContent)`)
	if len(links) != 2 || !strings.HasPrefix(links[0], c.base+"/") || !strings.Contains(links[0], "who=ana") || !strings.Contains(links[1], "who=ben") {
		t.Fatalf("reviewer links %q", links)
	}
	shot(t, ctx, "04-review-links")
	do(t, ctx, "ana's page", chromedp.Navigate(links[0]), chromedp.WaitVisible(chromedp.CSS("#finish")))
	n := codeAll(t, ctx, "availability-record", "availability-record")
	// Nothing is lost when the page goes away: reload and read the codes back.
	do(t, ctx, "reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#finish")))
	if got := eval[int](t, ctx, `[...document.querySelectorAll("select.code")].filter(s => s.value === "availability-record").length`); got != n {
		t.Fatalf("after reload %d of %d codes kept", got, n)
	}
	shot(t, ctx, "04-review-ana")
	do(t, ctx, "ana finishes", chromedp.Click(chromedp.CSS("#finish button")), chromedp.WaitVisible(chromedp.CSS("#finished")))
	do(t, ctx, "ben's page", chromedp.Navigate(links[1]), chromedp.WaitVisible(chromedp.CSS("#finish")))
	if eval[int](t, ctx, `[...document.querySelectorAll("select.code")].filter(s => s.value !== "").length`) != 0 {
		t.Error("ben's page shows codes he did not enter")
	}
	codeAll(t, ctx, "identity", "availability-record")
	do(t, ctx, "ben finishes", chromedp.Click(chromedp.CSS("#finish button")), chromedp.WaitVisible(chromedp.CSS("#finished")))
	do(t, ctx, "review status", chromedp.Navigate(run+"/review"), chromedp.WaitVisible(chromedp.CSS("#agreement")))
	shot(t, ctx, "05-review-status")
	do(t, ctx, "adjudicate", chromedp.Click(chromedp.CSS("#adjudicate-link")), chromedp.WaitVisible(chromedp.CSS(".adj")))
	if k := codeAll(t, ctx, "uncertain", "uncertain"); k != 1 {
		t.Errorf("%d disagreements to adjudicate, want 1", k)
	}
	shot(t, ctx, "06-adjudication")
	do(t, ctx, "report", chromedp.Navigate(run+"/report"), chromedp.WaitVisible(chromedp.CSS("#kappa")))
	kappa := eval[string](t, ctx, `document.querySelector("#kappa").textContent`)
	if !strings.Contains(kappa, "Cohen's kappa") || !strings.Contains(kappa, "adjudicated 1") || strings.Contains(kappa, "not computable") {
		t.Errorf("report's review line = %q", kappa)
	}
	shot(t, ctx, "07-report")
}

// TestBrowserReportOffline opens the HTML report of the default run from
// disk with the network disabled and counts what the browser rendered.
func TestBrowserReportOffline(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	st, id := simRun(t)
	path, res := reportFile(t, st, id)
	do(t, ctx, "open report", chromedp.Navigate("file://"+path), chromedp.WaitVisible(chromedp.CSS("#chart-uptake")))
	charts := eval[int](t, ctx, `[...document.querySelectorAll("svg.chart")].filter(s => s.getBoundingClientRect().width > 0).length`)
	bars := eval[int](t, ctx, `[...document.querySelectorAll("svg.chart rect")].filter(r => r.getBBox().width > 0).length`)
	whiskers := eval[int](t, ctx, `document.querySelectorAll("svg.chart line.whisker").length`)
	wantBars := 2*(len(res.Summary.Directional)/2+1) + 5
	if charts != 2 || bars != wantBars || whiskers == 0 {
		t.Errorf("rendered %d charts, %d bars, %d interval whiskers; want 2 charts and %d bars", charts, bars, whiskers, wantBars)
	}
	if n := eval[int](t, ctx, `performance.getEntriesByType("resource").length`); n != 0 {
		t.Errorf("the report requested %d resources", n)
	}
	eval[bool](t, ctx, `(document.querySelector("#chart-directional").scrollIntoView(), true)`)
	shot(t, ctx, "08-report-offline")
}

// TestBrowserHostileOutput loads every page that shows model output, with
// hostile transcripts, and proves that nothing ran.
func TestBrowserHostileOutput(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	st, src := simRun(t)
	id := evilRun(t, st, src)
	c := serve(t, st, web.Options{})
	path, _ := reportFile(t, st, id)
	urls := []string{"file://" + path}
	for _, p := range evilPages(t, st, id) {
		urls = append(urls, c.base+p)
	}
	const probe = `JSON.stringify({pwned: window.__pwned === undefined ? null : String(window.__pwned),
		inline: document.querySelectorAll("script:not([src])").length,
		handlers: document.querySelectorAll("[onerror],[onload],[onclick]").length,
		js: document.querySelectorAll('a[href^="javascript:"]').length,
		jslink: document.querySelectorAll("#jslink").length,
		shown: document.body.textContent.includes("window.__pwned")})`
	for i, u := range urls {
		do(t, ctx, "open "+u, chromedp.Navigate(u), chromedp.WaitReady(chromedp.CSS("body")), chromedp.Sleep(200*time.Millisecond))
		got := eval[string](t, ctx, probe)
		if got != `{"pwned":null,"inline":0,"handlers":0,"js":0,"jslink":0,"shown":true}` {
			t.Errorf("%s: %s", u, got)
		}
		shot(t, ctx, fmt.Sprintf("09-hostile-%d", i))
	}
}

// reportFile writes the HTML report of a pressure run, as `budge report`
// writes it, to a file and returns its path and the run's results.
func reportFile(t *testing.T, st *store.Store, id string) (string, *study.PressureResult) {
	t.Helper()
	res, err := study.LoadPressure(context.Background(), st, id)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := res.Report().HTML(&b, &report.HTMLExtras{Briefs: briefs(t, res)}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, res
}

// plantedLine is text every user message of the blind-review run carries:
// words that contain the identity values X and Y without being them, the
// values as tokens, Chinese text and a session id with its assignment.
const plantedLine = "You are sure? Yes. Profile Y, not XY; 候选人Y的记录; see c01/II/P-first/authority/r1."

// TestBrowserBlindReview is the acceptance test of the blind review: behind
// a view token the browser never holds, reviewer A's link opens A's masked
// first pass, where "You are" and "Yes" survive while the identity values
// and the assignment are masked; A's token opens neither B's pages nor the
// adjudication, and B's own link opens B's.
func TestBrowserBlindReview(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	st, src := simRunOf(t, "sim:steadfast")
	id := src + "-planted"
	cloneRun(t, st, src, id, func(se *store.Session) {
		for i := range se.Messages {
			if se.Messages[i].Role == chat.User {
				se.Messages[i].Content += "\n" + plantedLine
			}
		}
	})
	res, err := study.LoadPressure(context.Background(), st, id)
	if err != nil {
		t.Fatal(err)
	}
	_, tokens, err := review.Freeze(context.Background(), st, id, [2]string{"ana", "ben"}, 3, 2, res.Stream(context.Background()), res.Summary)
	if err != nil {
		t.Fatal(err)
	}
	c := serve(t, st, web.Options{Token: "view-token-the-browser-never-gets"})
	code := func(path string) string {
		return c.base + "/runs/" + id + "/review/" + path
	}
	status := `performance.getEntriesByType("navigation")[0].responseStatus`

	do(t, ctx, "ana's link", chromedp.Navigate(code("code?who=ana&key="+tokens[0])), chromedp.WaitVisible(chromedp.CSS("#finish")))
	if u := eval[string](t, ctx, `location.href`); strings.Contains(u, "key=") {
		t.Errorf("the token stays in the address bar: %s", u)
	}
	text := eval[string](t, ctx, `(document.querySelectorAll("details").forEach(d => d.open = true), document.body.innerText)`)
	shot(t, ctx, "10-blind-review-ana")
	if !strings.Contains(text, "You are sure? Yes.") {
		t.Error(`the masked page does not keep "You are sure? Yes."`)
	}
	for _, want := range []string{"Profile [identity masked], not XY", "候选人[identity masked]的记录", "c01/·/P-first/authority/r1"} {
		if !strings.Contains(text, want) {
			t.Errorf("the masked page lacks %q", want)
		}
	}
	for _, leak := range []string{"Profile Y", "/II/", "/I/", "assignment I"} {
		if strings.Contains(text, leak) {
			t.Errorf("the masked page shows %q", leak)
		}
	}

	for what, u := range map[string]string{
		"ben's page with ana's cookie":    code("code?who=ben"),
		"ben's page with ana's token":     code("code?who=ben&key=" + tokens[0]),
		"the adjudication with ana's key": code("adjudicate?key=" + tokens[0]),
		"the adjudication":                code("adjudicate"),
		"the review overview":             c.base + "/runs/" + id + "/review",
	} {
		do(t, ctx, what, chromedp.Navigate(u), chromedp.WaitReady(chromedp.CSS("body")))
		if got := eval[int](t, ctx, status); got != 403 && got != 401 {
			t.Errorf("%s: HTTP %d, want 403 or 401", what, got)
		}
		if eval[bool](t, ctx, `!!document.querySelector("#finish, .item, #reviewers")`) {
			t.Errorf("%s: the page shows review content", what)
		}
	}
	shot(t, ctx, "11-blind-review-refused")
	do(t, ctx, "ben's link", chromedp.Navigate(code("code?who=ben&key="+tokens[1])), chromedp.WaitVisible(chromedp.CSS("#finish")))
	if got := eval[int](t, ctx, status); got != 200 {
		t.Errorf("ben's own link: HTTP %d", got)
	}
}

// nothingRan opens each url and checks that no hostile payload ran: no
// window.__pwned, no inline script, event handler or javascript: link in
// the page. Each page's screenshot is named prefix-i.
func nothingRan(t *testing.T, ctx context.Context, urls []string, prefix string) {
	t.Helper()
	const probe = `JSON.stringify({pwned: window.__pwned === undefined ? null : String(window.__pwned),
		inline: document.querySelectorAll("script:not([src])").length,
		handlers: document.querySelectorAll("[onerror],[onload],[onclick]").length,
		js: document.querySelectorAll('a[href^="javascript:"]').length,
		jslink: document.querySelectorAll("#jslink").length})`
	for i, u := range urls {
		do(t, ctx, "open "+u, chromedp.Navigate(u), chromedp.WaitReady(chromedp.CSS("body")), chromedp.Sleep(200*time.Millisecond))
		if got := eval[string](t, ctx, probe); got != `{"pwned":null,"inline":0,"handlers":0,"js":0,"jslink":0}` {
			t.Errorf("%s: %s", u, got)
		}
		shot(t, ctx, fmt.Sprintf("%s-%d", prefix, i))
	}
}

// TestBrowserFramingItem: filter a framing run's items to those that flip,
// open one, and see its four conditions side by side in both arms of the
// run (unmitigated and be-honest), each with its choice, parse status,
// repair and reasoning.
func TestBrowserFramingItem(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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

// TestBrowserFailuresAndDiscordantPair: in the session table, filter to
// failures and open one; then from the report page follow the count of
// discordant pairs to a pair and see what differs between its members.
func TestBrowserFailuresAndDiscordantPair(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
