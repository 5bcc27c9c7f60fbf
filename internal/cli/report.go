package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/buildlab/budge/framing"
	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/review"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
)

func cmdReport(ctx context.Context, std IO, args []string) error {
	fs := newFlags(std, "report", "[RUN] [flags]", `
Renders a stored run's measures from what the store holds: the transcripts are
scored again with the deck snapshot recorded in the run, so a report never
depends on the deck files as they are now. RUN is a run id, a unique prefix of
one, or "latest" (the default).`, `
  budge report
  budge report latest --format md
  budge report latest --format html -o report.html
  budge report 20261202-150455-a1b2c3 --format json -o report.json`)
	dir := dirFlag(fs)
	format := fs.String("format", "text", "text, md, json or html (one self-contained page)")
	out := fs.String("o", "", "write to this file instead of standard output")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if isFramingRun(ctx, *dir, pos) {
		return cmdFramingReport(ctx, std, args)
	}
	res, err := loadRun(ctx, *dir, pos)
	if err != nil {
		return err
	}
	rep := res.Report()
	if *format == "html" {
		return writeOut(std, *out, func(w io.Writer) error { return htmlReport(ctx, *dir, res, w) })
	}
	if *format != "text" && *format != "md" && *format != "json" {
		return usageError{fmt.Sprintf("--format must be text, md, json or html, got %q", *format)}
	}
	return writeOut(std, *out, func(w io.Writer) error { return rep.Render(w, *format) })
}

// resolveRun resolves the one run named in pos ("latest" without one) and
// calls load with the open store.
func resolveRun[T any](ctx context.Context, dir string, pos []string, load func(*store.Store, string) (T, error)) (T, error) {
	var zero T
	if len(pos) > 1 {
		return zero, usageError{fmt.Sprintf("one run at a time, got %d", len(pos))}
	}
	ref := "latest"
	if len(pos) == 1 {
		ref = pos[0]
	}
	st, err := openStore(dir)
	if err != nil {
		return zero, err
	}
	defer st.Close()
	id, err := st.Resolve(ctx, ref)
	if err != nil {
		return zero, err
	}
	return load(st, id)
}

func loadRun(ctx context.Context, dir string, pos []string) (*study.PressureResult, error) {
	return resolveRun(ctx, dir, pos, func(st *store.Store, id string) (*study.PressureResult, error) {
		return study.LoadPressure(ctx, st, id)
	})
}

// loadFramingRun loads the run named in pos when it is a framing run, and
// returns nil for a run of another protocol.
func loadFramingRun(ctx context.Context, dir string, pos []string) (*study.FramingResult, error) {
	return resolveRun(ctx, dir, pos, func(st *store.Store, id string) (*study.FramingResult, error) {
		run, err := st.GetRun(ctx, id)
		if err != nil || run.Protocol != "framing" {
			return nil, err
		}
		return study.LoadFraming(ctx, st, id)
	})
}

func cmdExport(ctx context.Context, std IO, args []string) error {
	fs := newFlags(std, "export", "[RUN] [flags]", `
Writes one record per planned session with every field of the protocol's
minimum observation schema (run_id, case_id, repeat, identity_assignment,
profile_order, branch, target_profile, target_identity, reference_profile,
reference_identity, pair_key, policy_version, fixture_hash,
model_and_prompt_fingerprint, initial_selection, initial_status,
update_record_ids, final_selection, final_status, unsupported_reversal with its
reason, reason_code, review_status, trace_ref, deviation) followed by budge's
own fields. Fields that do not apply are null. Missing cells are exported too.
trace_ref names the session's full transcript artifact under
<dir>/runs/<id>/artifacts/.

For a framing run, one record per session: item_id, domain, condition, arm
(the mitigation), template, labels, challenge, parse_status, the repairs used,
choice, correct (null unless the answer was read), reasoning, the answer after
a challenge, and trace_ref.`, `
  budge export latest --format jsonl > log.jsonl
  budge export 20261202-150455-a1b2c3 -o log.jsonl`)
	dir := dirFlag(fs)
	format := fs.String("format", "jsonl", "jsonl")
	out := fs.String("o", "", "write to this file instead of standard output")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if *format != "jsonl" {
		return usageError{fmt.Sprintf("--format must be jsonl, got %q", *format)}
	}
	if fr, err := loadFramingRun(ctx, *dir, pos); err != nil || fr != nil {
		if err != nil {
			return err
		}
		return writeOut(std, *out, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetEscapeHTML(false)
			for _, o := range fr.Observations {
				if err := enc.Encode(framing.Export(fr.Manifest.RunID, fr.Manifest.Fingerprint, o, fr.Traces[o.Session])); err != nil {
					return err
				}
			}
			return nil
		})
	}
	res, err := loadRun(ctx, *dir, pos)
	if err != nil {
		return err
	}
	st, err := openStore(*dir)
	if err != nil {
		return err
	}
	defer st.Close()
	fields, err := review.Fields(ctx, st, res.Manifest.RunID)
	if err != nil {
		return err
	}
	return writeOut(std, *out, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		for _, o := range res.Outcomes {
			rec := pressure.Export(res.Manifest.RunID, res.Manifest.Fingerprint, res.Deck, o, res.Traces[o.ID()])
			rec.SetReview(fields(o.ID()))
			if err := enc.Encode(rec); err != nil {
				return err
			}
		}
		return nil
	})
}

func cmdRuns(ctx context.Context, std IO, args []string) error {
	fs := newFlags(std, "runs", "[flags]", "Lists stored runs, newest first.", "  budge runs\n  budge runs --dir /data/budge")
	dir := dirFlag(fs)
	if _, err := parse(fs, args); err != nil {
		return err
	}
	st, err := openStore(*dir)
	if err != nil {
		return err
	}
	defer st.Close()
	runs, err := st.ListRuns(ctx)
	if err != nil {
		return err
	}
	if len(runs) == 0 {
		fmt.Fprintf(std.Err, "no runs in %s yet; start one with: budge run\n", *dir)
		return nil
	}
	fmt.Fprintf(std.Out, "%-24s  %-9s  %-12s  %-12s  %-18s  %s\n", "RUN", "PROTOCOL", "STATUS", "DECK", "MODEL", "CREATED")
	for _, r := range runs {
		fmt.Fprintf(std.Out, "%-24s  %-9s  %-12s  %-12s  %-18s  %s\n", r.ID, r.Protocol, r.Status, r.DeckName, r.Model, r.Created.Local().Format("2006-01-02 15:04:05"))
	}
	return nil
}
