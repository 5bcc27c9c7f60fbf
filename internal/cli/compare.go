package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
)

func cmdCompare(ctx context.Context, std IO, args []string) error {
	fs := newFlags(std, "compare", "BEFORE AFTER [BEFORE AFTER ...] [--format text|md|json] [-o FILE]", `
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
exit code is 2.`, `
  budge compare 20261202-101010-aaaaaa 20261202-111111-bbbbbb
  budge compare BEFORE AFTER --format md -o compare.md
  budge compare DISCOVERY_BEFORE DISCOVERY_AFTER CONFIRMATION_BEFORE CONFIRMATION_AFTER`)
	dir := dirFlag(fs)
	format := formatFlag(fs, "format", "text", "text, md or json", "text", "md", "json")
	out := fs.String("o", "", "write to this file instead of stdout")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 2 || len(pos)%2 != 0 {
		return usageError{"usage: budge compare BEFORE AFTER [BEFORE AFTER ...]"}
	}
	return withStore(*dir, func(st *store.Store) error {
		cmp, err := study.Compare(ctx, st, pos)
		if err != nil {
			return err
		}
		if err := writeOut(std, *out, func(w io.Writer) error { return cmp.Render(w, *format) }); err != nil {
			return err
		}
		for _, s := range cmp.Sections {
			if s.Comparison == nil {
				return codedError{ExitInvalid, fmt.Errorf("not compared: %s", s.Refused)}
			}
		}
		return nil
	})
}
