package web_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.cancel != nil {
		shared.cancel()
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
