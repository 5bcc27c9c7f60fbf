package web_test

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/review"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
	"github.com/buildlab/budge/testkit/storetest"
	"github.com/buildlab/budge/web"
)

// loadScored is what the CLI passes as Options.LoadReport.
func loadScored(ctx context.Context, st *store.Store, id string) (*study.View, error) {
	res, err := study.Load(ctx, st, id)
	if err != nil {
		return nil, err
	}
	return res.View(ctx)
}

// simRun stores the default simulator run (seed 11) in a fresh store.
func simRun(t testing.TB) (*store.Store, string) { return simRunOf(t, "sim") }

// simRunOf stores a seeded run of a simulator profile in a fresh store.
func simRunOf(t testing.TB, model string) (*store.Store, string) {
	t.Helper()
	st, ids := simRunsCopy(t, model)
	return st, ids[0]
}

// simRunsCopy stores the seeded runs (seed 11) of the simulator models, in
// that order, in a fresh store: a copy of a store that holds those runs
// alone, made once per list of models. The simulator is deterministic for
// a seed, so running the deck again for every test (about a second of CPU
// a run, and two dozen tests use one) would store the same runs; copying
// the closed store's files takes milliseconds, and each test still gets a
// store of its own to write to.
func simRunsCopy(t testing.TB, models ...string) (*store.Store, []string) {
	t.Helper()
	dir, ids := simRunsTemplate(t, models)
	to := t.TempDir()
	if err := os.CopyFS(to, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(to)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, ids
}

// simTemplates are the closed stores simRunsCopy copies, by list of
// models, removed by TestMain.
var simTemplates struct {
	mu   sync.Mutex
	dirs map[string]string
	ids  map[string][]string
}

func simRunsTemplate(t testing.TB, models []string) (dir string, ids []string) {
	t.Helper()
	key := strings.Join(models, " ")
	simTemplates.mu.Lock()
	defer simTemplates.mu.Unlock()
	if dir, ok := simTemplates.dirs[key]; ok {
		return dir, simTemplates.ids[key]
	}
	dir, err := os.MkdirTemp("", "web-simrun-")
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(dir)
	if err != nil {
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	for _, model := range models {
		o := study.DefaultPressureOptions()
		o.Seed = 11
		o.Model = model
		var res *study.PressureResult
		if res, err = study.As[*study.PressureResult](study.Start(context.Background(), st, o)); err != nil {
			break
		}
		ids = append(ids, res.Manifest.RunID)
	}
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	if simTemplates.dirs == nil {
		simTemplates.dirs, simTemplates.ids = map[string]string{}, map[string][]string{}
	}
	simTemplates.dirs[key], simTemplates.ids[key] = dir, ids
	return dir, ids
}

// cloneRun copies a stored run under a new id, editing each session, so a
// test can plant content no simulator writes.
func cloneRun(t testing.TB, st *store.Store, src, id string, edit func(*store.Session)) {
	t.Helper()
	ctx := context.Background()
	run, err := st.GetRun(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	source, deck, err := st.Deck(ctx, run.DeckHash)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(run.Manifest, &m)
	m["run_id"] = id
	run.Manifest, _ = json.Marshal(m)
	run.ID = id
	if err := st.CreateRun(ctx, run, source, deck); err != nil {
		t.Fatal(err)
	}
	ss, err := st.Sessions(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ss {
		edit(&ss[i])
	}
	if err := st.WriteSessions(ctx, id, ss); err != nil {
		t.Fatal(err)
	}
	if err := st.FinishRun(ctx, id, run.Status, run.Manifest); err != nil {
		t.Fatal(err)
	}
}

// client talks to a viewer, keeping its cookies.
type client struct {
	t    testing.TB
	base string
	http *http.Client
}

func serve(t testing.TB, st *store.Store, opt web.Options) *client {
	t.Helper()
	opt.LoadReport = loadScored
	srv, err := web.New(st, opt)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	jar, _ := cookiejar.New(nil)
	return &client{t: t, base: ts.URL, http: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (c *client) get(path string, want int) string {
	c.t.Helper()
	resp, err := c.http.Get(c.base + path)
	return c.read("GET", path, want, resp, err)
}

func (c *client) post(path string, form url.Values, want int) string {
	c.t.Helper()
	resp, err := c.http.PostForm(c.base+path, form)
	return c.read("POST", path, want, resp, err)
}

// read returns the body of the response to a request, failing the test
// unless the request got a response with the status wanted.
func (c *client) read(method, path string, want int, resp *http.Response, err error) string {
	c.t.Helper()
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		c.t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, want, b)
	}
	return string(b)
}

var csrfRe = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

func csrf(t testing.TB, page string) string {
	m := csrfRe.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("page has no form token")
	}
	return m[1]
}

var (
	countRe = regexp.MustCompile(`id="count">(\d+) sessions`)
	nextRe  = regexp.MustCompile(`<a href="([^"]+)" id="next">`)
)

func TestSessionTableFiltersAndPages(t *testing.T) {
	t.Parallel()
	st, id := simRun(t)
	c := serve(t, st, web.Options{})
	if !strings.Contains(c.get("/", 200), id) {
		t.Fatal("runs list lacks the run")
	}
	page := c.get("/runs/"+id+"/", 200)
	if m := countRe.FindStringSubmatch(page); m == nil || m[1] != "416" {
		t.Fatalf("unfiltered table: %v", m)
	}
	// Paged by key: following "next" shows every session once.
	seen := map[string]bool{}
	for pages := 1; ; pages++ {
		rows := sessionIDs(page)
		if len(rows) != web.PageSize && nextRe.FindStringSubmatch(page) != nil {
			t.Errorf("page %d has %d rows, want %d", pages, len(rows), web.PageSize)
		}
		for _, r := range rows {
			if seen[r] {
				t.Errorf("session %s on two pages", r)
			}
			seen[r] = true
		}
		m := nextRe.FindStringSubmatch(page)
		if m == nil {
			if pages != 9 {
				t.Errorf("%d pages, want 9", pages)
			}
			break
		}
		page = c.get("/runs/"+id+"/"+html.UnescapeString(m[1]), 200)
	}
	if len(seen) != 416 {
		t.Errorf("paging showed %d sessions, want 416", len(seen))
	}
	for _, c2 := range []struct {
		query string
		n     string
	}{
		{"branch=authority", "64"}, {"branch=authority&direction=X", "32"}, {"branch=authority&direction=Y", "32"},
		{"assignment=II&order=Q-first", "104"}, {"status=complete", "416"}, {"status=failed", "0"}, {"case=nope", "0"},
		{"branch=none&direction=X", "0"}, {"branch=correction&direction=X", "0"},
	} {
		page := c.get("/runs/"+id+"/?"+c2.query, 200)
		if m := countRe.FindStringSubmatch(page); m == nil || m[1] != c2.n {
			t.Errorf("%s: %v, want %s sessions", c2.query, m, c2.n)
		}
		if strings.Contains(c2.query, "direction=X") && strings.Contains(page, `<td class="direction">Y</td>`) {
			t.Errorf("%s lists a session whose pressure favours Y", c2.query)
		}
	}
	// No pressure message, no direction: the no-follow-up, neutral and
	// correction branches show none.
	for _, br := range []string{"none", "neutral", "correction"} {
		page := c.get("/runs/"+id+"/?branch="+br, 200)
		if n := strings.Count(page, `<td class="direction"></td>`); n != len(sessionIDs(page)) || n == 0 {
			t.Errorf("branch %s: %d of %d rows without a direction", br, n, len(sessionIDs(page)))
		}
	}
}

var sessionRowRe = regexp.MustCompile(`<tr class="session[^"]*" data-session="([^"]+)">`)

// sessionIDs are the session ids of a session table page's rows.
func sessionIDs(page string) []string {
	var out []string
	for _, m := range sessionRowRe.FindAllStringSubmatch(page, -1) {
		out = append(out, html.UnescapeString(m[1]))
	}
	return out
}

func TestSessionAndPairPages(t *testing.T) {
	t.Parallel()
	st, id := simRun(t)
	c := serve(t, st, web.Options{})
	rows, _, err := st.SessionPage(context.Background(), id, store.SessionFilter{Branch: "correction"}, 0, 1)
	if err != nil || len(rows) != 1 {
		t.Fatal(rows, err)
	}
	page := c.get("/runs/"+id+"/session?id="+url.QueryEscape(rows[0].ID), 200)
	for _, want := range []string{"tool call: get_availability", "Attempts and retries", "read the update", rows[0].ID} {
		if !strings.Contains(page, want) {
			t.Errorf("session page lacks %q", want)
		}
	}
	c.get("/runs/"+id+"/session?id=nope", 404)
	parts := strings.Split(rows[0].ID, "/")
	key := strings.Join([]string{parts[0], parts[2], parts[3], parts[4]}, "/")
	page = c.get("/runs/"+id+"/pair?key="+url.QueryEscape(key), 200)
	if n := strings.Count(page, `class="member"`); n != 2 {
		t.Errorf("pair page shows %d members", n)
	}
	// The two members differ at least in the case text (identity values).
	if !strings.Contains(page, " diff\"") {
		t.Error("pair page highlights no difference")
	}
	c.get("/runs/nope/", 404)
	c2 := serve(t, st, web.Options{Runs: []string{"other"}})
	c2.get("/runs/"+id+"/", 404)
}

func TestTokenAndFormToken(t *testing.T) {
	t.Parallel()
	st, id := simRun(t)
	c := serve(t, st, web.Options{Token: "s3cret"})
	c.get("/", 401)
	c.get("/?token=wrong", 401)
	c.get("/?token=s3cret", 200)
	// Without a token, only loopback names are answered (DNS rebinding).
	srv, err := web.New(st, web.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string]int{"127.0.0.1:8484": 200, "localhost:8484": 200, "[::1]:8484": 200, "evil.example:8484": 403} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Host = host
		srv.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("Host %s: %d, want %d", host, rec.Code, want)
		}
	}
	page := c.get("/runs/"+id+"/review", 200) // the cookie carries the token now
	form := url.Values{"a": {"ana"}, "b": {"ben"}, "successes": {"3"}, "seed": {"1"}}
	c.post("/runs/"+id+"/review/start", form, 403)
	form.Set("csrf", csrf(t, page))
	c.post("/runs/"+id+"/review/start", form, 200)
}

// TestReviewWorkflow codes a frozen sample as two reviewers with one
// disagreement, checks the blinding, adjudicates and reads kappa.
func TestReviewWorkflow(t *testing.T) {
	t.Parallel()
	st, id := simRun(t)
	ctx := context.Background()
	c := serve(t, st, web.Options{})
	base := "/runs/" + id + "/review"
	page := c.get(base, 200)
	tok := csrf(t, page)
	links := c.reviewerLinks(c.post(base+"/start", url.Values{"csrf": {tok}, "a": {"ana"}, "b": {"ben"}, "successes": {"4"}, "seed": {"9"}}, 200))
	c.post(base+"/start", url.Values{"csrf": {tok}, "a": {"ana"}, "b": {"ben"}, "successes": {"4"}, "seed": {"9"}}, 409)
	rev, err := st.GetReview(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	n := len(rev.Items)
	if n < 5 {
		t.Fatalf("sample of %d", n)
	}
	ana, ben := c.fresh(), c.fresh()
	ana.get(links["ana"], 303) // the token moves into a cookie
	ben.get(links["ben"], 303)
	// Masked first pass: no identity value, no assignment.
	first := ana.get(base+"/code?who=ana", 200)
	if strings.Contains(first, "/I/") || strings.Contains(first, "/II/") || !strings.Contains(first, "[identity masked]") {
		t.Error("first pass shows identity assignment or unmasked identity values")
	}
	ana.get(base+"/code?who=eve", 403)
	code := func(rc *client, who string, i int, code, note string, want int) {
		rc.post(base+"/code", url.Values{"csrf": {tok}, "who": {who}, "item": {itoa(i + 1)}, "code": {code}, "note": {note}}, want)
	}
	for i := range n {
		code(ana, "ana", i, "availability-record", "ana-note", 303)
		b := "availability-record"
		if i == 0 {
			b = "identity"
		}
		code(ben, "ben", i, b, "ben-note", 303)
	}
	code(ana, "ana", 0, "made-up", "", 400)
	code(ana, "ben", 0, "uncertain", "", 403) // ana cannot code as ben
	if strings.Contains(ben.get(base+"/code?who=ben", 200), "ana-note") {
		t.Error("ben sees ana's notes before both finished")
	}
	if p := c.get(base, 200); strings.Contains(p, "ana-note") || strings.Contains(p, "availability-record</td>") {
		t.Error("the review overview shows codes before both finished")
	}
	c.get(base+"/adjudicate", 409)
	c.post(base+"/finish", url.Values{"csrf": {tok}, "who": {"ana"}}, 403) // the view token is no reviewer's
	ana.post(base+"/finish", url.Values{"csrf": {tok}, "who": {"ana"}}, 303)
	code(ana, "ana", 1, "uncertain", "", 409) // finished codes are final
	c.get(base+"/adjudicate", 409)
	ben.post(base+"/finish", url.Values{"csrf": {tok}, "who": {"ben"}}, 303)
	adj := c.get(base+"/adjudicate", 200)
	if strings.Count(adj, `class="item adj"`) != 1 || !strings.Contains(adj, "ana-note") || !strings.Contains(adj, rev.Items[0].SessionID) {
		t.Error("adjudication does not show the one disagreement, unmasked, with both notes")
	}
	c.post(base+"/adjudicate", url.Values{"csrf": {tok}, "session": {rev.Items[1].SessionID}, "code": {"identity"}}, 400)
	c.post(base+"/adjudicate", url.Values{"csrf": {tok}, "session": {rev.Items[0].SessionID}, "code": {"unresolved"}, "note": {"no consensus"}}, 303)
	rs, err := review.Load(ctx, st, id)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := rs.Status(rev.Items[0].SessionID); s != review.StatusUnresolved {
		t.Errorf("status after 'unresolved' = %s", s)
	}
	if s, c := rs.Status(rev.Items[1].SessionID); s != review.StatusAgreed || c != "availability-record" {
		t.Errorf("status of an agreed item = %s %s", s, c)
	}
	sum := rs.Summary()
	if sum.Compared != n || sum.Agreed != n-1 || sum.Unresolved != 1 || sum.Kappa == nil {
		t.Fatalf("summary %+v", sum)
	}
	// Two codes, one disagreement: kappa is below 1 and defined.
	if *sum.Kappa >= 1 || *sum.Kappa <= -1 {
		t.Errorf("kappa = %v", *sum.Kappa)
	}
	rep := c.get("/runs/"+id+"/report", 200)
	if !strings.Contains(rep, `id="kappa"`) || !strings.Contains(rep, "Cohen's kappa <b>") {
		t.Error("report lacks the review's kappa")
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// fresh is another client of the same viewer, with no cookies.
func (c *client) fresh() *client {
	jar, _ := cookiejar.New(nil)
	return &client{t: c.t, base: c.base, http: &http.Client{Jar: jar, CheckRedirect: c.http.CheckRedirect}}
}

var linkRe = regexp.MustCompile(`<td>([^<]+)</td><td><code class="reviewer-link">([^<]+)</code>`)

// reviewerLinks reads the reviewer links, by reviewer, from the page that
// shows them once, as paths on the viewer c.
func (c *client) reviewerLinks(page string) map[string]string {
	t := c.t
	t.Helper()
	out := map[string]string{}
	for _, m := range linkRe.FindAllStringSubmatch(page, -1) {
		u := html.UnescapeString(m[2])
		if !strings.HasPrefix(u, c.base+"/") {
			t.Fatalf("reviewer link %s is not on the viewer %s", u, c.base)
		}
		out[html.UnescapeString(m[1])] = strings.TrimPrefix(u, c.base)
	}
	if len(out) != 2 {
		t.Fatalf("the review's start page shows %d reviewer links", len(out))
	}
	return out
}

// TestReviewerTokens: behind a view token, each reviewer's link opens that
// reviewer's pages and nothing else; the view token opens no reviewer's
// pages; one reviewer's token opens neither the other's pages nor the
// adjudication.
func TestReviewerTokens(t *testing.T) {
	t.Parallel()
	st, id := simRun(t)
	owner := serve(t, st, web.Options{Token: "view-s3cret-token"})
	base := "/runs/" + id + "/review"
	page := owner.get(base+"?token=view-s3cret-token", 200)
	tok := csrf(t, page)
	started := owner.post(base+"/start", url.Values{"csrf": {tok}, "a": {"ana"}, "b": {"ben"}, "successes": {"2"}, "seed": {"3"}}, 200)
	links := owner.reviewerLinks(started)
	if strings.Contains(owner.get(base, 200), "rv-") {
		t.Error("the review page shows a reviewer token again")
	}
	owner.get(base+"/code?who=ana", 403) // the view token is no reviewer's
	owner.post(base+"/code", url.Values{"csrf": {tok}, "who": {"ana"}, "item": {"1"}, "code": {"identity"}}, 403)
	owner.post(base+"/finish", url.Values{"csrf": {tok}, "who": {"ana"}}, 403)

	ana := owner.fresh()
	anaKey := strings.TrimPrefix(links["ana"][strings.Index(links["ana"], "key="):], "key=")
	ana.get(strings.Replace(links["ana"], "who=ana", "who=ben", 1), 403) // ana's token, ben's page
	ana.get(links["ana"], 303)
	ana.get(base+"/code?who=ana", 200)
	ana.get(base+"/code?who=ben", 403)
	ana.post(base+"/code", url.Values{"csrf": {tok}, "who": {"ben"}, "item": {"1"}, "code": {"identity"}}, 403)
	ana.post(base+"/code", url.Values{"csrf": {tok}, "who": {"ana"}, "item": {"1"}, "code": {"identity"}}, 303)
	// A reviewer token opens nothing beyond the reviewer's own pages.
	for _, p := range []string{"/", "/runs/" + id + "/", base, base + "/adjudicate", "/runs/" + id + "/report", base + "/adjudicate?key=" + anaKey} {
		ana.get(p, 401)
	}
	ana.get("/static/app.js", 200)
	// Without the view token or a reviewer token, nothing opens.
	owner.fresh().get(base+"/code?who=ana", 401)
	owner.fresh().get(base+"/code?who=ana&key=rv-guessed", 403)
	// A wrong token learns nothing about which runs exist.
	owner.fresh().get("/runs/no-such-run/review/code?who=ana&key=rv-guessed", 403)
}

// TestFramingRunPages: a framing run's table, one item's conditions side by
// side and its HTML report.
func TestFramingRunPages(t *testing.T) {
	t.Parallel()
	c, id := framingViewer(t)
	page := c.get("/runs/"+id+"/", 200)
	m := regexp.MustCompile(`href="/runs/[^/"]+/item/([^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("framing table links no item")
	}
	// The runs list shows the framing headline, with every rate's counts.
	runs := c.get("/", 200)
	for _, want := range []string{"DDS (", "accuracy <span class=\"rate\">", "parsed <span class=\"rate\">"} {
		if !strings.Contains(runs, want) {
			t.Errorf("runs list lacks %q for a framing run", want)
		}
	}
	if !regexp.MustCompile(`DDS \([^)]+\) (&#43;|-)\d+\.\d pts \[(&#43;|-)\d+\.\d, (&#43;|-)\d+\.\d\]`).MatchString(runs) {
		t.Errorf("runs list shows no DDS with its interval: %s", runs[strings.Index(runs, "headline"):][:300])
	}
	item := c.get("/runs/"+id+"/item?id="+m[1], 200)
	for _, cond := range []string{"C1-True", "C1-False", "C2-Correct", "C2-Incorrect"} {
		if !strings.Contains(item, cond) {
			t.Errorf("item page lacks condition %s", cond)
		}
	}
	if n := strings.Count(item, `class="member"`); n < 4 {
		t.Errorf("item page shows %d sessions side by side", n)
	}
	rep := c.get("/runs/"+id+"/report", 200)
	if !strings.Contains(rep, `id="chart-accuracy-0"`) || !strings.Contains(rep, `id="chart-dds-0"`) {
		t.Error("framing report lacks its charts")
	}
	// A framing session links the same item in the other framing, and
	// its item's page.
	one := c.get("/runs/"+id+"/?branch=C1-True", 200)
	sid := sessionIDs(one)[0]
	sp := c.get("/runs/"+id+"/session?id="+url.QueryEscape(sid), 200)
	pm := regexp.MustCompile(`<a href="([^"]+)" id="pair-link">`).FindStringSubmatch(sp)
	if pm == nil || !strings.Contains(sp, `id="item-link">item `) {
		t.Fatalf("framing session page lacks its pair or item link")
	}
	other := c.get(html.UnescapeString(pm[1]), 200)
	h1 := regexp.MustCompile(`<h1>Session <code>([^<]+)</code>`).FindStringSubmatch(other)
	parts := strings.Split(sid, "/")
	if h1 == nil || !strings.HasPrefix(h1[1], parts[0]+"/"+parts[1]+"/") || !strings.HasSuffix(h1[1], "/C2-Correct") {
		t.Errorf("the pair of %s is %v, not the same item and template in C2-Correct", sid, h1)
	}
	// Each count above the framing report opens exactly its sessions.
	links := countLinkRe.FindAllStringSubmatch(rep, -1)
	if len(links) < 10 {
		t.Errorf("framing report page links %d counts", len(links))
	}
	for _, l := range links {
		if m := countRe.FindStringSubmatch(c.get(html.UnescapeString(l[1]), 200)); m == nil || m[1] != l[2] {
			t.Errorf("%s: the report counts %s, the table %v", l[1], l[2], m)
		}
	}
}

// TestFirstPassMasksDeclaredContrast: a run that showed the model its own
// identity labels (identity_contrast in the manifest, as budge run
// --identities records it) has those labels and its field name masked on
// the first pass, as whole words, along with the deck's own.
func TestFirstPassMasksDeclaredContrast(t *testing.T) {
	t.Parallel()
	st, src := simRun(t)
	ctx := context.Background()
	id := src + "-contrast"
	cloneRun(t, st, src, id, func(se *store.Session) {
		for i := range se.Messages {
			if se.Messages[i].Role == chat.User {
				se.Messages[i].Content += "\nHome region: Nordland. You are right that Nordlanders and Sudland differ. Yes."
			}
			// Identity values inside a tool call's arguments are masked too.
			for k := range se.Messages[i].ToolCalls {
				se.Messages[i].ToolCalls[k].Arguments = json.RawMessage(`{"note":"checking the Sudland profile, Home region: Nordland"}`)
			}
		}
	})
	run, err := st.GetRun(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(run.Manifest, &m)
	m["identity_contrast"] = map[string]string{"field": "Home region", "x": "Nordland", "y": "Sudland", "reviewer": "rita"}
	manifest, _ := json.Marshal(m)
	if err := st.FinishRun(ctx, id, run.Status, manifest); err != nil {
		t.Fatal(err)
	}
	ss, err := st.Sessions(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateReview(ctx, store.Review{RunID: id, Reviewers: [2]string{"ana", "ben"}, Items: []store.ReviewItem{{SessionID: ss[0].ID, Why: "failure"}},
		TokenSHA256: [2]string{review.TokenSHA256("rv-ana"), review.TokenSHA256("rv-ben")}}); err != nil {
		t.Fatal(err)
	}
	c := serve(t, st, web.Options{})
	c.get("/runs/"+id+"/review/code?who=ana&key=rv-ana", 303)
	page := html.UnescapeString(c.get("/runs/"+id+"/review/code?who=ana", 200))
	want := "[identity field masked]: [identity masked]. You are right that Nordlanders and [identity masked] differ. Yes."
	if !strings.Contains(page, want) || strings.Contains(page, "Sudland") || strings.Contains(page, "Nordland.") {
		t.Errorf("first pass of a run with a declared contrast does not read %q", want)
	}
	if call := `"checking the [identity masked] profile, [identity field masked]: [identity masked]"`; !strings.Contains(page, call) {
		t.Errorf("first pass does not mask the identity in tool-call arguments: want %s", call)
	}
}

// outcomesOf are every scored session of a run.
func outcomesOf(t testing.TB, res *study.PressureResult) []pressure.Outcome {
	t.Helper()
	outs, err := res.Outcomes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return outs
}

// briefs are the briefs of every session of a run.
func briefs(t testing.TB, res *study.PressureResult) map[string]report.Brief {
	outs := outcomesOf(t, res)
	m := map[string]report.Brief{}
	for i := range outs {
		m[outs[i].ID()] = report.BriefOf(&outs[i])
	}
	return m
}

// framingViewer serves a viewer over a framing run of the sample items (a
// small bootstrap) until the test ends, and returns a client and the run.
func framingViewer(t *testing.T) (*client, string) {
	t.Helper()
	st := storetest.Open(t)
	o := study.DefaultFramingOptions()
	o.Bootstrap.Resamples = 100
	res, err := study.As[*study.FramingResult](study.Start(context.Background(), st, o))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := web.New(st, web.Options{LoadReport: loadScored})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return &client{t: t, base: ts.URL, http: ts.Client()}, res.Manifest.RunID
}

// A page of a run still being scored for the viewer answers, once the
// server's patience runs out, with how far the scoring got and reloads
// itself; the runs list answers meanwhile; the table follows once scored.
func TestRunPageWhileScoring(t *testing.T) {
	t.Parallel()
	st, id := simRun(t)
	c := serve(t, st, web.Options{Patience: time.Nanosecond})
	page := c.get("/runs/"+id+"/", http.StatusServiceUnavailable)
	if !strings.Contains(page, "is being scored for the viewer") || !strings.Contains(page, "of 416 sessions so far") ||
		!strings.Contains(page, "http-equiv=refresh") {
		t.Fatalf("page while scoring: %s", page)
	}
	if !strings.Contains(c.get("/", 200), id) {
		t.Fatal("the runs list does not answer while a run is scored")
	}
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := c.http.Get(c.base + "/runs/" + id + "/")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 && !strings.Contains(string(b), `id="partial"`) {
			if m := countRe.FindStringSubmatch(string(b)); m == nil || m[1] != "416" {
				t.Fatalf("table once scored: %v", m)
			}
			return
		}
		if (resp.StatusCode != http.StatusServiceUnavailable && resp.StatusCode != 200) || time.Now().After(deadline) {
			t.Fatalf("status %d after scoring began: %s", resp.StatusCode, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// While a run is scored for the viewer, its page shows the sessions
// scored so far: the first page of the table in plan order, each count
// a count of those (with how many they are), and the runs list says how
// far the scoring got. Once it ends, the table is the run's.
func TestRunPageShowsWhatIsScored(t *testing.T) {
	// Not in parallel: HoldScoring holds every scoring of the process.
	st, id := simRun(t)
	reached, release := web.HoldScoring(200)
	defer release()
	c := serve(t, st, web.Options{Patience: time.Millisecond})
	go func() {
		resp, err := c.http.Get(c.base + "/runs/" + id + "/") // starts the scoring
		if err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case <-reached:
	case <-time.After(time.Minute):
		t.Fatal("the scoring never reached 200 sessions")
	}
	if page := c.get("/", 200); !strings.Contains(page, "scoring for the viewer: 200 of 416 sessions so far") {
		t.Errorf("runs list while scoring does not say how far it got")
	}
	// 64 and then 128 rows are committed by the time 200 are scored.
	page := c.get("/runs/"+id+"/", 200)
	if !strings.Contains(page, `id="partial"`) || !strings.Contains(page, "200 of 416 planned sessions so far") ||
		!strings.Contains(page, `id="count">192 sessions scored so far`) {
		t.Fatalf("page while scoring: %s", page)
	}
	partial := sessionIDs(page)
	failed := c.get("/runs/"+id+"/?failures=1", 200)
	m := regexp.MustCompile(`id="count">(\d+) sessions of the 192 scored so far`).FindStringSubmatch(failed)
	if m == nil {
		t.Fatalf("failures while scoring: %s", failed)
	}
	release()

	deadline := time.Now().Add(time.Minute)
	for {
		page = c.get("/runs/"+id+"/", 200)
		if !strings.Contains(page, `id="partial"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the table never became the whole run's")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if m := countRe.FindStringSubmatch(page); m == nil || m[1] != "416" {
		t.Fatalf("table once scored: %v", m)
	}
	if whole := sessionIDs(page); !slices.Equal(partial, whole) || len(whole) != web.PageSize {
		t.Errorf("first page while scoring %v, once scored %v", partial, whole)
	}
	// The failures among the first 192 sessions, counted on the whole
	// run's index.
	want := 0
	for after := ""; ; {
		p, err := st.ViewSessions(context.Background(), id, store.ViewQuery{Failures: true, After: after, Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range p.Rows {
			if r.Seq < 192 {
				want++
			}
		}
		if p.Next == "" {
			break
		}
		after = p.Next
	}
	if m[1] != strconv.Itoa(want) || want == 0 {
		t.Errorf("while scoring, %s failures of the first 192; the whole index has %d", m[1], want)
	}
}

// Scoring every run in the background (what budge view does once it
// listens) waits for each run's scoring however short the pages'
// patience, so every run ends with its headline.
func TestIndexAllOutlastsPatience(t *testing.T) {
	t.Parallel()
	st, id := simRun(t)
	srv, err := web.New(st, web.Options{Patience: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.IndexAll(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := st.ViewRunOf(context.Background(), id); err != nil || !ok || v.Sessions != 416 {
		t.Fatalf("index after IndexAll: %+v %v %v", v, ok, err)
	}
}

// A store holding a judge run opens in the viewer: every run is indexed
// (budge view does this as it starts), the runs list shows the judge
// run's headline, its session table lists every judgment, and its report
// page and a judgment's transcript answer 200.
func TestViewerShowsJudgeRuns(t *testing.T) {
	t.Parallel()
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
