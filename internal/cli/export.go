package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"strings"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
)

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
