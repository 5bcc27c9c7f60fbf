package web

import (
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

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
	var ra, rb store.Run
	for _, x := range d.Runs {
		if x.ID == d.A {
			ra = x
		}
		if x.ID == d.B {
			rb = x
		}
	}
	for _, id := range []string{ra.ID, rb.ID} {
		if id == "" {
			return fmt.Errorf("%w: run %q or %q is not served by this viewer", errNotFound, d.A, d.B)
		}
	}
	d.Page, _ = strconv.Atoi(q.Get("page"))
	d.Page = max(1, d.Page)
	from := (d.Page - 1) * DiffPageSize
	key, cacheable := diffKeyOf(ra, rb)
	sum := s.diffs.get(key)
	var diff *study.Diff
	if sum == nil {
		diff, err = study.OpenDiff(ctx, s.st, d.A, d.B)
	} else {
		// Known counts: the cells are read only up to the page shown.
		diff, err = study.OpenDiffCells(ctx, s.st, d.A, d.B)
	}
	if errors.Is(err, study.ErrInvalid) {
		return fmt.Errorf("%w: %v", errBadRequest, err)
	}
	if err != nil {
		return err
	}
	if sum == nil {
		sum = &diffSummary{head: diff.Head}
		if sum.compare, err = diff.Head.HeadHTML(); err != nil {
			return err
		}
	}
	d.Head, d.Compare = sum.head, sum.compare
	counted := sum.done
	shown := 0
	err = diff.Each(ctx, func(c report.DiffCell) error {
		if !counted {
			sum.total++
			if c.Changed {
				sum.differ++
			}
		}
		if d.Changed && !c.Changed {
			return nil
		}
		if shown >= from && shown < from+DiffPageSize {
			d.Cells = append(d.Cells, viewCell(c, d.Head.Columns))
		}
		shown++
		if counted && shown >= from+DiffPageSize {
			return errPageFull
		}
		return nil
	})
	if err != nil && !errors.Is(err, errPageFull) {
		return err
	}
	if !counted {
		sum.done = true
		if cacheable {
			s.diffs.put(key, sum)
		}
	}
	d.Total, d.Differ, d.Shown = sum.total, sum.differ, sum.total
	if d.Changed {
		d.Shown = sum.differ
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

// errPageFull stops reading cells once a page is full.
var errPageFull = errors.New("page full")

// diffKey names a diff of two runs as they stood: a resumed run finishes
// again at another time, which makes a new key.
type diffKey struct {
	a, b             string
	statusA, statusB string
	finA, finB       time.Time
}

// diffKeyOf is the key of a diff, and whether it may be kept: only when
// both runs have finished (a running run's cells change).
func diffKeyOf(a, b store.Run) (diffKey, bool) {
	k := diffKey{a: a.ID, b: b.ID, statusA: a.Status, statusB: b.Status}
	if a.Finished == nil || b.Finished == nil || a.Status == store.RunRunning || b.Status == store.RunRunning {
		return k, false
	}
	k.finA, k.finB = *a.Finished, *b.Finished
	return k, true
}

// diffSummary is what a diff's first request learns for the next pages:
// compare's section and the cell counts (never the cells).
type diffSummary struct {
	head          report.DiffHead
	compare       template.HTML
	total, differ int
	done          bool // counted every cell
}

// diffCache keeps the summaries of the last few diffs, so that paging and
// the changed-only filter do not score both runs again for compare's
// verdict and the counts.
type diffCache struct {
	mu    sync.Mutex
	m     map[diffKey]*diffSummary
	order []diffKey
}

const diffCacheSize = 8

func (c *diffCache) get(k diffKey) *diffSummary {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sum := c.m[k]; sum != nil {
		cp := *sum
		return &cp
	}
	return nil
}

func (c *diffCache) put(k diffKey, sum *diffSummary) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[diffKey]*diffSummary{}
	}
	if _, ok := c.m[k]; !ok {
		c.order = append(c.order, k)
	}
	c.m[k] = sum
	for len(c.order) > diffCacheSize {
		delete(c.m, c.order[0])
		c.order = c.order[1:]
	}
}
