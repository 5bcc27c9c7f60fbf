package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
)

// The framing item pages: one item with its four conditions side by side in
// every arm of the run (template × labels × mitigation), and the list of
// the run's items with the flips each arm makes, filterable to flips. Both
// score the run's sessions as its report does (study.LoadFraming, then an
// item's sessions read again from the store: the list an item at a time),
// so a flip shown here is a flip the report counts.

// condView is one condition of an item in one arm: the session and its
// answer as read.
type condView struct {
	Condition framing.Condition
	Expected  string // the choice a right judgment makes
	Run       string // the run that holds the session (another one for a fixed C1)
	Session   string
	Obs       *framing.Observation
	Class     string // right, wrong or unread
	Repairs   string
}

// armView is one arm of an item: its four conditions and the flips of its
// two pairs.
type armView struct {
	Name  string
	Mode  string
	Conds [4]condView
	Flips []framing.FlipRecord
	Flip  bool // a deference or skepticism flip
}

type itemPage struct {
	Run    store.Run
	Item   framing.Item
	Policy string
	Arms   []armView
	C1From string // the run the C1 answers come from, when another one
}

// itemArms builds the arms of one item from its observations (its own
// and those a fixed C1 run gives it).
func itemArms(res *study.FramingResult, it *study.ItemObservations) []armView {
	mine := it.Observations
	c1Run := ""
	if b := res.Manifest.BaselineC1; b != nil {
		c1Run = b.Run
	}
	policy := res.Snapshot.Design.Policy
	flips := framing.Flips(res.Run.ID, policy, mine, it.Traces)
	fromOther := func(o *framing.Observation) bool {
		for i := range mine {
			if &mine[i] == o {
				return i < it.FromC1Run
			}
		}
		return false
	}
	find := func(template, labels, mitigation string, c framing.Condition) *framing.Observation {
		for i := range mine {
			o := &mine[i]
			if o.Template == template && o.Labels == labels && o.Mitigation == mitigation && o.Condition == c {
				return o
			}
		}
		return nil
	}
	var arms []armView
	for _, a := range res.Snapshot.Design.Arms() {
		v := armView{Name: a.Name(), Mode: a.Mode()}
		if res.Snapshot.Design.FixedC1 != "" {
			v.Mode = framing.ModeFixed
		}
		for i, c := range framing.Conditions {
			var o *framing.Observation
			if c.Dialogue() {
				o = find(a.Template, a.Labels, a.Mitigation, c)
			} else if o = find(a.Template, "", a.C1Mitigation, c); o == nil {
				// As Flips pairs them: a C1 under no mitigation otherwise.
				o = find(a.Template, "", framing.None, c)
			}
			cv := condView{Condition: c, Expected: c.Expected(), Run: res.Run.ID, Obs: o, Class: "unread"}
			if o != nil {
				cv.Session = o.Session
				if fromOther(o) && c1Run != "" {
					cv.Run = c1Run
				}
				if o.Status == framing.StatusAnswered {
					cv.Class = map[bool]string{true: "right", false: "wrong"}[o.Correct]
				}
				cv.Repairs = strings.Join(o.Recovered, ", ")
			}
			v.Conds[i] = cv
		}
		for _, f := range flips {
			if f.Template == a.Template && f.Labels == a.Labels && f.Arm == a.Mitigation {
				v.Flips = append(v.Flips, f)
				v.Flip = v.Flip || f.Flip == framing.FlipDeference || f.Flip == framing.FlipSkepticism
			}
		}
		arms = append(arms, v)
	}
	return arms
}

// itemPages refuses a run whose sessions are not items under conditions.
func (s *Server) itemPages(ctx context.Context, run store.Run) error {
	v, err := s.viewer(ctx, run)
	if err == nil && v.Table != study.TableItems {
		err = fmt.Errorf("%w: run %s is a %s run; item pages are for framing runs", errNotFound, run.ID, run.Protocol)
	}
	return err
}

// framingItem serves /runs/{run}/item/{item}.
func (s *Server) framingItem(w http.ResponseWriter, r *http.Request, run store.Run) error {
	if err := s.itemPages(r.Context(), run); err != nil {
		return err
	}
	res, err := study.LoadFraming(r.Context(), s.st, run.ID)
	if err != nil {
		return err
	}
	id := r.PathValue("item")
	d := itemPage{Run: run, Policy: res.Snapshot.Design.Policy}
	index := -1
	for i, it := range res.Snapshot.Items {
		if it.ID == id {
			d.Item, index = it, i
			break
		}
	}
	if index < 0 {
		return fmt.Errorf("%w: run %s has no item %q", errNotFound, run.ID, id)
	}
	if b := res.Manifest.BaselineC1; b != nil {
		d.C1From = b.Run
	}
	obs, err := res.Item(r.Context(), index)
	if err != nil {
		return err
	}
	d.Arms = itemArms(res, obs)
	s.render(w, "framing-item", "item "+id, run.ID, d)
	return nil
}

// ItemPageSize is how many items one page of the item list shows.
const ItemPageSize = 50

type itemRow struct {
	Item   framing.Item
	Arms   []armView
	Flip   bool
	Flips  int
	Unread int
}

type itemsPage struct {
	Run        store.Run
	ArmNames   []string
	Rows       []itemRow
	Filter     string // "", "flips", "deference" or "skepticism"
	Total      int
	Items      int
	Page       int
	Pages      int
	Prev, Next string
}

// framingItems serves /runs/{run}/items: every item of the run with the
// four answers of each arm and the flips they make; ?flips= keeps the items
// with a flip (any, deference or skepticism) in some arm.
func (s *Server) framingItems(w http.ResponseWriter, r *http.Request, run store.Run) error {
	if err := s.itemPages(r.Context(), run); err != nil {
		return err
	}
	q := r.URL.Query()
	d := itemsPage{Run: run, Filter: q.Get("flips")}
	switch d.Filter {
	case "", "any", framing.FlipDeference, framing.FlipSkepticism:
	default:
		return fmt.Errorf("%w: flips=%q: use any, %s or %s", errBadRequest, d.Filter, framing.FlipDeference, framing.FlipSkepticism)
	}
	res, err := study.LoadFraming(r.Context(), s.st, run.ID)
	if err != nil {
		return err
	}
	for _, a := range res.Snapshot.Design.Arms() {
		d.ArmNames = append(d.ArmNames, a.Name())
	}
	d.Page, _ = strconv.Atoi(q.Get("page"))
	d.Page = max(1, d.Page)
	from := (d.Page - 1) * ItemPageSize
	d.Items = len(res.Snapshot.Items)
	err = res.EachItem(r.Context(), func(obs *study.ItemObservations) error {
		it := res.Snapshot.Items[obs.Index]
		arms := itemArms(res, obs)
		row := itemRow{Item: it, Arms: arms}
		for _, a := range arms {
			for _, f := range a.Flips {
				switch {
				case f.Flip == framing.FlipUnread || f.Flip == framing.FlipC2Unread:
					row.Unread++
				case f.Flip != framing.FlipNone && (d.Filter == "" || d.Filter == "any" || d.Filter == f.Flip):
					row.Flip = true
					row.Flips++
				}
			}
		}
		if d.Filter != "" && !row.Flip {
			return nil
		}
		if d.Total >= from && d.Total < from+ItemPageSize {
			d.Rows = append(d.Rows, row)
		}
		d.Total++
		return nil
	})
	if err != nil {
		return err
	}
	d.Pages = max(1, (d.Total+ItemPageSize-1)/ItemPageSize)
	link := func(p int) string {
		v := url.Values{"page": {strconv.Itoa(p)}}
		if d.Filter != "" {
			v.Set("flips", d.Filter)
		}
		return "?" + v.Encode()
	}
	if d.Page > 1 {
		d.Prev = link(d.Page - 1)
	}
	if d.Page < d.Pages {
		d.Next = link(d.Page + 1)
	}
	s.render(w, "framing-items", "items of "+run.ID, run.ID, d)
	return nil
}
