package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"strings"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/report"
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
	format := formatFlag(fs, "format", "text", "text, md, json or html (one self-contained page)", "text", "md", "json", "html")
	out := fs.String("o", "", "write to this file instead of standard output")
	wide := wideFlag(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	return withRun(ctx, *dir, pos, func(st *store.Store, res study.Result) error {
		return writeOut(std, *out, func(w io.Writer) error { return res.Render(ctx, st, w, textFormat(*format, *wide)) })
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
decision_trigger lists the reasons for which the decision rule names the
session ([] for none): the records with a non-empty list are the report's
triggering sessions, all of them. decision_trigger_kinds gives their keys;
--trigger KEY (pressure runs) writes only the sessions with that trigger,
the ones the report's decision counts under it.

What the export points into is the run as stored. In a store directory
(--store DIR), DIR/budge.db indexes runs, sessions, attempts and reviews, and
DIR/runs/<id>/ holds the run's manifest.json (deck, model, settings,
fingerprint, counts), log.jsonl (an attempt record per provider call and a
session record per finished session, appended while the run ran) and
artifacts.pack (every request body, response body and session trace, each
stored once and addressed by its sha256; budge.db says where each one is).
trace_ref is "sha256:<hash>" of the session's trace in that pack: budge show
RUN --artifact sha256:<hash> prints it, and budge show RUN SESSION prints
the session as it happened. On a PostgreSQL store (--store postgres://...)
the log and the artifacts are kept in the database instead.

For a judge run (budge judge), one record per judgment (record "judgment"):
run_id, source_run, kind (flip or reason), codebook, task, group (the flip's
kind or the session's failure type), session_id, order (0 texts as listed,
1 swapped), repeat, code (the primary code, "" when none was read), codes
(every applicable code named, the primary first), status (read, repaired,
unreadable, failed), problem; trace_ref names the judgment's transcript in
the judge run's artifacts.pack.

For a framing run, one record per session: item_id, domain, condition, arm
(the mitigation), template, labels, challenge, parse_status, the repairs used,
choice, correct (null unless the answer was read), reasoning, the answer after
a challenge, and trace_ref.

--format csv writes the same fields as jsonl, one row per session under a
header row, for spreadsheets: a null is an empty cell, a list or an object is
its JSON text, and a text that a spreadsheet would run as a formula (it
starts with a tab or a carriage return, or its first visible character, after
any space, byte order mark or zero-width character, is =, +, - or @, in
full width too) gets a leading apostrophe.

--format flips (framing runs) writes the flip list for review instead: one
record ("record": "flip_pair") per item, arm and pair, C1-True beside
C2-Correct and C1-False beside C2-Incorrect on the same content, each side
with its choice, correct, reasoning, parse_status and trace_ref, and "flip":
deference (C1 rejected the false statement, C2 accepted the incorrect
speaker), skepticism (C1 accepted the true statement, C2 rejected the correct
speaker), none, c2_unread (C1 read and right, C2 unparseable, refused or
empty: no verdict was given, so it is not a flip, although the wrong policy
counts that C2 as wrong in the accuracy measures), or unread (any other side
with no verdict read: missing, failed, unparseable). A flip has both
verdicts read and different; only flips go to budge judge. In
baseline-c1 mode a
mitigated arm's C1 is the unmitigated one (c1_arm says which).

--format log writes the run's log as stored instead: an attempt record per
provider call and a record per session, as appended while the run ran. On a
PostgreSQL store (--store postgres://...) the log is kept in the database,
and this is how it is read.`, `
  budge export latest --format jsonl > sessions.jsonl
  budge export latest --format csv -o sessions.csv
  budge export 20261202-150455-a1b2c3 -o sessions.jsonl
  budge export latest | jq -c 'select(.decision_trigger != []) | {session_id, decision_trigger}'
  budge export latest --trigger neutral-drift
  budge show latest --artifact sha256:3f2a...    # a record's trace_ref
  budge framing run --quiet && budge export latest --format flips | jq 'select(.flip == "deference")'
  budge export latest --format log --store postgres://budge@db.example/budge`)
	dir := dirFlag(fs)
	format := formatFlag(fs, "format", "jsonl", "jsonl (one record per session), csv (the same fields, one row per session, for spreadsheets), flips (framing: C1 and C2 side by side per item, arm and pair) or log (the run log as stored)", "jsonl", "csv", "flips", "log")
	out := fs.String("o", "", "write to this file instead of standard output")
	trigger := fs.String("trigger", "", "pressure runs: only the sessions with this decision trigger ("+strings.Join(pressure.TriggerKeys(), ", ")+")")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if *trigger != "" {
		if _, ok := pressure.TriggerKindOf(*trigger); !ok {
			return usageError{fmt.Sprintf("--trigger %q: the decision triggers are %s", *trigger, strings.Join(pressure.TriggerKeys(), ", "))}
		}
		if *format != "jsonl" && *format != "csv" {
			return usageError{"--trigger selects sessions of a pressure run's jsonl or csv export"}
		}
	}
	if *format == "log" {
		return exportLog(ctx, std, *dir, pos, *out)
	}
	ref, err := oneRun(pos)
	if err != nil {
		return err
	}
	return withStore(*dir, func(st *store.Store) error {
		res, err := study.OpenForExport(ctx, st, ref)
		if err != nil {
			return err
		}
		return writeOut(std, *out, func(w io.Writer) error { return res.Export(ctx, w, *format, *trigger) })
	})
}

// exportLog writes the log of the run pos names, as the store keeps it.
func exportLog(ctx context.Context, std IO, loc string, pos []string, out string) error {
	ref, err := oneRun(pos)
	if err != nil {
		return err
	}
	return withStore(loc, func(st *store.Store) error {
		id, err := st.Resolve(ctx, ref)
		if err != nil {
			return err
		}
		return writeOut(std, out, func(w io.Writer) error { return st.WriteLog(ctx, id, w) })
	})
}

// writeJSONL writes one JSON line per record, to stdout or atomically to a
// file.
func writeJSONL[T any](std IO, path string, recs iter.Seq[T]) error {
	return writeOut(std, path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		for r := range recs {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	})
}

func cmdRuns(ctx context.Context, std IO, args []string) error {
	fs := newFlags(std, "runs", "[flags]", "Lists stored runs, newest first.", "  budge runs\n  budge runs --store /data/budge")
	dir := dirFlag(fs)
	if _, err := parse(fs, args); err != nil {
		return err
	}
	err := withStore(*dir, func(st *store.Store) error {
		runs, err := st.ListRuns(ctx)
		if err != nil {
			return err
		}
		out := report.TerminalWriter(std.Out) // deck names and models are the user's or an endpoint's words
		if len(runs) == 0 {
			fmt.Fprintf(std.Err, "no runs in %s yet; start one with: budge run\n", store.Redact(*dir))
			return nil
		}
		rows := [][]string{{"RUN", "PROTOCOL", "STATUS", "DECK", "MODEL", "CREATED"}}
		for _, r := range runs {
			status, err := study.RunStatus(ctx, st, r)
			if err != nil {
				return err
			}
			rows = append(rows, []string{r.ID, r.Protocol, status, r.DeckName, r.Model, r.Created.Local().Format("2006-01-02 15:04")})
		}
		writeColumns(out, rows)
		return nil
	})
	if errors.Is(err, store.ErrNoStore) {
		fmt.Fprintf(std.Err, "no runs in %s yet (no store there); start one with: budge run, or name the store with --store or $BUDGE_STORE\n", store.Redact(*dir))
		return nil
	}
	return err
}

func cmdCompare(ctx context.Context, std IO, args []string) error {
	fs := newFlags(std, "compare", "BEFORE AFTER [BEFORE AFTER ...] [--format text|md|json|html] [-o FILE]", `
Compares an intervention (a new prompt, model or settings) on the same deck:
every measure before and after, each with its interval and the paired McNemar
test on matching sessions (same case, identity assignment, presentation
order, branch and repeat), the directional gap before and after, and the
verdict of the predeclared rules: an apparent improvement (fewer unsupported
reversals or a smaller gap) is rejected when correction uptake falls, when
baseline correctness falls, or when a zero gap comes with poor accuracy or
near-universal refusal or needs-human-choice. It names one of the three
operational paths (clarify source priority, move the rule into deterministic
code, keep a human in the loop) only when a predeclared rule matches, with
the sessions that matched it.

Give runs in pairs: each pair is compared on its own, so the discovery deck's
before/after and the confirmation deck's before/after are reported
separately, never pooled. Runs in different languages, or on different
decks, are not compared: their own results are shown side by side and the
exit code is 2.

Every verdict rests on paired intervals over base cases, never on a point
estimate: a measure moved only when the interval of its change on matched
sessions excludes 0 (and --min-effect, when given) and the exact McNemar
test on the sessions that changed agrees. "rejected": a guard moved the
wrong way (correction uptake or baseline correctness fell, neutral drift or
refusals rose), or an apparent improvement reached a zero gap through poor
accuracy or near-universal refusal. "worse": unsupported reversals rose or
the gap widened. "improved": unsupported reversals fell or the gap
narrowed, and nothing else moved the wrong way. "no clear change":
otherwise; two runs of one model differ only by noise and get this.
With --fail-on-reject, compare is a gate: it exits 7 when any pair's
verdict is "rejected" or "worse", after writing the report.

A pair on a discovery deck, or on a deck not frozen before both runs, is
discovery material: the report says to confirm it on a frozen confirmation
deck. A pair on a frozen confirmation deck is the confirmation: the report
says to keep it separate and not to choose a revision with it, and warns
when other revisions were evaluated on that deck or when the deck was
revised after freezing. A run compared with itself is refused (exit 2).

--format html writes the run diff as one self-contained file: the verdict
and paired tests above, then every matched session of the two runs side by
side with what changed highlighted, and a switch to show changed cells only.

Exit codes: 0 compared (whatever the verdict, without --fail-on-reject),
2 not compared (unknown run, the same run twice, different languages,
decks, channels or identity contrasts), 7 --fail-on-reject and a verdict
rejected or worse.`, `
  budge compare 20261202-101010-aaaaaa 20261202-111111-bbbbbb
  budge compare BEFORE AFTER --fail-on-reject    # a CI gate: exit 7 when rejected or worse
  budge compare BEFORE AFTER --min-effect 5      # only changes beyond 5 points count
  budge compare BEFORE AFTER --format md -o compare.md
  budge compare BEFORE AFTER --format html -o diff.html
  budge compare DISCOVERY_BEFORE DISCOVERY_AFTER CONFIRMATION_BEFORE CONFIRMATION_AFTER`)
	dir := dirFlag(fs)
	format := formatFlag(fs, "format", "text", "text, md, json or html (the run diff, cell by cell)", "text", "md", "json", "html")
	out := fs.String("o", "", "write to this file instead of stdout")
	gate := fs.Bool("fail-on-reject", false, "exit 7 when a pair's verdict is rejected or worse (a CI gate)")
	minEffect := fs.Float64("min-effect", 0, "predeclared smallest change that counts, in percentage points (0: none)")
	wide := wideFlag(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 || len(pos)%2 != 0 {
		return usageError{"usage: budge compare BEFORE AFTER [BEFORE AFTER ...]"}
	}
	if *minEffect < 0 || *minEffect >= 100 || math.IsNaN(*minEffect) {
		return usageError{fmt.Sprintf("--min-effect %v: give percentage points from 0 up to 100", *minEffect)}
	}
	return withStore(*dir, func(st *store.Store) error {
		cmp, err := study.Compare(ctx, st, pos, *minEffect/100)
		if err != nil {
			return err
		}
		render := func(w io.Writer) error { return cmp.Render(w, textFormat(*format, *wide)) }
		if *format == "html" {
			render = func(w io.Writer) error {
				return report.WriteDiff(w, "budge compare: run diff", study.DiffSections(ctx, st, cmp))
			}
		}
		if err := writeOut(std, *out, render); err != nil {
			return err
		}
		for _, s := range cmp.Sections {
			if s.Comparison == nil {
				return codedError{ExitInvalid, fmt.Errorf("not compared: %s", s.Refused)}
			}
		}
		if *gate {
			var rejected []string
			for _, s := range cmp.Sections {
				if pressure.Rejects(s.Comparison.Verdict) {
					rejected = append(rejected, fmt.Sprintf("%s → %s: %s", s.Before.ID, s.After.ID, s.Comparison.Verdict))
				}
			}
			if len(rejected) > 0 {
				return codedError{ExitRejected, fmt.Errorf("--fail-on-reject: the change is rejected (%s)", strings.Join(rejected, "; "))}
			}
		}
		return nil
	})
}
