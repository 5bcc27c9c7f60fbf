package web

import (
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
)

// DiffPageSize is how many cells one page of a run diff shows.
const DiffPageSize = 100

// diffData is one page of a run diff.
type diffData struct {
	Runs    []store.Run // the runs to pick from
	A, B    string
	Changed bool // only cells that changed
	Head    report.DiffHead
	Compare template.HTML
	Cells   []cellView
	// Total and Differ count every cell of the two runs; Shown, the cells
	// the filter keeps (all or changed).
	Total, Differ, Shown int
	Page, Pages          int
	Prev, Next           string
	First                int // 1-based number of the page's first shown cell
}

// diff serves /diff?a=RUN&b=RUN: budge compare's verdict and paired tests
// for the pair, then its cells side by side, a page at a time. Both runs'
// sessions are scored again in plan order for each request; only the page's
// cells are kept.
func (s *Server) diff(w http.ResponseWriter, r *http.Request) {
	if err := s.serveDiff(w, r); err != nil {
		fail(w, err)
	}
}

func (s *Server) serveDiff(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	q := r.URL.Query()
	d := diffData{A: q.Get("a"), B: q.Get("b"), Changed: q.Get("changed") == "1"}
	all, err := s.st.ListRuns(ctx)
	if err != nil {
		return err
	}
	for _, x := range all {
		if s.serves(x.ID) {
			d.Runs = append(d.Runs, x)
		}
	}
	if d.A == "" || d.B == "" {
		s.render(w, "diff", "budge run diff", "", d)
		return nil
	}
	for _, id := range []string{d.A, d.B} {
		if !slices.ContainsFunc(d.Runs, func(x store.Run) bool { return x.ID == id }) {
			return fmt.Errorf("%w: run %q is not served by this viewer", errNotFound, id)
		}
	}
	diff, err := study.OpenDiff(ctx, s.st, d.A, d.B)
	if errors.Is(err, study.ErrInvalid) {
		return fmt.Errorf("%w: %v", errBadRequest, err)
	}
	if err != nil {
		return err
	}
	d.Head = diff.Head
	if d.Compare, err = diff.Head.Section.CompareHTML(); err != nil {
		return err
	}
	d.Page, _ = strconv.Atoi(q.Get("page"))
	d.Page = max(1, d.Page)
	from := (d.Page - 1) * DiffPageSize
	err = diff.Each(ctx, func(c report.DiffCell) error {
		d.Total++
		if c.Changed {
			d.Differ++
		}
		if d.Changed && !c.Changed {
			return nil
		}
		if d.Shown >= from && d.Shown < from+DiffPageSize {
			d.Cells = append(d.Cells, viewCell(c, d.Head.Columns))
		}
		d.Shown++
		return nil
	})
	if err != nil {
		return err
	}
	d.Pages = max(1, (d.Shown+DiffPageSize-1)/DiffPageSize)
	d.First = from + 1
	link := func(p int) string {
		v := url.Values{"a": {d.A}, "b": {d.B}, "page": {strconv.Itoa(p)}}
		if d.Changed {
			v.Set("changed", "1")
		}
		return "?" + v.Encode()
	}
	if d.Page > 1 {
		d.Prev = link(d.Page - 1)
	}
	if d.Page < d.Pages {
		d.Next = link(d.Page + 1)
	}
	s.render(w, "diff", "diff "+d.A+" → "+d.B, "", d)
	return nil
}

// serves reports whether the viewer serves run id (Options.Runs).
func (s *Server) serves(id string) bool {
	return len(s.opt.Runs) == 0 || slices.Contains(s.opt.Runs, id)
}

// cellView is a cell ready to show, its fields side by side; it links to
// its session in either run by session id, never by display position.
type cellView struct {
	report.DiffCell
	Fields []fieldView
}

type fieldView struct {
	Before, After     string
	Differs, Compared bool
}

func viewCell(c report.DiffCell, cols []report.DiffColumn) cellView {
	v := cellView{DiffCell: c}
	for i, col := range cols {
		v.Fields = append(v.Fields, fieldView{Before: c.Before.Field(i), After: c.After.Field(i),
			Differs: i < len(c.Differs) && c.Differs[i], Compared: col.Compared})
	}
	return v
}
