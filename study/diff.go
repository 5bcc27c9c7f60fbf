package study

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"

	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/store"
)

// Diff is the run diff of two runs: budge compare's section for the pair
// and every cell of the two runs side by side. Each streams the cells.
type Diff struct {
	Head report.DiffHead
	each func(ctx context.Context, fn func(c report.DiffCell) error) error
}

// PressureDiffColumns are the fields a pressure cell shows for each run.
var PressureDiffColumns = []report.DiffColumn{
	{Name: "session", Compared: true},
	{Name: "first answer", Compared: true},
	{Name: "final answer", Compared: true},
	{Name: "unsupported reversal", Compared: true},
	{Name: "neutral drift", Compared: true},
	{Name: "read the update", Compared: true},
	{Name: "explanation contradicts selection", Compared: true},
}

// FramingDiffColumns are the fields a framing cell shows for each run.
var FramingDiffColumns = []report.DiffColumn{
	{Name: "parse status", Compared: true},
	{Name: "choice", Compared: true},
	{Name: "correct", Compared: true},
	{Name: "repairs", Compared: true},
	{Name: "after challenge", Compared: true},
	{Name: "reasoning", Compared: false},
}

// OpenDiff reads two stored runs (before, after) of one protocol and
// prepares their diff. A pressure pair gets budge compare's section
// (ComparePair: the same measures, paired tests and verdict); its cells
// are read again from the store in plan order when Each runs, a batch at a
// time. A framing pair is scored as its report is (its observations, not
// its transcripts, are in memory).
func OpenDiff(ctx context.Context, st *store.Store, before, after string) (*Diff, error) {
	return openDiff(ctx, st, before, after, true)
}

// OpenDiffCells is OpenDiff without budge compare's section (Head.Section
// is empty for a pressure pair): for a caller that has it already and needs
// the cells again. Its cells are read without scoring the runs' measures.
func OpenDiffCells(ctx context.Context, st *store.Store, before, after string) (*Diff, error) {
	return openDiff(ctx, st, before, after, false)
}

// openDiff is OpenDiff; compare false leaves a pressure pair's section
// empty.
func openDiff(ctx context.Context, st *store.Store, before, after string, compare bool) (*Diff, error) {
	if before == after {
		return nil, fmt.Errorf("%w: a run diff needs two different runs, got %s twice", ErrInvalid, before)
	}
	rb, err := st.GetRun(ctx, before)
	if err != nil {
		return nil, err
	}
	ra, err := st.GetRun(ctx, after)
	if err != nil {
		return nil, err
	}
	if rb.Protocol != ra.Protocol {
		return nil, fmt.Errorf("%w: run %s is a %s run and run %s a %s run; a diff pairs runs of one protocol", ErrInvalid, rb.ID, rb.Protocol, ra.ID, ra.Protocol)
	}
	if KindOf(rb).Deck {
		return pressureDiff(ctx, st, rb, ra, compare)
	}
	return framingDiff(ctx, st, before, after)
}

// Each hands fn every cell in plan order; an error from fn stops it.
func (d *Diff) Each(ctx context.Context, fn func(c report.DiffCell) error) error {
	if d.each == nil {
		return nil
	}
	return d.each(ctx, fn)
}

func pressureDiff(ctx context.Context, st *store.Store, rb, ra store.Run, compare bool) (*Diff, error) {
	var sec report.CompareSection
	if compare {
		b, err := LoadPressure(ctx, st, rb.ID)
		if err != nil {
			return nil, err
		}
		a, err := LoadPressure(ctx, st, ra.ID)
		if err != nil {
			return nil, err
		}
		if sec, err = ComparePair(ctx, b, a, 0); err != nil {
			return nil, err
		}
	}
	d := &Diff{Head: report.DiffHead{Protocol: "pressure", Section: sec, Columns: PressureDiffColumns,
		Note: "A cell is one session: the same case, identity assignment, presentation order, branch and repeat in both runs."}}
	if rb.DeckHash != ra.DeckHash {
		// Different decks plan different sessions: nothing to match.
		d.Head.Note = "The runs used different decks: their sessions are not matched."
		return d, nil
	}
	// The cells need only the sessions scored again, not the runs' measures.
	b, a := &PressureResult{Run: rb, st: st}, &PressureResult{Run: ra, st: st}
	d.each = func(ctx context.Context, fn func(report.DiffCell) error) error {
		pos := 0
		return eachPair(ctx, b, a, func(bo, ao *pressure.Outcome) error {
			for _, c := range matchOutcomes(pos, bo, ao) {
				if err := fn(c); err != nil {
					return err
				}
			}
			pos++
			return nil
		})
	}
	return d, nil
}

// eachPair scores two stored runs of one deck again side by side, in plan
// order: fn gets the sessions of both at each plan position (nil past the
// end of the shorter plan). It stops at fn's first error and returns it,
// so that a page of cells reads no further than it shows. Memory holds a
// batch of each run.
func eachPair(ctx context.Context, before, after *PressureResult, fn func(b, a *pressure.Outcome) error) error {
	var errB error
	next, stop := iter.Pull(func(yield func(pressure.Outcome) bool) {
		err := before.Each(ctx, func(o *pressure.Outcome, _ string) error {
			if !yield(*o) {
				return errStop
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStop) {
			errB = err
		}
	})
	defer stop()
	err := after.Each(ctx, func(a *pressure.Outcome, _ string) error {
		b, ok := next()
		if !ok {
			if errB != nil {
				return errB
			}
			return fn(nil, a)
		}
		return fn(&b, a)
	})
	if err != nil {
		return err
	}
	for {
		b, ok := next()
		if !ok {
			return errB
		}
		if err := fn(&b, nil); err != nil {
			return err
		}
	}
}

// matchOutcomes makes the cells of one plan position: one cell when both
// runs planned the same session there (ComparePair matches the same way),
// otherwise one cell per side.
func matchOutcomes(pos int, b, a *pressure.Outcome) []report.DiffCell {
	missing := report.DiffSide{Missing: true}
	switch {
	case b != nil && a != nil && b.ID() == a.ID():
		return []report.DiffCell{report.NewDiffCell(pos, b.ID(), PressureDiffColumns, pressureSide(b), pressureSide(a))}
	case b != nil && a != nil:
		return []report.DiffCell{
			report.NewDiffCell(pos, b.ID(), PressureDiffColumns, pressureSide(b), missing),
			report.NewDiffCell(pos, a.ID(), PressureDiffColumns, missing, pressureSide(a)),
		}
	case b != nil:
		return []report.DiffCell{report.NewDiffCell(pos, b.ID(), PressureDiffColumns, pressureSide(b), missing)}
	case a != nil:
		return []report.DiffCell{report.NewDiffCell(pos, a.ID(), PressureDiffColumns, missing, pressureSide(a))}
	}
	return nil
}

// pressureSide is one run's reading of a session, in PressureDiffColumns
// order.
func pressureSide(o *pressure.Outcome) report.DiffSide {
	session := "complete"
	if o.Failure != "" {
		session = o.Failure
	}
	answer := func(st pressure.Status, a *pressure.Answer) string {
		s := string(st)
		if a != nil && a.Selection != "" {
			s += " " + a.Selection
		}
		return s
	}
	final := "—"
	if o.FinalStatus != nil {
		final = answer(*o.FinalStatus, o.Final)
	} else if o.FinalReason != "" {
		final = "— (" + o.FinalReason + ")"
	}
	read := "—"
	if o.ObservedUpdate != nil {
		read = strconv.FormatBool(*o.ObservedUpdate)
	}
	contra := "no"
	if len(o.Contradictions) > 0 {
		var ph []string
		for _, c := range o.Contradictions {
			ph = append(ph, c.Phase)
		}
		contra = "yes (" + strings.Join(ph, ", ") + ")"
	}
	return report.DiffSide{Fields: []string{session, answer(o.InitialStatus, &o.Initial), final, o.Reversal.Value, o.Drift.Value, read, contra}}
}

func framingDiff(ctx context.Context, st *store.Store, before, after string) (*Diff, error) {
	b, err := LoadFraming(ctx, st, before)
	if err != nil {
		return nil, err
	}
	a, err := LoadFraming(ctx, st, after)
	if err != nil {
		return nil, err
	}
	rb, ra := b.Report().Run, a.Report().Run
	sec := report.CompareSection{
		Before: report.RunInfo{ID: rb.ID, Protocol: rb.Protocol, Model: b.Manifest.Model, Fingerprint: b.Manifest.fingerprint(), Deck: b.Manifest.Data.Source},
		After:  report.RunInfo{ID: ra.ID, Protocol: ra.Protocol, Model: a.Manifest.Model, Fingerprint: a.Manifest.fingerprint(), Deck: a.Manifest.Data.Source},
	}
	d := &Diff{Head: report.DiffHead{Protocol: "framing", OwnMeasures: true, Columns: FramingDiffColumns,
		Note: "A cell is one session: the same item, template, speaker labels, mitigation (arm) and condition in both runs. " +
			"Reasoning is shown but not compared."}}
	if why := sameItems(b.Snapshot.Items, a.Snapshot.Items); why != "" {
		sec.Refused = "the runs judged different items (" + why + "): their sessions are not matched"
		d.Head.Note = ""
	} else {
		bo, _, err := b.Paired(ctx)
		if err != nil {
			return nil, err
		}
		ao, _, err := a.Paired(ctx)
		if err != nil {
			return nil, err
		}
		d.each = func(ctx context.Context, fn func(report.DiffCell) error) error {
			return eachFramingCell(ctx, bo, ao, fn)
		}
	}
	d.Head.Arms = framingArms(b.Summary, a.Summary)
	d.Head.Section = sec
	return d, nil
}

// sameItems says why two runs' item lists differ ("" when they hold the
// same items, by id and content, in the same order).
func sameItems(b, a []framing.Item) string {
	if len(b) != len(a) {
		return fmt.Sprintf("%d items and %d items", len(b), len(a))
	}
	for i := range b {
		if b[i].ID != a[i].ID || framing.ContentKey(b[i]) != framing.ContentKey(a[i]) {
			return fmt.Sprintf("item %d is %s in one and %s in the other, or its content differs", i+1, b[i].ID, a[i].ID)
		}
	}
	return ""
}

// eachFramingCell matches the observations of two framing runs by session
// id, in the plan order of the run before; sessions only the run after
// planned come last.
func eachFramingCell(ctx context.Context, bo, ao []framing.Observation, fn func(report.DiffCell) error) error {
	at := make(map[string]int, len(ao))
	for i := range ao {
		at[ao[i].Session] = i
	}
	seen := make([]bool, len(ao))
	missing := report.DiffSide{Missing: true}
	pos := 0
	for i := range bo {
		if err := ctx.Err(); err != nil {
			return err
		}
		after := missing
		if j, ok := at[bo[i].Session]; ok {
			after, seen[j] = framingSide(&ao[j]), true
		}
		if err := fn(report.NewDiffCell(pos, bo[i].Session, FramingDiffColumns, framingSide(&bo[i]), after)); err != nil {
			return err
		}
		pos++
	}
	for j := range ao {
		if !seen[j] {
			if err := fn(report.NewDiffCell(pos, ao[j].Session, FramingDiffColumns, missing, framingSide(&ao[j]))); err != nil {
				return err
			}
			pos++
		}
	}
	return nil
}

// framingSide is one run's reading of a framing session, in
// FramingDiffColumns order.
func framingSide(o *framing.Observation) report.DiffSide {
	choice, correct := "—", "—"
	if o.Status == framing.StatusAnswered {
		choice, correct = o.Choice, strconv.FormatBool(o.Correct)
	}
	repairs := "none"
	if len(o.Recovered) > 0 {
		repairs = strings.Join(o.Recovered, ", ")
	}
	after := "—"
	if r := o.AfterChallenge; r != nil {
		after = r.Status
		if r.Status == framing.StatusAnswered {
			after += " " + r.Choice
		}
	}
	status := o.Status
	if o.Problem != "" {
		status += ": " + o.Problem
	}
	return report.DiffSide{Fields: []string{status, choice, correct, repairs, after, o.Reasoning}}
}

// framingArms pairs the arms of two framing runs by name, in the order of
// the run before, then the arms only the run after has.
func framingArms(b, a *framing.Summary) []report.FramingArmPair {
	var out []report.FramingArmPair
	find := func(s *framing.Summary, name string) *framing.ArmSummary {
		if s == nil {
			return nil
		}
		for i := range s.Arms {
			if s.Arms[i].Name == name {
				return &s.Arms[i]
			}
		}
		return nil
	}
	if b != nil {
		for i := range b.Arms {
			out = append(out, report.FramingArmPair{Arm: b.Arms[i].Name, Before: &b.Arms[i], After: find(a, b.Arms[i].Name)})
		}
	}
	if a != nil {
		for i := range a.Arms {
			if find(b, a.Arms[i].Name) == nil {
				out = append(out, report.FramingArmPair{Arm: a.Arms[i].Name, After: &a.Arms[i]})
			}
		}
	}
	return out
}

// DiffSections are the diff sections of a comparison (budge compare
// --format html, written by report.WriteDiff): for each section of cmp, as
// budge compare computed it, the head with its verdict and paired tests,
// and every cell of its two runs side by side, read as the file is written.
func DiffSections(ctx context.Context, st *store.Store, cmp report.Compare) iter.Seq2[report.DiffSection, error] {
	return func(yield func(report.DiffSection, error) bool) {
		for _, sec := range cmp.Sections {
			d, err := openDiff(ctx, st, sec.Before.ID, sec.After.ID, false)
			if err != nil {
				yield(report.DiffSection{}, err)
				return
			}
			h := d.Head
			h.Section = sec
			each := func(fn func(report.DiffCell) error) error { return d.Each(ctx, fn) }
			if !yield(report.DiffSection{Head: h, Each: each}, nil) {
				return
			}
		}
	}
}
