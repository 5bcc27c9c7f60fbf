package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/buildlab/budge/review"
	"github.com/buildlab/budge/store"
)

type reviewData struct {
	State    review.State
	Summary  any
	Codes    []string
	Done     []bool
	Counts   []int
	Items    int
	Both     bool
	Disagree int
}

func (s *Server) review(w http.ResponseWriter, r *http.Request, run store.Run) error {
	st, err := review.Load(r.Context(), s.st, run.ID)
	if err != nil {
		return err
	}
	d := reviewData{State: st, Codes: review.ReasonCodes}
	if st.Review != nil {
		d.Items, d.Both = len(st.Review.Items), st.BothFinished()
		for _, who := range st.Review.Reviewers {
			d.Done = append(d.Done, st.Finished[who])
			d.Counts = append(d.Counts, len(st.Codes[who]))
		}
		d.Disagree = len(st.Disagreements())
		if d.Both {
			d.Summary = st.Summary()
		}
	}
	s.render(w, "review", "review of "+run.ID, run.ID, d)
	return nil
}

// StartReview scores the run, draws the sample and freezes it. The sample
// is drawn from scores alone, before any explanation is shown.
func (s *Server) reviewStart(w http.ResponseWriter, r *http.Request, run store.Run) error {
	if s.opt.LoadReport == nil {
		return fmt.Errorf("%w: the review is for pressure runs", errBadRequest)
	}
	n, err1 := strconv.Atoi(r.FormValue("successes"))
	seed, err2 := strconv.ParseUint(r.FormValue("seed"), 10, 64)
	if err1 != nil || err2 != nil || n < 0 {
		return fmt.Errorf("%w: successes and seed must be non-negative integers", errBadRequest)
	}
	key, err := s.reportKey(r.Context(), run)
	if err != nil {
		return err
	}
	sc, err := s.scored(r.Context(), run, key)
	if err != nil {
		return err
	}
	if sc.Review == nil {
		return fmt.Errorf("%w: the review is for pressure runs", errBadRequest)
	}
	outcomes, sum := sc.Review.ReviewSource(r.Context())
	rev, tokens, err := review.Freeze(r.Context(), s.st, run.ID, [2]string{r.FormValue("a"), r.FormValue("b")}, seed, n, outcomes, sum)
	if err != nil {
		return err
	}
	// The tokens are shown on this one page and never again.
	d := startedData{Items: len(rev.Items)}
	for i, who := range rev.Reviewers {
		d.Links = append(d.Links, reviewerLinkView{Who: who, URL: "http://" + r.Host + reviewerLink(run.ID, who, tokens[i])})
	}
	w.Header().Set("Cache-Control", "no-store")
	s.render(w, "review-started", "review of "+run.ID+" started", run.ID, d)
	return nil
}

type reviewerLinkView struct{ Who, URL string }

type startedData struct {
	Items int
	Links []reviewerLinkView
}

type reviewerItem struct {
	N         int
	SessionID string
	T         *transcript
	Code      string
	Note      string
}

type reviewerData struct {
	Who      string
	Finished bool
	Codes    []string
	Items    []reviewerItem
	Coded    int
}

// reviewer is one reviewer's first pass: masked transcripts, their own
// codes only.
func (s *Server) reviewer(w http.ResponseWriter, r *http.Request, run store.Run) error {
	who, err := s.asReviewer(r, run)
	if err != nil {
		return err
	}
	if keepReviewerKey(w, r, run) {
		return nil
	}
	st, err := review.Load(r.Context(), s.st, run.ID)
	if err != nil {
		return err
	}
	if st.Review == nil {
		return store.ErrNoReview
	}
	d := reviewerData{Who: who, Finished: st.Finished[who], Codes: review.ReasonCodes}
	mine := st.Visible(who)[who]
	for i, it := range st.Review.Items {
		t, err := s.loadTranscript(r.Context(), run, it.SessionID, true)
		if err != nil {
			return err
		}
		c := mine[it.SessionID]
		// The sample's reason (failure, discordant pair) is not shown: it would
		// tell the reviewer what to look for.
		d.Items = append(d.Items, reviewerItem{N: i + 1, SessionID: it.SessionID, T: t, Code: c.Code, Note: c.Note})
		if c.Code != "" {
			d.Coded++
		}
	}
	s.renderPage(w, "reviewer", page{Title: "review: " + who, CSRF: s.csrf, Run: run.ID, Data: d, Reviewer: true})
	return nil
}

func (s *Server) reviewCode(w http.ResponseWriter, r *http.Request, run store.Run) error {
	who, err := s.asReviewer(r, run)
	if err != nil {
		return err
	}
	// The reviewer's form names the item by its position, not by session id:
	// the id carries the identity assignment the first pass masks.
	rev, err := s.st.GetReview(r.Context(), run.ID)
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(r.FormValue("item"))
	if err != nil || n < 1 || n > len(rev.Items) {
		return fmt.Errorf("%w: item %q is not in the sample", errBadRequest, r.FormValue("item"))
	}
	if err := review.SetCode(r.Context(), s.st, run.ID, rev.Items[n-1].SessionID, who, r.FormValue("code"), r.FormValue("note")); err != nil {
		return err
	}
	saved(w, r, run, "/review/code?who="+url.QueryEscape(who))
	return nil
}

func (s *Server) reviewFinish(w http.ResponseWriter, r *http.Request, run store.Run) error {
	who, err := s.asReviewer(r, run)
	if err != nil {
		return err
	}
	if err := s.st.FinishReview(r.Context(), run.ID, who); err != nil {
		return err
	}
	// Back to the reviewer's own page (read-only now): the review's overview
	// needs the view token, which a reviewer may not hold.
	http.Redirect(w, r, "/runs/"+url.PathEscape(run.ID)+"/review/code?who="+url.QueryEscape(who), http.StatusSeeOther)
	return nil
}

type adjItem struct {
	store.ReviewItem
	T     *transcript
	A, B  store.ReviewCode
	Final string
	Note  string
}

type adjData struct {
	Reviewers [2]string
	Codes     []string
	Items     []adjItem
}

// adjudicate shows each disagreement with both codes and the unmasked
// transcript; it opens only when both reviewers have finished.
func (s *Server) adjudicate(w http.ResponseWriter, r *http.Request, run store.Run) error {
	st, err := review.Load(r.Context(), s.st, run.ID)
	if err != nil {
		return err
	}
	if st.Review == nil {
		return store.ErrNoReview
	}
	if !st.BothFinished() {
		return store.ErrNotBothDone
	}
	d := adjData{Reviewers: st.Review.Reviewers, Codes: append(append([]string{}, review.ReasonCodes...), review.CodeUnresolved)}
	for _, it := range st.Disagreements() {
		t, err := s.loadTranscript(r.Context(), run, it.SessionID, false)
		if err != nil {
			return err
		}
		a := st.Adj[it.SessionID]
		d.Items = append(d.Items, adjItem{ReviewItem: it, T: t, A: st.Codes[st.Review.Reviewers[0]][it.SessionID],
			B: st.Codes[st.Review.Reviewers[1]][it.SessionID], Final: a.Code, Note: a.Note})
	}
	s.render(w, "adjudicate", "adjudication", run.ID, d)
	return nil
}

func (s *Server) adjudicateSave(w http.ResponseWriter, r *http.Request, run store.Run) error {
	if err := review.Adjudicate(r.Context(), s.st, run.ID, r.FormValue("session"), r.FormValue("code"), r.FormValue("note")); err != nil {
		return err
	}
	saved(w, r, run, "/review/adjudicate")
	return nil
}

// saved answers a saved form: with no content when the page's script sent
// it (the page stays as it is), otherwise with a redirect to the run's page
// at path.
func saved(w http.ResponseWriter, r *http.Request, run store.Run, path string) {
	if r.Header.Get("X-Requested-With") == "budge" {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	http.Redirect(w, r, "/runs/"+url.PathEscape(run.ID)+path, http.StatusSeeOther)
}
