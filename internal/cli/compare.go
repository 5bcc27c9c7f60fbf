package cli

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
)

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
		if r, refused := cmp.Refused(); refused {
			return codedError{ExitInvalid, fmt.Errorf("not compared: %s", r)}
		}
		if rejected := cmp.Rejected(); *gate && len(rejected) > 0 {
			return codedError{ExitRejected, fmt.Errorf("--fail-on-reject: the change is rejected (%s)", strings.Join(rejected, "; "))}
		}
		return nil
	})
}
