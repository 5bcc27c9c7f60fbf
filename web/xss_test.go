package web_test

import (
	"bytes"
	"context"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/review"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
	"github.com/buildlab/budge/web"
)

// Hostile model output: every way we know for text to become code, and
// bytes that are not UTF-8. Each payload that ran would set window.__pwned.
const (
	evilText = `<script>window.__pwned='script'</script><img src=x onerror="window.__pwned='img'">` +
		`<a id="jslink" href="javascript:window.__pwned='link'">click me</a><svg onload="window.__pwned='svg'"></svg>` +
		`"><script>window.__pwned='attr'</script>` + "\xff\xfe\xed\xa0\x80 broken"
	// evilJSON is the same inside a JSON string.
	evilJSON = `<script>window.__pwned='script'</script><img src=x onerror=\"window.__pwned='img'\">` +
		`<a id=\"jslink\" href=\"javascript:window.__pwned='link'\">click me</a><svg onload=\"window.__pwned='svg'\"></svg>` +
		`\"><script>window.__pwned='attr'</script>` + "\xff\xfe broken "
)

var explanationRe = regexp.MustCompile(`"explanation"\s*:\s*"`)

// evilRun clones the simulator run with hostile text in every assistant
// explanation, every user message, tool-call arguments and a refusal.
func evilRun(t testing.TB, st *store.Store, src string) string {
	id := src + "-evil"
	cloneRun(t, st, src, id, func(se *store.Session) {
		for i := range se.Messages {
			m := &se.Messages[i]
			switch m.Role {
			case chat.Assistant:
				m.Content = explanationRe.ReplaceAllLiteralString(m.Content, `"explanation": "`+evilJSON)
				if m.Content == "" && len(m.ToolCalls) == 0 {
					m.Refusal = evilText
				}
			case chat.User:
				m.Content += "\n" + evilText
			}
		}
	})
	return id
}

var dangerous = []string{"<script>window", "<img src=x", `href="javascript:`, `onerror="`, "<svg onload", `id="jslink"`}

func checkInert(t *testing.T, where, page string) {
	t.Helper()
	for _, bad := range dangerous {
		if strings.Contains(page, bad) {
			t.Errorf("%s lets %q through as markup", where, bad)
		}
	}
}

// TestHostileOutputIsEscaped checks the served pages and the HTML report
// byte for byte; the browser test shows that nothing runs.
func TestHostileOutputIsEscaped(t *testing.T) {
	t.Parallel()
	st, src := simRun(t)
	id := evilRun(t, st, src)
	ctx := context.Background()
	c := serve(t, st, web.Options{})
	for _, p := range evilPages(t, st, id) {
		if i := strings.Index(p, "&key="); i >= 0 {
			c.get(p, 303) // the reviewer's token moves into a cookie
			p = p[:i]
		}
		page := c.get(p, 200)
		checkInert(t, p, page)
		if !strings.Contains(page, "window.__pwned") {
			t.Errorf("%s does not show the hostile text at all", p)
		}
	}
	res, err := study.LoadPressure(ctx, st, id)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := res.Report().HTML(&b, &report.HTMLExtras{Briefs: briefs(t, res)}); err != nil {
		t.Fatal(err)
	}
	checkInert(t, "HTML report", b.String())
	if !strings.Contains(b.String(), "window.__pwned") {
		t.Error("HTML report shows no explanation")
	}
}

// evilReviewerKey is ana's reviewer token in the review evilPages starts.
const evilReviewerKey = "rv-test-key-for-ana"

// evilPages are the viewer pages that show model output: a session, its
// pair, a masked review page and the report. It starts a review.
func evilPages(t testing.TB, st *store.Store, id string) []string {
	ctx := context.Background()
	res, err := study.LoadPressure(ctx, st, id)
	if err != nil {
		t.Fatal(err)
	}
	var sid string
	for _, o := range outcomesOf(t, res) {
		if o.Branch == "authority" {
			sid = o.ID()
			break
		}
	}
	if _, err := st.GetReview(ctx, id); err != nil {
		if err := st.CreateReview(ctx, store.Review{RunID: id, Reviewers: [2]string{"ana", "ben"}, Items: []store.ReviewItem{{SessionID: sid, Why: "failure"}},
			TokenSHA256: [2]string{review.TokenSHA256(evilReviewerKey), review.TokenSHA256(evilReviewerKey + "-ben")}}); err != nil {
			t.Fatal(err)
		}
	}
	p := strings.Split(sid, "/")
	base := "/runs/" + id
	return []string{
		base + "/session?id=" + url.QueryEscape(sid),
		base + "/pair?key=" + url.QueryEscape(strings.Join([]string{p[0], p[2], p[3], p[4]}, "/")),
		base + "/review/code?who=ana&key=" + evilReviewerKey,
		base + "/report",
	}
}

// hostileSelectionRun is evilRun with hostile text in the selection too,
// which the session table shows.
func hostileSelectionRun(t *testing.T, st *store.Store, src string) string {
	evil := evilRun(t, st, src)
	id := evil + "-sel"
	sel := regexp.MustCompile(`"selection"\s*:\s*"`)
	cloneRun(t, st, evil, id, func(se *store.Session) {
		for i := range se.Messages {
			if m := &se.Messages[i]; m.Role == chat.Assistant {
				m.Content = sel.ReplaceAllLiteralString(m.Content, `"selection": "`+evilJSON)
			}
		}
	})
	return id
}

// hostileViewerPages are the runs list, the session table (plain,
// filtered, sorted by the hostile selections, searched with hostile search
// terms), a session, its pair and the report page with its counts. Each is
// checked byte for byte here; the browser test shows nothing runs.
func hostileViewerPages(t *testing.T, c *client, id string) []string {
	base := "/runs/" + id
	table := c.get(base+"/?sort=first", 200)
	ids := sessionIDs(table)
	if len(ids) == 0 {
		t.Fatal("hostile run's table is empty")
	}
	if !strings.Contains(table, "window.__pwned") {
		t.Error("the table does not show the hostile selections")
	}
	p := strings.Split(ids[0], "/")
	search := base + "/?q=" + url.QueryEscape(`<script>window.__pwned='script'</script>`)
	pages := []string{"/", base + "/", base + "/?failures=1&parse=1", base + "/?sort=first&desc=1", search,
		base + "/?q=" + url.QueryEscape("\"><img src=x onerror=\"window.__pwned='q'\">"),
		base + "/?sort=" + url.QueryEscape("<script>"),
		base + "/session?id=" + url.QueryEscape(ids[0]),
		base + "/pair?key=" + url.QueryEscape(strings.Join([]string{p[0], p[2], p[3], p[4]}, "/")),
		base + "/report"}
	for _, u := range pages {
		want := 200
		if strings.Contains(u, "sort=%3Cscript") {
			want = 400
		}
		checkInert(t, u, c.get(u, want))
	}
	// The search is the database's: it finds the sessions whose user
	// message holds the payload.
	if got := c.get(search, 200); len(sessionIDs(got)) == 0 {
		t.Error("searching the transcripts for the hostile text found nothing")
	}
	return pages
}

func TestHostileViewerPagesEscaped(t *testing.T) {
	t.Parallel()
	st, src := simRun(t)
	id := hostileSelectionRun(t, st, src)
	hostileViewerPages(t, serve(t, st, web.Options{Runs: []string{id}}), id)
}
