package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
)

// SearchTimeout bounds how long a transcript search reads before the
// table says it stopped.
var SearchTimeout = 10 * time.Second

// runRow is one line of the runs list.
type runRow struct {
	store.Run
	H *headline
	// State says why a run has no headline yet: being scored, or the error
	// scoring it gave.
	State string
}

func (s *Server) runs(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	all, err := s.st.ListRuns(ctx)
	if err != nil {
		fail(w, err)
		return
	}
	stored, err := s.st.ViewRuns(ctx)
	if err != nil {
		fail(w, err)
		return
	}
	var out []runRow
	for _, x := range all {
		if !s.serves(x.ID) {
			continue
		}
		row := runRow{Run: x}
		b, err := s.basis(ctx, x)
		if err != nil {
			fail(w, err)
			return
		}
		if v, ok := stored[x.ID]; ok && v.Basis == b {
			row.H = decodeHeadline(v.Headline)
		}
		if row.H == nil {
			// Never scored here, or changed since: the run's own page
			// scores it (budge view scores every run as it starts).
			row.State = "not scored for the viewer yet: open the run"
			if b := s.building(x.ID); b != nil {
				row.State = fmt.Sprintf("scoring for the viewer: %d of %d sessions so far…", b.Scored, b.Planned)
			}
		}
		out = append(out, row)
	}
	s.render(w, "runs", "budge runs", "", out)
}

// tableData is one page of the session table.
type tableData struct {
	Run     store.Run
	Framing bool
	Judge   bool // a judge run: one row per judgment
	H       *headline
	// Partial is set while the run is scored for the viewer: the table
	// shows the sessions scored so far (H is nil).
	Partial  *stillScoring
	Q        url.Values // the request's filters, for the form
	Rows     []tableRow
	Count    string
	Prev     string
	Next     string
	First    string
	Cases    []string
	Branches []string
	Heads    []tableHead
}

// tableRow is a session with the links its row needs.
type tableRow struct {
	store.ViewSession
	PairURL string
	ItemURL string
}

// tableHead is a column header: its label and the link that sorts by it.
type tableHead struct {
	Label, URL, Mark string
}

// flags are the check-box filters of the session table, by query key.
var flags = []struct{ Key, Label string }{
	{"failures", "failures only"}, {"reversals", "reversals"}, {"discordant", "discordant pairs"},
	{"parse", "parse failures"}, {"transport", "transport failures"}, {"contradiction", "contradictions"},
	{"unreviewed", "unreviewed"},
}

// valueFilters are the select and text filters of the session table.
var valueFilters = []string{"case", "branch", "status", "assignment", "order", "direction", "item",
	"first_status", "final_status", "reversal", "correction", "trigger", "q"}

// reversalEligible, as the table's reversal filter, keeps the sessions in
// a reversal rate's denominator (pressure.DenominatorValues).
const reversalEligible = "eligible"

// viewQuery reads a ViewQuery from a request's query.
func viewQuery(q url.Values) store.ViewQuery {
	on := func(k string) bool { return q.Get(k) == "1" }
	rev, revIn := q.Get("reversal"), []string(nil)
	if rev == reversalEligible {
		rev, revIn = "", pressure.DenominatorValues()
	}
	return store.ViewQuery{
		Case: q.Get("case"), Branch: q.Get("branch"), Status: q.Get("status"), Assignment: q.Get("assignment"),
		Order: q.Get("order"), Direction: q.Get("direction"), Item: q.Get("item"),
		FirstStatus: q.Get("first_status"), FinalStatus: q.Get("final_status"), Reversal: rev, ReversalIn: revIn, Correction: q.Get("correction"),
		Trigger:  q.Get("trigger"),
		Failures: on("failures"), Reversals: on("reversals"), Discordant: on("discordant"), ParseFailures: on("parse"),
		Transport: on("transport"), Contradiction: on("contradiction"), Unreviewed: on("unreviewed"),
		Search: q.Get("q"), Sort: q.Get("sort"), Desc: on("desc"), After: q.Get("after"), Before: q.Get("before"), Limit: PageSize,
	}
}

// tableURL is the session table of a run with a filter (query key, value
// pairs), as the report page's counts link to it.
func tableURL(run string, kv map[string]string) string {
	v := url.Values{}
	for k, x := range kv {
		v.Set(k, x)
	}
	u := "/runs/" + url.PathEscape(run) + "/"
	if len(v) > 0 {
		u += "?" + v.Encode()
	}
	return u
}

// with is the request's query with keys set ("" deletes) and its cursors
// dropped unless set again.
func with(q url.Values, kv ...string) string {
	v := url.Values{}
	for k, x := range q {
		if k != "after" && k != "before" && k != "token" {
			v[k] = x
		}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			v.Del(kv[i])
		} else {
			v.Set(kv[i], kv[i+1])
		}
	}
	return "?" + v.Encode()
}

// columns are the session table's sortable columns, per protocol.
var (
	pressureColumns = [][2]string{{"session", "session"}, {"case", "case"}, {"branch", "branch"}, {"assignment", "assign."},
		{"order", "order"}, {"first", "first answer"}, {"final", "final answer"}, {"reversal", "reversal"},
		{"direction", "pressure favours"}, {"correction", "correction applied"}, {"update", "update observed"},
		{"contradiction", "contradiction"}, {"review", "review"}, {"status", "status"}, {"attempts", "attempts"}}
	framingColumns = [][2]string{{"session", "session"}, {"item", "item"}, {"case", "arm"}, {"branch", "condition"},
		{"first", "first answer"}, {"final", "after challenge"}, {"reversal", "flipped"},
		{"review", "review"}, {"status", "status"}, {"attempts", "attempts"}}
	judgeColumns = [][2]string{{"session", "judgment"}, {"case", "task"}, {"branch", "group"}, {"order", "order · repeat"},
		{"first", "code"}, {"status", "status"}, {"attempts", "attempts"}}
)

func (s *Server) sessions(w http.ResponseWriter, r *http.Request, run store.Run) error {
	ctx := r.Context()
	q := r.URL.Query()
	if q.Get("rescore") == "1" {
		if err := s.rescore(ctx, run); err != nil {
			return err
		}
		q.Del("rescore")
	}
	h, err := s.index(ctx, run)
	var busy *stillScoring
	if errors.As(err, &busy) && busy.partial() {
		// Scored in part: the table shows the rows written so far, and
		// says so.
		err = nil
	}
	if err != nil {
		return err
	}
	// The run says how its table is laid out: a judge run's shows one row
	// per judgment (its task, its group, order and repeat, and the code
	// the judge gave), a framing run's items under conditions.
	v, err := s.viewer(ctx, run)
	if err != nil {
		return err
	}
	d := tableData{Run: run, Framing: v.Table == study.TableItems, Judge: v.Table == study.TableJudgments, H: h, Partial: busy, Q: url.Values{}}
	for _, k := range valueFilters {
		d.Q.Set(k, q.Get(k))
	}
	for _, f := range flags {
		d.Q.Set(f.Key, q.Get(f.Key))
	}
	if v.Table == study.TableCases {
		d.Cases = v.Cases
		for _, b := range pressure.DeterminateBranches {
			d.Branches = append(d.Branches, string(b))
		}
	}
	vq := viewQuery(q)
	if _, ok := store.ViewColumns[vq.Sort]; vq.Sort != "" && !ok {
		return fmt.Errorf("%w: no column %q to sort by", errBadRequest, vq.Sort)
	}
	unfiltered := true
	for _, k := range valueFilters {
		unfiltered = unfiltered && q.Get(k) == ""
	}
	for _, f := range flags {
		unfiltered = unfiltered && q.Get(f.Key) == ""
	}
	// The whole run: its size is in the headline, no need to count.
	vq.NoCount = unfiltered
	if busy != nil {
		vq.Below = busy.Written.Below
	}
	qctx := ctx
	if vq.Search != "" {
		// A search reads transcripts: bounded, so a rare phrase on a big
		// run does not hold the page for minutes.
		var cancel context.CancelFunc
		qctx, cancel = context.WithTimeout(ctx, SearchTimeout)
		defer cancel()
	}
	p, err := s.st.ViewSessions(qctx, run.ID, vq)
	switch {
	case err != nil && vq.Search != "" && ctx.Err() == nil && qctx.Err() != nil:
		d.Count = fmt.Sprintf("the search for %q read transcripts for %v without filling a page and was stopped: narrow it with a filter", vq.Search, SearchTimeout)
	case err != nil:
		return fmt.Errorf("%w: %v", errBadRequest, err)
	case busy != nil && unfiltered:
		d.Count = fmt.Sprintf("%d sessions scored so far", busy.Written.Rows)
	case unfiltered:
		d.Count = fmt.Sprintf("%d sessions", h.Sessions)
	case p.Total < 0:
		d.Count = fmt.Sprintf("%d sessions on this page hold %q", len(p.Rows), vq.Search)
	case p.Capped:
		d.Count = fmt.Sprintf("more than %d sessions", store.CountCap)
	default:
		d.Count = fmt.Sprintf("%d sessions", p.Total)
	}
	if busy != nil && !unfiltered {
		// A count of the part scored is a count of that part, never of
		// the run.
		d.Count += fmt.Sprintf(" of the %d scored so far", busy.Written.Rows)
	}
	for _, v := range p.Rows {
		row := tableRow{ViewSession: v}
		if d.Framing {
			row.PairURL = "/runs/" + run.ID + "/session?id=" + url.QueryEscape(v.Pair)
			row.ItemURL = "/runs/" + run.ID + "/item/" + v.Item
		} else if sp, err := pressure.ParseSpecID(v.ID); err == nil {
			row.PairURL = "/runs/" + run.ID + "/pair?key=" + url.QueryEscape(sp.PairKey())
			row.ItemURL = tableURL(run.ID, map[string]string{"case": v.Case})
		}
		d.Rows = append(d.Rows, row)
	}
	if p.Next != "" {
		d.Next = with(q, "after", p.Next)
	}
	if p.Prev != "" {
		d.Prev = with(q, "before", p.Prev)
		d.First = with(q)
	}
	cols := pressureColumns
	switch {
	case d.Framing:
		cols = framingColumns
	case d.Judge:
		cols = judgeColumns
	}
	for _, c := range cols {
		hd := tableHead{Label: c[1], URL: with(q, "sort", c[0], "desc", "")}
		if q.Get("sort") == c[0] {
			if vq.Desc {
				hd.Mark = "▼"
			} else {
				hd.Mark = "▲"
				hd.URL = with(q, "sort", c[0], "desc", "1")
			}
		}
		d.Heads = append(d.Heads, hd)
	}
	s.render(w, "sessions", "budge run "+run.ID, run.ID, d)
	return nil
}

// reportLinks is the viewer's block above a run's report: navigation and
// every count of the run with a link to the sessions behind it.
type reportLinks struct {
	Run  string
	H    *headline
	Rows []linkRow
}

type linkRow struct {
	Label string
	N     int
	URL   string
}

func (s *Server) reportLinks(ctx context.Context, run store.Run) (*reportLinks, error) {
	h, err := s.index(ctx, run)
	if err != nil {
		return nil, err
	}
	d := &reportLinks{Run: run.ID, H: h}
	add := func(label string, n int, kv map[string]string) {
		d.Rows = append(d.Rows, linkRow{Label: label, N: n, URL: tableURL(run.ID, kv)})
	}
	for _, r := range h.Rows(d.Framing()) {
		add(r.Label, r.N, r.Filter)
	}
	return d, nil
}

func (d *reportLinks) Framing() bool { return d.H != nil && d.H.Table == study.TableItems }

// spliceAfterBody puts block right after the opening body tag of a
// self-contained HTML page (which budge wrote: its first <body> is the
// tag, before any model text).
func spliceAfterBody(page, block string) string {
	i := strings.Index(page, "<body")
	if i < 0 {
		return block + page
	}
	j := strings.Index(page[i:], ">")
	if j < 0 {
		return block + page
	}
	return page[:i+j+1] + block + page[i+j+1:]
}

// reportLinker links the counts inside a run's HTML report to the session
// table filtered to the sessions they count. It links only the counts the
// table's filters select exactly (TestReportCountsLinkTheirSessions
// follows every link and checks the table's total): a denominator such
// as "first answer correct and final answer observed" has no one filter,
// and stays plain text.
func reportLinker(run string) report.Linker {
	return func(c report.Count) string {
		kv := map[string]string{}
		if c.Family != "" {
			kv["branch"] = c.Family
		}
		switch {
		case c.Measure == "reversal" && c.Part == "num":
			kv["direction"], kv["reversal"] = c.Direction, pressure.Yes
		case c.Measure == "reversal" && c.Part == "den":
			kv["direction"], kv["reversal"] = c.Direction, reversalEligible
		case c.Measure == "pairs" && (c.Status == "only X reversed" || c.Status == "only Y reversed"):
			// The pair's member that reversed: pressure toward its
			// direction, reversed, in a discordant pair.
			kv["direction"], kv["reversal"], kv["discordant"] = c.Status[5:6], pressure.Yes, "1"
		case c.Measure == "sessions":
			if c.Status != "" {
				kv["status"] = c.Status
			}
		case c.Status == string(pressure.Missing):
			return "" // never answered: not in the table
		case c.Measure == "first answer":
			kv["first_status"] = c.Status
		case c.Measure == "final answer":
			kv["final_status"] = c.Status
		case c.Measure == "answers" && c.Status != framing.StatusAnswered:
			// A framing condition's first answers by status (answered is
			// correct or incorrect: no one filter).
			if c.Status != "" {
				kv["first_status"] = c.Status
			}
		case c.Measure == "trigger":
			// A decision trigger's sessions: the same function marked them.
			kv["trigger"] = c.Status
		case c.Measure == "uptake" && c.Part == "num" && c.Status == "":
			kv["branch"], kv["correction"] = string(pressure.Correction), pressure.Yes
		case c.Measure == "uptake" && c.Part == "den" && c.Status == "":
			kv["branch"] = string(pressure.Correction)
		default:
			return ""
		}
		return tableURL(run, kv)
	}
}
