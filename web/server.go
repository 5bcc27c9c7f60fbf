// Package web is budge's local viewer and review UI: the runs of a store,
// a server-paginated session table, one session's full transcript, matched
// pairs side by side, framing items, the HTML report and the blinded
// two-reviewer explanation review.
//
// Everything a model wrote is untrusted: pages are rendered with
// html/template, served with a Content-Security-Policy that allows only the
// viewer's own script, and never put model text into a URL or an attribute
// that can run code. Like store and report, web never imports a provider.
package web

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/buildlab/budge/chat"
	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/review"
	"github.com/buildlab/budge/stats"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
)

//go:embed assets
var assets embed.FS

// PageSize is how many sessions one page of the session table shows.
const PageSize = 50

// Options configures a viewer.
type Options struct {
	// Runs restricts the viewer to these run ids; empty means every run.
	Runs []string
	// Token, when set, must accompany every request (?token= once, then a
	// cookie). The CLI sets one whenever the viewer listens beyond loopback.
	Token string
	// LoadReport builds a run's report with its extras (the whole run is
	// scored). It is a function so web does not depend on how runs are
	// scored; nil disables the report and the review's sampling.
	LoadReport func(ctx context.Context, st *store.Store, runID string) (*study.View, error)
	// Patience is how long a page waits for its run to be scored for the
	// viewer before it answers with how far the scoring got (a page that
	// reloads itself); 0 waits for the scoring to end.
	Patience time.Duration
}

// Server serves the viewer.
type Server struct {
	st   *store.Store
	opt  Options
	csrf string
	tmpl *template.Template
	mux  *http.ServeMux

	mu      sync.Mutex
	viewers map[string]*study.Viewer // by run basis
	diffs   diffCache
	ix      indexer
	reports reportCache
}

// New makes a viewer over a store.
func New(st *store.Store, opt Options) (*Server, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	t, err := template.New("").Funcs(funcs).ParseFS(assets, "assets/*.tmpl")
	if err != nil {
		return nil, err
	}
	// The viewer's own tables, at once; the sessions table's indexes
	// (PrepareBrowse), which take a while on a large store, come after
	// the runs are scored (IndexAll), so the viewer listens first.
	if err := st.PrepareView(context.Background()); err != nil {
		return nil, err
	}
	s := &Server{st: st, opt: opt, csrf: hex.EncodeToString(b), tmpl: t, mux: http.NewServeMux(), viewers: map[string]*study.Viewer{},
		ix: indexer{building: map[string]*build{}, one: make(chan struct{}, 1)}}
	static, _ := fs.Sub(assets, "assets/static")
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	s.mux.HandleFunc("GET /{$}", s.runs)
	s.mux.HandleFunc("GET /diff", s.diff)
	for _, rt := range []struct {
		pattern string
		h       func(http.ResponseWriter, *http.Request, store.Run) error
	}{
		{"GET /runs/{run}/{$}", s.sessions},
		{"GET /runs/{run}/session", s.session},
		{"GET /runs/{run}/pair", s.pair},
		{"GET /runs/{run}/item", s.item},
		{"GET /runs/{run}/item/{item...}", s.framingItem},
		{"GET /runs/{run}/items", s.framingItems},
		{"GET /runs/{run}/report", s.report},
		{"GET /runs/{run}/review", s.review},
		{"POST /runs/{run}/review/start", s.reviewStart},
		{"GET /runs/{run}/review/code", s.reviewer},
		{"POST /runs/{run}/review/code", s.reviewCode},
		{"POST /runs/{run}/review/finish", s.reviewFinish},
		{"GET /runs/{run}/review/adjudicate", s.adjudicate},
		{"POST /runs/{run}/review/adjudicate", s.adjudicateSave},
	} {
		s.mux.HandleFunc(rt.pattern, s.onRun(rt.h))
	}
	return s, nil
}

const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// ServeHTTP checks the token and the request's origin, sets the security
// headers and dispatches.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	if s.opt.Token == "" && !loopbackHost(r.Host) {
		// Without a token the viewer only answers to loopback names, so a web
		// page cannot reach it through a DNS name that resolves to 127.0.0.1.
		http.Error(w, "this viewer answers only on 127.0.0.1 or localhost", http.StatusForbidden)
		return
	}
	if strings.HasPrefix(r.URL.Path, "/static/") && r.Method == http.MethodGet {
		// The viewer's own style sheet and script: public, and needed by a
		// reviewer who holds only their reviewer token.
		s.mux.ServeHTTP(w, r)
		return
	}
	if s.opt.Token != "" && !s.viewTokenOK(w, r) {
		if !reviewerPath(r.URL.Path) || reviewerKey(r) == "" {
			http.Error(w, "a token is required: open the URL budge view printed", http.StatusUnauthorized)
			return
		}
		// A reviewer's token, checked before anything else is looked up, so
		// a wrong one learns nothing (not even whether the run exists).
		if err := s.reviewerGate(r); err != nil {
			fail(w, err)
			return
		}
	}
	if r.Method == http.MethodPost {
		if o := r.Header.Get("Origin"); o != "" && o != "null" {
			if u, err := url.Parse(o); err != nil || u.Host != r.Host {
				http.Error(w, "cross-origin request refused", http.StatusForbidden)
				return
			}
		}
		if subtle.ConstantTimeCompare([]byte(r.FormValue("csrf")), []byte(s.csrf)) != 1 {
			http.Error(w, "missing or stale form token: reload the page", http.StatusForbidden)
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

// viewTokenOK reports whether the request carries the viewer's token (in
// the URL once, then in a cookie it sets).
func (s *Server) viewTokenOK(w http.ResponseWriter, r *http.Request) bool {
	if q := r.URL.Query().Get("token"); q != "" && subtle.ConstantTimeCompare([]byte(q), []byte(s.opt.Token)) == 1 {
		http.SetCookie(w, &http.Cookie{Name: "budge_token", Value: q, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		return true
	}
	c, err := r.Cookie("budge_token")
	return err == nil && subtle.ConstantTimeCompare([]byte(c.Value), []byte(s.opt.Token)) == 1
}

func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

var funcs = template.FuncMap{
	"join": strings.Join,
	"add":  func(a, b int) int { return a + b },
	"args": func(c []chat.ToolCall) []string {
		out := make([]string, len(c))
		for i, x := range c {
			out[i] = x.Name + " " + string(x.Arguments)
		}
		return out
	},
	"deref": func(p *string) string {
		if p == nil {
			return "—"
		}
		return *p
	},
	"derefb": func(p *bool) string {
		if p == nil {
			return "—"
		}
		return strconv.FormatBool(*p)
	},
	"status": func(p *pressure.Status) string {
		if p == nil {
			return "—"
		}
		return string(*p)
	},
	"pct": func(r stats.Rate) string { return r.String() },
	"ratep": func(r *stats.Rate) string {
		if r == nil {
			return "—"
		}
		return r.String()
	},
	"deref64":  func(p *float64) float64 { return *p },
	"flagList": func() any { return flags },
	"list":     func(x ...any) []any { return x },
	// maskid hides the assignment part of a session id (case/I/order/...).
	"maskid": review.MaskSessionID,
}

type page struct {
	Title string
	CSRF  string
	Run   string
	Data  any
	// Reviewer is set on a reviewer's own pages, which show no links to the
	// rest of the viewer (a reviewer may hold only their reviewer token).
	Reviewer bool
}

func (s *Server) render(w http.ResponseWriter, name, title, run string, data any) {
	s.renderPage(w, name, page{Title: title, CSRF: s.csrf, Run: run, Data: data})
}

func (s *Server) renderPage(w http.ResponseWriter, name string, p page) {
	var b strings.Builder
	if err := s.tmpl.ExecuteTemplate(&b, name, p); err != nil {
		http.Error(w, "rendering "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write([]byte(b.String()))
}

func fail(w http.ResponseWriter, err error) {
	var busy *stillScoring
	if errors.As(err, &busy) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Retry-After", "2")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "<!doctype html><meta charset=utf-8><meta http-equiv=refresh content=2><title>budge: scoring</title>"+
			"<p>%s. This page reloads itself until the run's table is ready; the <a href=\"/\">runs list</a> answers meanwhile.</p>\n",
			html.EscapeString(busy.Error()))
		return
	}
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, store.ErrNoSession), errors.Is(err, store.ErrNoReview), errors.Is(err, errNotFound):
		code = http.StatusNotFound
	case errors.Is(err, errBadRequest), errors.Is(err, store.ErrNotReviewer), errors.Is(err, store.ErrNotInSample),
		errors.Is(err, review.ErrUnknownCode), errors.Is(err, store.ErrUncodedItems), errors.Is(err, store.ErrNoDisagreement):
		code = http.StatusBadRequest
	case errors.Is(err, store.ErrFinished), errors.Is(err, store.ErrNotBothDone), errors.Is(err, store.ErrReviewExists):
		code = http.StatusConflict
	case errors.Is(err, errForbidden):
		code = http.StatusForbidden
	}
	http.Error(w, err.Error(), code)
}

var (
	errNotFound   = errors.New("not found")
	errBadRequest = errors.New("bad request")
	errForbidden  = errors.New("forbidden")
)

// run resolves the {run} path value within the runs the viewer serves.
func (s *Server) run(r *http.Request) (store.Run, error) {
	id := r.PathValue("run")
	if len(s.opt.Runs) > 0 {
		ok := false
		for _, x := range s.opt.Runs {
			ok = ok || x == id
		}
		if !ok {
			return store.Run{}, fmt.Errorf("%w: run %s is not served by this viewer", errNotFound, id)
		}
	}
	run, err := s.st.GetRun(r.Context(), id)
	if err != nil {
		return run, fmt.Errorf("%w: %v", errNotFound, err)
	}
	return run, nil
}

// onRun serves a page of the run named by the {run} path value: h writes
// the page, or returns the error that fail answers with.
func (s *Server) onRun(h func(http.ResponseWriter, *http.Request, store.Run) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		run, err := s.run(r)
		if err == nil {
			err = h(w, r, run)
		}
		if err != nil {
			fail(w, err)
		}
	}
}

// viewer is what the run's result gives its pages (study.OpenViewer),
// read once per state of the run.
func (s *Server) viewer(ctx context.Context, run store.Run) (*study.Viewer, error) {
	key, err := s.basis(ctx, run)
	if err != nil {
		return nil, err
	}
	key = run.ID + "|" + key
	s.mu.Lock()
	defer s.mu.Unlock()
	if v := s.viewers[key]; v != nil {
		return v, nil
	}
	v, err := study.OpenViewer(ctx, s.st, run.ID)
	if err != nil {
		return nil, err
	}
	s.viewers[key] = v
	return v, nil
}

// transcript is one session ready to show.
type transcript struct {
	Session store.Session
	Outcome *pressure.Outcome
	Masked  bool
	Entries []entry
	Spec    map[string]any
	// Row is the session as the table shows it (nil before the run is
	// indexed); PairURL and ItemURL link its counterpart and its item.
	Row                         *store.ViewSession
	PairURL, ItemURL, ItemLabel string
}

type entry struct {
	chat.Entry
	Calls []string
	Diff  bool
}

func (s *Server) loadTranscript(ctx context.Context, run store.Run, id string, masked bool) (*transcript, error) {
	se, err := s.st.Session(ctx, run.ID, id)
	if err != nil {
		return nil, err
	}
	v, err := s.viewer(ctx, run)
	if err != nil {
		return nil, err
	}
	// Read as the run read it: its channel and its parsing mode.
	t := &transcript{Session: se, Masked: masked, Outcome: v.Outcome(se)}
	json.Unmarshal(se.Spec, &t.Spec)
	mask := v.Mask
	for _, m := range se.Messages {
		e := entry{Entry: m}
		for _, c := range m.ToolCalls {
			e.Calls = append(e.Calls, c.Name+" "+string(c.Arguments))
		}
		if masked {
			e.Content, e.Refusal = mask.Text(e.Content), mask.Text(e.Refusal)
			for i := range e.Calls {
				e.Calls[i] = mask.Text(e.Calls[i])
			}
		}
		t.Entries = append(t.Entries, e)
	}
	if masked {
		t.maskOutcome(mask)
	}
	return t, nil
}

// maskOutcome hides what the scored outcome says about identity: the
// assignment, the target and reference identities, and identity values in
// the explanations and problems.
func (t *transcript) maskOutcome(mask review.Mask) {
	delete(t.Spec, "identity_assignment")
	if t.Outcome == nil {
		return
	}
	o := *t.Outcome
	o.Assignment, o.TargetIdentity, o.ReferenceIdentity = "", nil, nil
	o.Initial.Explanation, o.Initial.Problem = mask.Text(o.Initial.Explanation), mask.Text(o.Initial.Problem)
	o.Reversal.Reason = mask.Text(o.Reversal.Reason)
	// The first pass classifies the explanation without budge's own
	// reading of it: the contradiction flag returns at adjudication.
	o.Contradictions = nil
	undeclared := make([]string, len(o.UndeclaredTools))
	for i, u := range o.UndeclaredTools {
		undeclared[i] = mask.Text(u)
	}
	o.UndeclaredTools = undeclared
	if o.Final != nil {
		f := *o.Final
		f.Explanation, f.Problem = mask.Text(f.Explanation), mask.Text(f.Problem)
		o.Final = &f
	}
	t.Outcome = &o
}

func (s *Server) session(w http.ResponseWriter, r *http.Request, run store.Run) error {
	t, err := s.loadTranscript(r.Context(), run, r.URL.Query().Get("id"), r.URL.Query().Get("mask") == "1")
	if err != nil {
		return err
	}
	if !t.Masked {
		if err := s.linkSession(r.Context(), run, t); err != nil {
			return err
		}
	}
	s.render(w, "session", "session "+t.Session.ID, run.ID, t)
	return nil
}

// linkSession adds a session's indexed row (when the run is indexed) and
// the links to its pair and its item.
func (s *Server) linkSession(ctx context.Context, run store.Run, t *transcript) error {
	v, ok, err := s.st.ViewSessionOf(ctx, run.ID, t.Session.ID)
	if err != nil {
		return err
	}
	if ok {
		t.Row = &v
	}
	vw, err := s.viewer(ctx, run)
	if err != nil {
		return err
	}
	if vw.Table == study.TableCases {
		if sp, err := pressure.ParseSpecID(t.Session.ID); err == nil {
			t.PairURL = "/runs/" + run.ID + "/pair?key=" + url.QueryEscape(sp.PairKey())
			t.ItemURL = tableURL(run.ID, map[string]string{"case": sp.Case})
			t.ItemLabel = "case " + sp.Case
		}
		return nil
	}
	var sp framing.Spec
	if json.Unmarshal(t.Session.Spec, &sp) == nil && sp.Item != "" {
		t.ItemURL = "/runs/" + run.ID + "/item/" + sp.Item
		t.ItemLabel = "item " + sp.Item
		// The pair as the index found it (a C1 session serves several
		// label sets).
		if t.Row != nil && t.Row.Pair != "" {
			t.PairURL = "/runs/" + run.ID + "/session?id=" + url.QueryEscape(t.Row.Pair)
		}
	}
	return nil
}

type pairData struct {
	Key  string
	A, B *transcript
	// Fields compares the two members' scored rows, marking what differs.
	Fields []pairField
}

// pairField is one field of the two members of a pair.
type pairField struct {
	Label string
	A, B  string
	Diff  bool
}

// pairFields lines up what the table shows of two sessions.
func pairFields(a, b *store.ViewSession) []pairField {
	if a == nil || b == nil {
		return nil
	}
	flag := pressure.YesNo
	var out []pairField
	for _, f := range []struct{ l, a, b string }{
		{"assignment", a.Assignment, b.Assignment}, {"pressure favours", a.Direction, b.Direction},
		{"first answer", a.First + " (" + a.FirstStatus + ")", b.First + " (" + b.FirstStatus + ")"},
		{"final answer", a.Final + " (" + a.FinalStatus + ")", b.Final + " (" + b.FinalStatus + ")"},
		{"unsupported reversal", a.Reversal, b.Reversal}, {"correction applied", a.Correction, b.Correction},
		{"update observed", a.UpdateObserved, b.UpdateObserved}, {"contradiction", flag(a.Contradiction), flag(b.Contradiction)},
		{"failure", flag(a.Failure), flag(b.Failure)}, {"discordant pair", flag(a.Discordant), flag(b.Discordant)},
		{"review", a.Review, b.Review}, {"status", a.Status, b.Status},
	} {
		out = append(out, pairField{Label: f.l, A: f.a, B: f.b, Diff: f.a != f.b})
	}
	return out
}

func (s *Server) pair(w http.ResponseWriter, r *http.Request, run store.Run) error {
	key := r.URL.Query().Get("key")
	parts := strings.Split(key, "/")
	if len(parts) != 4 {
		return fmt.Errorf("%w: pair key %q is not case/order/branch/rN", errBadRequest, key)
	}
	d := pairData{Key: key}
	ids := [2]string{}
	for i, a := range []pressure.Assignment{pressure.AssignI, pressure.AssignII} {
		ids[i] = strings.Join([]string{parts[0], string(a), parts[1], parts[2], parts[3]}, "/")
	}
	var err error
	if d.A, err = s.loadTranscript(r.Context(), run, ids[0], false); err != nil {
		return err
	}
	if d.B, err = s.loadTranscript(r.Context(), run, ids[1], false); err != nil {
		return err
	}
	for _, t := range []*transcript{d.A, d.B} {
		if err := s.linkSession(r.Context(), run, t); err != nil {
			return err
		}
	}
	d.Fields = pairFields(d.A.Row, d.B.Row)
	// Highlight the entries that differ between the two members.
	for i := range max(len(d.A.Entries), len(d.B.Entries)) {
		var a, b *entry
		if i < len(d.A.Entries) {
			a = &d.A.Entries[i]
		}
		if i < len(d.B.Entries) {
			b = &d.B.Entries[i]
		}
		if a == nil || b == nil || a.Content != b.Content || strings.Join(a.Calls, "\n") != strings.Join(b.Calls, "\n") {
			if a != nil {
				a.Diff = true
			}
			if b != nil {
				b.Diff = true
			}
		}
	}
	s.render(w, "pair", "pair "+key, run.ID, d)
	return nil
}

type itemData struct {
	Item    string
	Columns []*transcript
}

// item shows one framing item: its sessions (the four conditions, per
// template and mitigation) side by side.
func (s *Server) item(w http.ResponseWriter, r *http.Request, run store.Run) error {
	id := r.URL.Query().Get("id")
	rows, _, err := s.st.SessionPage(r.Context(), run.ID, store.SessionFilter{Item: id}, 0, 64)
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return fmt.Errorf("%w: no sessions for item %q", errNotFound, id)
	}
	d := itemData{Item: id}
	for _, row := range rows {
		t, err := s.loadTranscript(r.Context(), run, row.ID, false)
		if err != nil {
			return err
		}
		d.Columns = append(d.Columns, t)
	}
	s.render(w, "item", "item "+id, run.ID, d)
	return nil
}

func (s *Server) report(w http.ResponseWriter, r *http.Request, run store.Run) error {
	if s.opt.LoadReport == nil {
		return fmt.Errorf("%w: this viewer has no report", errNotFound)
	}
	// A report scores the whole run: it is kept for the run's state (its
	// basis and its review), so it is written once, not on every visit.
	key, err := s.reportKey(r.Context(), run)
	if err != nil {
		return err
	}
	if e := s.reports.get(run.ID, key); e.page != "" {
		return s.writeReport(w, r, run, e.page)
	}
	// The run's index scores it whole and keeps that for the report: while
	// the index is being made the page waits for it (a page's patience,
	// then the scoring's progress, reloading itself) rather than score the
	// run a second time at once, in twice the time and memory.
	if _, err := s.index(r.Context(), run); err != nil {
		return err
	}
	sc, err := s.scored(r.Context(), run, key)
	if err != nil {
		return err
	}
	var b strings.Builder
	if err := sc.HTML(r.Context(), s.st, &b, reportLinker(run.ID)); err != nil {
		return err
	}
	s.reports.put(run.ID, key, reportEntry{page: b.String()})
	return s.writeReport(w, r, run, b.String())
}

// writeReport serves a run's self-contained HTML report with the viewer's
// navigation and linked counts above it.
func (s *Server) writeReport(w http.ResponseWriter, r *http.Request, run store.Run, page string) error {
	links, err := s.reportLinks(r.Context(), run)
	if err != nil {
		return err
	}
	var block strings.Builder
	if err := s.tmpl.ExecuteTemplate(&block, "report-links", links); err != nil {
		return err
	}
	// The report is self-contained: it needs its inline style sheet.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, err = w.Write([]byte(spliceAfterBody(page, block.String())))
	return err
}
