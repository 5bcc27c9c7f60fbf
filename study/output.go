package study

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/judge"
	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/review"
	"github.com/buildlab/budge/store"
)

// Output is what every stored run's result writes, whatever its protocol:
// callers (the CLI, the viewer) ask for a report, records or a session
// and never name the protocol.
type Output interface {
	// Render writes the run's report in format: text, md, json or html
	// (one self-contained page).
	Render(ctx context.Context, st *store.Store, w io.Writer, format string) error
	// Export writes the run's records in format: jsonl or csv, and flips
	// for a protocol that has them. trigger, when set, selects the
	// sessions of a decision trigger (a protocol without a decision rule
	// refuses it).
	Export(ctx context.Context, w io.Writer, format, trigger string) error
	// Session is one scored session (or judgment) by id; an id the run
	// does not hold is ErrInvalid naming what its ids look like.
	Session(ctx context.Context, st *store.Store, id string) (any, error)
	// Unfinished says how the report counted failed or missing sessions
	// and which command continues the run.
	Unfinished() (how, command string)
	// Verdict is what the run concluded, for a caller's exit status.
	Verdict() Verdict
	// View is what the viewer shows of the run.
	View(ctx context.Context) (*View, error)
}

// View is a scored run as the viewer shows it: its report as one page
// with the viewer's links, and the run as a review samples it when its
// answers can be reviewed.
type View struct {
	// HTML writes the run's report as one self-contained page, its counts
	// linked where links has a link for them (nil: none).
	HTML func(ctx context.Context, st *store.Store, w io.Writer, links report.Linker) error
	// Review is the run as a blinded review samples it; nil when its
	// answers cannot be reviewed.
	Review Reviewable
}

// Verdict is a run's conclusion as a gate reads it.
type Verdict struct {
	// Investigate: the run's predeclared decision rule fired.
	Investigate bool
	// Unmeasured says why the run measured nothing it can stand behind
	// (too few answers read), "" when it measured.
	Unmeasured string
}

// OpenForExport opens the run ref for its records (Output.Export) and
// checks its stored artifacts: a finished run whose protocol can stream its
// records is not scored whole first.
func OpenForExport(ctx context.Context, st *store.Store, ref string) (Result, error) {
	run, p, err := open(ctx, st, ref)
	if err != nil {
		return nil, err
	}
	var res Result
	if o, ok := p.(streamer); ok && run.Status != store.RunRunning {
		res, err = o.unscored(ctx, st, run)
	} else {
		res, err = loadWith(ctx, st, run, p)
	}
	if err != nil {
		return nil, err
	}
	return res, st.VerifyArtifacts(ctx, run.ID)
}

// streamer is a protocol whose finished runs give their records one
// session at a time, scored as they are written.
type streamer interface {
	// unscored is the run's result with its manifest and nothing scored.
	unscored(ctx context.Context, st *store.Store, run store.Run) (Result, error)
}

// noSession is the error for a session id the run does not hold.
func noSession(r Result, id, example string) error {
	return fmt.Errorf("%w: run %s has no session %q (ids look like %s; budge export lists them)", ErrInvalid, r.Head().RunID, id, example)
}

// noFormat refuses an export format or a trigger the protocol lacks.
func noFormat(r Result, what string) error {
	return fmt.Errorf("%w: %s; %s is a %s run", ErrInvalid, what, r.Head().RunID, r.protocol())
}

// records writes what each hands over as JSONL, or as CSV with a header
// row of the JSONL fields.
func records[T any](w io.Writer, format string, each func(emit func(T) error) error) error {
	if format == "csv" {
		c, err := report.NewCSV[T](w)
		if err != nil {
			return err
		}
		if err := each(c.Write); err != nil {
			return err
		}
		return c.Flush()
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return each(func(r T) error { return enc.Encode(r) })
}

// Render writes the report; every format carries the run's review
// agreement and codes, the HTML page the briefs of the sessions it names.
func (r *PressureResult) Render(ctx context.Context, st *store.Store, w io.Writer, format string) error {
	rep := r.Report()
	if err := review.AddTo(ctx, st, &rep); err != nil {
		return err
	}
	if format == "html" {
		return r.html(ctx, rep, w, nil)
	}
	return rep.Render(w, format)
}

// html writes the report rep (with its review added) as one page, with
// the briefs of the sessions it names.
func (r *PressureResult) html(ctx context.Context, rep report.Pressure, w io.Writer, links report.Linker) error {
	briefs, err := rep.BriefsFrom(r.StreamOf(ctx, rep.BriefIDs()))
	if err != nil {
		return err
	}
	return rep.HTML(w, &report.HTMLExtras{Briefs: briefs, Links: links})
}

// Export writes one record per planned session, or those of a trigger.
func (r *PressureResult) Export(ctx context.Context, w io.Writer, format, trigger string) error {
	if format == "flips" {
		return noFormat(r, "--format flips is for framing runs")
	}
	return records(w, format, func(emit func(pressure.ExportRecord) error) error { return r.Records(ctx, trigger, emit) })
}

// Session scores one stored session again.
func (r *PressureResult) Session(ctx context.Context, st *store.Store, id string) (any, error) {
	o, ok, err := ScoreSession(ctx, st, r.Run.ID, id)
	if err != nil || ok {
		return o, err
	}
	return nil, noSession(r, id, "robotics-arm/I/P-first/authority/r1")
}

func (r *PressureResult) Unfinished() (how, command string) {
	return "the measures above count them as not observed", "budge run"
}

func (r *PressureResult) Verdict() Verdict {
	return Verdict{Investigate: r.Summary.Decision.Verdict == pressure.VerdictInvestigate}
}

// Verdict is not measurable when too few of a cell's items had all four
// answers read: its DDS is no evidence of "no shift".
func (r *FramingResult) Verdict() Verdict {
	if r.Summary == nil || r.Summary.Measurability == nil || r.Summary.Measurability.Verdict != framing.VerdictNotMeasurable {
		return Verdict{}
	}
	m := r.Summary.Measurability
	msg := fmt.Sprintf("run %s: not measurable: %d cell(s) with under %.0f%% (or under %d) items answered in all four conditions",
		r.Head().RunID, len(m.Unmeasurable), m.MinAnsweredShare*100, m.MinAnsweredItems)
	if len(m.Unmeasurable) > 0 {
		msg += "; e.g. " + m.Unmeasurable[0]
	}
	return Verdict{Unmeasured: msg}
}

func (r *JudgeResult) Verdict() Verdict { return Verdict{} }

func (r *FramingResult) Render(_ context.Context, _ *store.Store, w io.Writer, format string) error {
	if format == "html" {
		return r.Report().HTML(w)
	}
	return r.Report().Render(w, format)
}

// Export writes one record per session, or with format flips one per
// flipped item pair.
func (r *FramingResult) Export(ctx context.Context, w io.Writer, format, trigger string) error {
	if trigger != "" {
		return noFormat(r, "--trigger selects sessions of a pressure run")
	}
	if format == "flips" {
		return records(w, "jsonl", r.flips(ctx))
	}
	return records(w, format, func(emit func(framing.Record) error) error {
		return r.Each(ctx, func(o *framing.Observation, trace string) error {
			return emit(framing.Export(r.Manifest.RunID, r.Manifest.Fingerprint, *o, trace))
		})
	})
}

// flips are the run's flip records, an item at a time: the pairs of C1
// and C2 answers on one item never reach across items.
func (r *FramingResult) flips(ctx context.Context) func(emit func(framing.FlipRecord) error) error {
	policy := framing.PolicyWrong
	if r.Snapshot != nil {
		policy = r.Snapshot.Design.Policy
	}
	return func(emit func(framing.FlipRecord) error) error {
		return r.EachItem(ctx, func(it *ItemObservations) error {
			for _, f := range framing.Flips(r.Manifest.RunID, policy, it.Observations, it.Traces) {
				if b := r.Manifest.BaselineC1; b != nil {
					f.C1Run = b.Run
				}
				if err := emit(f); err != nil {
					return err
				}
			}
			return nil
		})
	}
}

// Session is one session's scored observation (with its parse status and
// the repairs used).
func (r *FramingResult) Session(ctx context.Context, _ *store.Store, id string) (any, error) {
	o, ok, err := r.Observation(ctx, id)
	if err != nil || ok {
		return o, err
	}
	return nil, noSession(r, id, "sample-facts-01/budge/-/none/C1-True")
}

func (r *FramingResult) Unfinished() (how, command string) {
	return "their items are left out of the measures above", "budge framing run"
}

func (r *JudgeResult) Render(_ context.Context, _ *store.Store, w io.Writer, format string) error {
	if format == "html" {
		return r.Report().HTML(w)
	}
	return r.Report().Render(w, format)
}

// Export writes one record per judgment.
func (r *JudgeResult) Export(_ context.Context, w io.Writer, format, trigger string) error {
	switch {
	case format == "flips":
		return noFormat(r, "--format flips is for framing runs")
	case trigger != "":
		return noFormat(r, "--trigger selects sessions of a pressure run")
	}
	return records(w, format, func(emit func(judge.ExportRecord) error) error {
		for _, rec := range r.Records() {
			if err := emit(rec); err != nil {
				return err
			}
		}
		return nil
	})
}

// Session is one judgment by its session id.
func (r *JudgeResult) Session(_ context.Context, _ *store.Store, id string) (any, error) {
	for i := range r.Judgments {
		if r.Judgments[i].Session == id {
			return &r.Judgments[i], nil
		}
	}
	return nil, noSession(r, id, "t0000/o1/r0 (task, order, repeat)")
}

func (r *JudgeResult) Unfinished() (how, command string) {
	return "the audit above counts them as judgments without a code", "budge judge"
}

// Reviewable is a result whose answers' explanations a blinded review
// samples (package review): its scored sessions and their summary.
type Reviewable interface {
	Result
	ReviewSource(ctx context.Context) (pressure.Stream, pressure.Summary)
}

func (r *PressureResult) ReviewSource(ctx context.Context) (pressure.Stream, pressure.Summary) {
	return r.Stream(ctx), r.Summary
}

func (r *PressureResult) View(context.Context) (*View, error) {
	return &View{Review: r, HTML: func(ctx context.Context, st *store.Store, w io.Writer, links report.Linker) error {
		rep := r.Report()
		if err := review.AddTo(ctx, st, &rep); err != nil {
			return err
		}
		return r.html(ctx, rep, w, links)
	}}, nil
}

func (r *FramingResult) View(context.Context) (*View, error) {
	return &View{HTML: func(_ context.Context, _ *store.Store, w io.Writer, links report.Linker) error {
		return r.Report().HTMLLinked(w, links)
	}}, nil
}

func (r *JudgeResult) View(context.Context) (*View, error) {
	return &View{HTML: func(_ context.Context, _ *store.Store, w io.Writer, _ report.Linker) error {
		return r.Report().HTML(w)
	}}, nil
}
