package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/buildlab/budge/review"
	"github.com/buildlab/budge/store"
)

// A reviewer's pages (their first pass, their codes, their "finished")
// open only with that reviewer's own token, issued when the sample is
// frozen. The view token does not open them: whoever runs the viewer
// cannot act as a reviewer, and one reviewer's token does not open the
// other's pages. A reviewer token opens nothing else, so a reviewer can be
// given their link without the view token (and without the unmasked
// transcripts it would show).

// reviewerCookie carries a reviewer token after the first visit, scoped
// to the run's review pages.
const reviewerCookie = "budge_reviewer"

// reviewerPath reports whether a path is one of a reviewer's own pages.
func reviewerPath(p string) bool {
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	return len(parts) == 4 && parts[0] == "runs" && parts[2] == "review" && (parts[3] == "code" || parts[3] == "finish")
}

// reviewerGate admits a request to a reviewer's page that carries no view
// token only with that reviewer's own token for the run its path names.
func (s *Server) reviewerGate(r *http.Request) error {
	runID := strings.Split(strings.TrimPrefix(r.URL.Path, "/"), "/")[1]
	_, err := s.asReviewer(r, store.Run{ID: runID})
	return err
}

// reviewerKey is the reviewer token a request carries: key= in the URL or
// the form, or else the cookie.
func reviewerKey(r *http.Request) string {
	if k := r.FormValue("key"); k != "" {
		return k
	}
	if c, err := r.Cookie(reviewerCookie); err == nil {
		return c.Value
	}
	return ""
}

// asReviewer returns the reviewer a request acts as: the one its who=
// names, if it carries that reviewer's own token.
func (s *Server) asReviewer(r *http.Request, run store.Run) (string, error) {
	who := r.FormValue("who")
	ok, err := review.Authorized(r.Context(), s.st, run.ID, who, reviewerKey(r))
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("%w: this page opens only with the reviewer's own link (whoever runs the review can issue a new one: budge review token %s --reviewer NAME)", errForbidden, run.ID)
	}
	return who, nil
}

// keepReviewerKey moves a reviewer token from the URL into a cookie and
// redirects to the URL without it, so the token leaves the address bar and
// the history. It reports whether it answered the request.
func keepReviewerKey(w http.ResponseWriter, r *http.Request, run store.Run) bool {
	key := r.URL.Query().Get("key")
	if key == "" {
		return false
	}
	base := "/runs/" + url.PathEscape(run.ID) + "/review/"
	http.SetCookie(w, &http.Cookie{Name: reviewerCookie, Value: key, Path: base, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	q := r.URL.Query()
	q.Del("key")
	http.Redirect(w, r, base+"code?"+q.Encode(), http.StatusSeeOther)
	return true
}

// reviewerLink is the path that opens a reviewer's pages with their token.
func reviewerLink(runID, who, token string) string {
	return "/runs/" + url.PathEscape(runID) + "/review/code?" + url.Values{"who": {who}, "key": {token}}.Encode()
}
