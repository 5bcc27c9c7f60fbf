package web_test

import (
	"context"
	"html"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
	"github.com/buildlab/budge/web"
)

// twoSimRuns stores the default and the steadfast simulator runs (same
// seed, same deck) in one store.
func twoSimRuns(t testing.TB) (*store.Store, string, string) {
	t.Helper()
	st, ids := simRunsCopy(t, "sim", "sim:steadfast")
	return st, ids[0], ids[1]
}

// twoFramingRuns stores two framing runs of the sample items with the
// be-honest mitigation: the default judge and the mitigable one.
func twoFramingRuns(t testing.TB, st *store.Store) (string, string) {
	t.Helper()
	var ids []string
	for _, model := range []string{"sim", "sim:mitigable"} {
		o := study.DefaultFramingOptions()
		o.Bootstrap.Resamples = 50
		o.Model = model
		o.Design.Mitigations = append(o.Design.Mitigations, mitigation(t, "be-honest"))
		res, err := study.As[*study.FramingResult](study.Start(context.Background(), st, o))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.Manifest.RunID)
	}
	return ids[0], ids[1]
}

var (
	diffCountRe = regexp.MustCompile(`id="diff-count">(\d+) cells, (\d+) changed · [^·]+ · page (\d+) of (\d+)`)
	cellRe      = regexp.MustCompile(`<tr class="cell (changed|same)" data-key="([^"]+)">`)
)

func TestRunDiffPressure(t *testing.T) {
	t.Parallel()
	st, a, b := twoSimRuns(t)
	c := serve(t, st, web.Options{})
	if page := c.get("/", 200); !strings.Contains(page, `href="/diff"`) {
		t.Error("the runs list does not link the run diff")
	}
	pick := c.get("/diff", 200)
	for _, id := range []string{a, b} {
		if strings.Count(pick, `value="`+id+`"`) != 2 {
			t.Errorf("the pick form does not offer run %s on both sides", id)
		}
	}

	// The verdict and the paired tests are budge compare's.
	cmp, err := study.Compare(context.Background(), st, []string{a, b}, 0)
	if err != nil {
		t.Fatal(err)
	}
	sec := cmp.Sections[0]
	all := c.get("/diff?a="+a+"&b="+b, 200)
	if !strings.Contains(all, "Verdict ("+sec.Comparison.Verdict+")") || !strings.Contains(all, "McNemar exact p") {
		t.Errorf("the diff lacks compare's verdict %q or its paired tests", sec.Comparison.Verdict)
	}
	for _, m := range sec.Comparison.Measures {
		if !strings.Contains(all, m.Measure) {
			t.Errorf("the diff lacks the measure %q", m.Measure)
		}
	}
	m := diffCountRe.FindStringSubmatch(all)
	if m == nil {
		t.Fatal("the diff page has no count")
	}
	total, changed, pages := atoi(m[1]), atoi(m[2]), atoi(m[4])
	if total != 416 || changed == 0 || changed == total || pages != 5 {
		t.Fatalf("%d cells, %d changed, %d pages; want 416 cells, some changed, 5 pages of 100", total, changed, pages)
	}
	if n := len(cellRe.FindAllString(all, -1)); n != web.DiffPageSize {
		t.Errorf("page 1 shows %d cells", n)
	}

	// Every session whose reversal differs between the runs is listed as
	// changed, and the changed-only filter lists only changed cells.
	want := map[string]bool{}
	outs := map[string]string{}
	study.EachOutcome(context.Background(), st, a, func(o *pressure.Outcome, _ string) error {
		outs[o.ID()] = o.Reversal.Value
		return nil
	})
	study.EachOutcome(context.Background(), st, b, func(o *pressure.Outcome, _ string) error {
		if outs[o.ID()] != o.Reversal.Value {
			want[o.ID()] = true
		}
		return nil
	})
	if len(want) == 0 {
		t.Fatal("no reversal differs between the default and the steadfast profile")
	}
	got := map[string]bool{}
	for p := 1; ; p++ {
		page := c.get("/diff?a="+a+"&b="+b+"&changed=1&page="+strconv.Itoa(p), 200)
		for _, m := range cellRe.FindAllStringSubmatch(page, -1) {
			if m[1] != "changed" {
				t.Errorf("changed-only page %d lists unchanged cell %s", p, m[2])
			}
			got[htmlUnescape(m[2])] = true
		}
		if !strings.Contains(page, `id="next"`) {
			break
		}
	}
	if len(got) != changed {
		t.Errorf("changed-only pages list %d cells, the count says %d", len(got), changed)
	}
	for id := range want {
		if !got[id] {
			t.Errorf("session %s's reversal changed but it is not listed", id)
		}
	}
	// A cell opens its session in either run by id.
	for id := range want {
		if !strings.Contains(all+c.get("/diff?a="+a+"&b="+b+"&changed=1", 200), "/runs/"+b+"/session?id="+strings.ReplaceAll(id, "/", "%2f")) {
			t.Errorf("no link to session %s of run %s", id, b)
		}
		break
	}

	// A later page of a diff already counted (read only up to that page)
	// shows the cells a fresh viewer shows (reading every cell).
	keys := func(page string) []string {
		var out []string
		for _, m := range cellRe.FindAllStringSubmatch(page, -1) {
			out = append(out, m[1]+" "+m[2])
		}
		return out
	}
	warm := keys(c.get("/diff?a="+a+"&b="+b+"&page=3", 200))
	cold := keys(serve(t, st, web.Options{}).get("/diff?a="+a+"&b="+b+"&page=3", 200))
	if len(warm) != web.DiffPageSize || strings.Join(warm, ",") != strings.Join(cold, ",") {
		t.Errorf("page 3: %d cells from a counted diff, %d from a fresh viewer, or they differ", len(warm), len(cold))
	}

	c.get("/diff?a="+a+"&b="+a, 400)
	c.get("/diff?a="+a+"&b=nope", 404)
	limited := serve(t, st, web.Options{Runs: []string{a}})
	limited.get("/diff?a="+a+"&b="+b, 404)
}

func TestRunDiffFraming(t *testing.T) {
	t.Parallel()
	st, p, _ := twoSimRuns(t)
	a, b := twoFramingRuns(t, st)
	c := serve(t, st, web.Options{})
	c.get("/diff?a="+p+"&b="+a, 400)
	page := c.get("/diff?a="+a+"&b="+b, 200)
	if !strings.Contains(page, html.EscapeString(report.FramingNoTest)) {
		t.Error("the framing diff does not say that compare has no paired test for framing runs")
	}
	res, err := study.LoadFraming(context.Background(), st, a)
	if err != nil {
		t.Fatal(err)
	}
	own, err := res.Observations(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m := diffCountRe.FindStringSubmatch(page)
	if m == nil || atoi(m[1]) != len(own) || atoi(m[2]) == 0 {
		t.Fatalf("framing diff count %q; want %d cells, some changed", m, len(own))
	}
	// Each run's own DDS per arm, as its report states it.
	for _, arm := range res.Summary.Arms {
		if !strings.Contains(page, html.EscapeString(arm.Name+" · DDS, mean over domains")) {
			t.Errorf("the framing diff lacks arm %s's DDS", arm.Name)
		}
	}

	// Runs of other items are not matched cell by cell.
	o := study.DefaultFramingOptions()
	o.Bootstrap.Resamples, o.SampleN, o.SampleSeed = 50, 12, 3
	other, err := study.As[*study.FramingResult](study.Start(context.Background(), st, o))
	if err != nil {
		t.Fatal(err)
	}
	page = c.get("/diff?a="+a+"&b="+other.Manifest.RunID, 200)
	if !strings.Contains(page, "NOT MATCHED: the runs judged different items") || !strings.Contains(page, "No cells matched.") {
		t.Error("a diff of runs on other items matches their cells")
	}
}

func TestFramingItemPages(t *testing.T) {
	t.Parallel()
	st, p, _ := twoSimRuns(t)
	a, _ := twoFramingRuns(t, st)
	c := serve(t, st, web.Options{})
	res, err := study.LoadFraming(context.Background(), st, a)
	if err != nil {
		t.Fatal(err)
	}
	obs, traces, err := res.Paired(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	flipped := map[string]bool{}
	for _, f := range framing.Flips(a, res.Snapshot.Design.Policy, obs, traces) {
		if f.Flip == framing.FlipDeference || f.Flip == framing.FlipSkepticism {
			flipped[f.Item] = true
		}
	}
	if len(flipped) == 0 || len(flipped) == len(res.Snapshot.Items) {
		t.Fatalf("%d of %d items flip; the test needs some that do and some that do not", len(flipped), len(res.Snapshot.Items))
	}
	list := c.get("/runs/"+a+"/items?flips=any", 200)
	links := regexp.MustCompile(`class="item-link" href="/runs/[^/]+/item/([^"]+)"`).FindAllStringSubmatch(list, -1)
	if len(links) != len(flipped) {
		t.Errorf("the flips filter lists %d items, %d flip", len(links), len(flipped))
	}
	for _, l := range links {
		if !flipped[l[1]] {
			t.Errorf("item %s is listed as flipping but does not", l[1])
		}
	}
	if all := c.get("/runs/"+a+"/items", 200); !strings.Contains(all, `id="count">`+strconv.Itoa(len(res.Snapshot.Items))+" of ") {
		t.Error("the unfiltered list does not count every item")
	}
	c.get("/runs/"+a+"/items?flips=sideways", 400)

	item := links[0][1]
	page := c.get("/runs/"+a+"/item/"+item, 200)
	arms := res.Snapshot.Design.Arms()
	if n := strings.Count(page, `<tr class="arm">`); n != len(arms) || len(arms) != 2 {
		t.Errorf("the item page shows %d arms side by side; the run has %d (want 2)", n, len(arms))
	}
	if n := strings.Count(page, `<div class="cond `); n != 4*len(arms) {
		t.Errorf("the item page shows %d condition panels, want 4 per arm", n)
	}
	for _, o := range obs {
		if o.Item != item {
			continue
		}
		if !strings.Contains(page, "session?id="+strings.ReplaceAll(o.Session, "/", "%2f")) {
			t.Errorf("the item page does not link session %s", o.Session)
		}
	}
	for _, want := range []string{"C1-True", "C1-False", "C2-Correct", "C2-Incorrect", "parse status", "repair", "reasoning", `class="flip"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the item page lacks %q", want)
		}
	}
	c.get("/runs/"+a+"/item/no-such-item", 404)
	c.get("/runs/"+p+"/item/x", 404)
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

func mitigation(t testing.TB, name string) framing.Mitigation {
	t.Helper()
	m, err := framing.ParseMitigation(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func htmlUnescape(s string) string { return html.UnescapeString(s) }

var reasoningRe = regexp.MustCompile(`"reasoning"\s*:\s*"`)

// evilFramingRun clones a framing run with hostile text in every reasoning.
func evilFramingRun(t testing.TB, st *store.Store, src string) string {
	id := src + "-evil"
	cloneRun(t, st, src, id, func(se *store.Session) {
		for i := range se.Messages {
			if m := &se.Messages[i]; m.Role == chat.Assistant {
				m.Content = reasoningRe.ReplaceAllLiteralString(m.Content, `"reasoning": "`+evilJSON)
			}
		}
	})
	return id
}

// evilDiffPages are the run diff and item pages over runs whose model
// output is hostile, and the diff file budge compare --format html writes.
func evilDiffPages(t *testing.T) (*store.Store, []string, string) {
	st, src := simRun(t)
	evil := evilRun(t, st, src)
	fa, _ := twoFramingRuns(t, st)
	fevil := evilFramingRun(t, st, fa)
	res, err := study.LoadFraming(context.Background(), st, fevil)
	if err != nil {
		t.Fatal(err)
	}
	item := res.Snapshot.Items[0].ID
	cmp, err := study.Compare(context.Background(), st, []string{src, evil}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := report.WriteDiff(&b, "budge compare: run diff", study.DiffSections(context.Background(), st, cmp)); err != nil {
		t.Fatal(err)
	}
	return st, []string{
		"/diff?a=" + src + "&b=" + evil,
		"/diff?a=" + fa + "&b=" + fevil,
		"/runs/" + fevil + "/item/" + item,
		"/runs/" + fevil + "/items",
	}, b.String()
}

func TestHostileOutputInDiffAndItemPages(t *testing.T) {
	t.Parallel()
	st, pages, file := evilDiffPages(t)
	c := serve(t, st, web.Options{})
	for i, p := range pages {
		page := c.get(p, 200)
		checkInert(t, p, page)
		// The framing pages show the reasoning; the pressure diff shows
		// no model text, only how each answer was scored.
		if i > 0 && i < 3 && !strings.Contains(page, "window.__pwned") {
			t.Errorf("%s does not show the hostile reasoning at all", p)
		}
	}
	checkInert(t, "compare --format html", file)
}
