package study

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/stats"
	"github.com/buildlab/budge/store"
)

// LanguageCaveat is the seed's caveat on comparing across languages.
const LanguageCaveat = "A deck in another language is written independently, not translated: a difference between " +
	"the two runs is not a measured language effect, and results are compared within one language only. " +
	"Each run's own results are shown side by side instead."

// Compare loads pairs of runs (before, after, before, after, ...) and
// compares each pair session by session; minEffect (a fraction, 0 for
// none) is the predeclared smallest change that counts. A pair in two
// languages, or on two different decks, is refused: each run's results are
// shown side by side instead, never pooled.
func Compare(ctx context.Context, st *store.Store, ids []string, minEffect float64) (report.Compare, error) {
	out := report.Compare{Version: 1}
	if len(ids) == 0 || len(ids)%2 != 0 {
		return out, fmt.Errorf("%w: compare needs runs in pairs: BEFORE AFTER [BEFORE AFTER ...], got %d", ErrInvalid, len(ids))
	}
	for i := 0; i < len(ids); i += 2 {
		b, err := LoadPressure(ctx, st, ids[i])
		if err != nil {
			return out, err
		}
		a, err := LoadPressure(ctx, st, ids[i+1])
		if err != nil {
			return out, err
		}
		if b.Run.ID == a.Run.ID {
			same := fmt.Sprintf("%q", ids[i])
			if ids[i] != ids[i+1] {
				same = fmt.Sprintf("%q and %q both name it", ids[i], ids[i+1])
			}
			return out, fmt.Errorf("%w: run %s is compared with itself (%s): a comparison needs two different runs, before and after the change",
				ErrInvalid, b.Run.ID, same)
		}
		sec, err := ComparePair(ctx, b, a, minEffect)
		if err != nil {
			return out, err
		}
		out.Sections = append(out.Sections, sec)
	}
	sameRevisions(out.Sections)
	return out, nil
}

// sameRevisions checks, when one compare holds a discovery pair and a
// confirmation pair, that the confirmation pair evaluates the same change
// (the same fingerprints: model, prompt, settings, channel) as the
// discovery pair, and says where the confirmation is.
func sameRevisions(secs []report.CompareSection) {
	var disc, conf []int
	for i, s := range secs {
		switch {
		case s.Comparison == nil:
		case s.Comparison.DeckKind == "confirmation":
			conf = append(conf, i)
		default:
			disc = append(disc, i)
		}
	}
	if len(disc) == 0 || len(conf) == 0 {
		return
	}
	for _, c := range conf {
		cs := &secs[c]
		for _, d := range disc {
			ds := &secs[d]
			if cs.Before.Fingerprint != ds.Before.Fingerprint || cs.After.Fingerprint != ds.After.Fingerprint {
				cs.Warnings = append(cs.Warnings, fmt.Sprintf("WARNING: this confirmation pair (fingerprints %s → %s) does not evaluate the same revisions "+
					"as the discovery pair %s → %s (fingerprints %s → %s): it does not confirm that change.",
					cs.Before.Fingerprint, cs.After.Fingerprint, ds.Before.ID, ds.After.ID, ds.Before.Fingerprint, ds.After.Fingerprint))
				continue
			}
			if ds.Comparison.Verdict == pressure.CompareImproved {
				ds.Advice += fmt.Sprintf(" The confirmation pair %s → %s in this comparison evaluates the same revisions on the %s deck: "+
					"read its result on its own, below.", cs.Before.ID, cs.After.ID, cs.Comparison.Deck)
			}
		}
	}
}

// ComparePair compares two scored runs, reading their sessions again side
// by side in plan order (pairOutcomes).
func ComparePair(ctx context.Context, b, a *PressureResult, minEffect float64) (report.CompareSection, error) {
	sec := report.CompareSection{Before: b.Report().Run, After: a.Report().Run, Warnings: []string{}}
	if err := freezeWarnings(ctx, &sec, b, a); err != nil {
		return sec, err
	}
	side := func() {
		sb, sa := b.Summary, a.Summary
		gapRate := func(s pressure.Summary, i int) stats.Rate {
			if len(s.PooledByDir) > i {
				return s.PooledByDir[i].Reversal
			}
			return stats.Rate{}
		}
		sec.SideBySide = []report.SideRow{
			{Measure: "baseline correctness", Before: sb.Baseline, After: sa.Baseline},
			{Measure: "unsupported reversal toward X (all families)", Before: gapRate(sb, 0), After: gapRate(sa, 0)},
			{Measure: "unsupported reversal toward Y (all families)", Before: gapRate(sb, 1), After: gapRate(sa, 1)},
			{Measure: pressure.UptakeMeasure(a.Manifest.Channel), Before: sb.Uptake.All, After: sa.Uptake.All},
			{Measure: "neutral drift", Before: sb.NeutralDrift, After: sa.NeutralDrift},
			{Measure: "ambiguous: needs-human-choice", Before: sb.AmbiguousCase.HumanChoice, After: sa.AmbiguousCase.HumanChoice},
		}
	}
	switch {
	case !pressure.SameLanguage(b.Deck.Language, a.Deck.Language):
		sec.Refused = fmt.Sprintf("the runs are in different languages (%s: %s, %s: %s); budge compares within one language only",
			b.Run.ID, b.Deck.Language, a.Run.ID, a.Deck.Language)
		sec.Caveat = LanguageCaveat
		side()
	case b.Deck.Hash != a.Deck.Hash:
		sec.Refused = fmt.Sprintf("the runs used different decks (%s %s sha256 %s; %s %s sha256 %s): sessions cannot be matched, "+
			"and discovery and confirmation results are reported separately, never pooled; compare each deck's before and after runs as their own pair",
			b.Deck.Name, b.Deck.Kind, short12(b.Deck.Hash), a.Deck.Name, a.Deck.Kind, short12(a.Deck.Hash))
		side()
	case b.Manifest.Channel != a.Manifest.Channel:
		sec.Refused = fmt.Sprintf("the runs gave the model its evidence through different channels (%s: %s, %s: %s): "+
			"a correction read from the trusted tool and one pasted as user-role text are different measures; compare runs on one channel",
			b.Run.ID, b.Manifest.Channel, a.Run.ID, a.Manifest.Channel)
		side()
	case !sameContrast(b.Deck.Identity, a.Deck.Identity):
		sec.Refused = fmt.Sprintf("the runs showed different identity contrasts (%s: %s; %s: %s): a change in the directional gap could come from the contrast, "+
			"not from the intervention; compare runs that declare the same --identities",
			b.Run.ID, contrastText(b.Deck.Identity), a.Run.ID, contrastText(a.Deck.Identity))
		side()
	default:
		cm := pressure.NewComparer(a.Deck, minEffect)
		if err := eachPair(ctx, b, a, func(bo, ao *pressure.Outcome) error {
			if bo != nil {
				cm.Before(bo)
			}
			if ao != nil {
				match := bo
				if bo != nil && bo.ID() != ao.ID() {
					match = nil
				}
				cm.After(ao, match)
			}
			return nil
		}); err != nil {
			return sec, err
		}
		c := cm.Comparison()
		sec.Comparison = &c
		sec.Advice = confirmationAdvice(b, a, c.Verdict)
	}
	return sec, nil
}

// freezeWarnings carries how the runs stand with respect to deck freezing
// into the comparison: a deck revised after it was frozen, and the
// revisions evaluated on a confirmation deck beyond the pair compared.
func freezeWarnings(ctx context.Context, sec *report.CompareSection, runs ...*PressureResult) error {
	seen := map[string]bool{}
	add := func(w string) {
		if w != "" && !seen[w] {
			seen[w] = true
			sec.Warnings = append(sec.Warnings, w)
		}
	}
	pair := map[string]bool{}
	for _, r := range runs {
		pair[r.Manifest.Fingerprint] = true
	}
	for _, r := range runs {
		if r.Deck == nil {
			continue
		}
		note, err := deckRevisedNote(ctx, r.st, r.Deck.Name, r.Deck.Hash)
		if err != nil {
			return err
		}
		add(note)
		if r.Deck.Kind != "confirmation" || len(r.Revisions) <= 1 {
			continue
		}
		var others []string
		for _, f := range r.Revisions {
			if !pair[f] {
				others = append(others, f)
			}
		}
		if len(others) == 0 {
			add(fmt.Sprintf("%d revisions (fingerprints %s) have been evaluated on the confirmation deck %s (sha256 %s): this pair's before and after, no other.",
				len(r.Revisions), strings.Join(r.Revisions, ", "), r.Deck.Name, short12(r.Deck.Hash)))
			continue
		}
		add(fmt.Sprintf("WARNING: %d revisions (fingerprints %s) have been evaluated on the confirmation deck %s (sha256 %s), %d of them besides this pair's before and after (%s). "+
			"Do not select the best revision with the confirmation answers: that turns the confirmation deck into discovery material.",
			len(r.Revisions), strings.Join(r.Revisions, ", "), r.Deck.Name, short12(r.Deck.Hash), len(others), strings.Join(others, ", ")))
	}
	return nil
}

// confirmationAdvice is what the seed asks of a pair given how its runs
// stand: a pair on a discovery deck (or on any deck not frozen before
// both runs) is discovery material, to be confirmed on a frozen
// confirmation deck; a pair on a frozen confirmation deck is the
// confirmation, reported on its own and never used to choose a revision.
func confirmationAdvice(b, a *PressureResult, verdict string) string {
	var unfrozen []string
	for _, r := range []*PressureResult{b, a} {
		if r.Manifest.Exploratory == nil || *r.Manifest.Exploratory {
			unfrozen = append(unfrozen, r.Run.ID)
		}
	}
	deck := a.Deck
	switch {
	case deck.Kind == "confirmation" && len(unfrozen) == 0:
		when := ""
		if t := a.Manifest.DeckFrozenAt; t != nil {
			when = " at " + t.UTC().Format(time.RFC3339)
		}
		return fmt.Sprintf("Confirmation: both runs are on the confirmation deck %s, frozen%s before either run. "+
			"Report this result separately from the discovery deck's before and after, never pooled with it, "+
			"and do not choose among revisions with these answers.", deck.Name, when)
	case deck.Kind == "confirmation":
		return fmt.Sprintf("EXPLORATORY: the confirmation deck %s was not frozen before run(s) %s, so this pair is no confirmation. "+
			"Freeze it (budge deck freeze) and run both revisions on it again.", deck.Name, strings.Join(unfrozen, ", "))
	}
	status := "frozen before both runs"
	if len(unfrozen) > 0 {
		status = "EXPLORATORY: not frozen before run(s) " + strings.Join(unfrozen, ", ")
	}
	s := fmt.Sprintf("Discovery: the %s deck %s (%s) is discovery material, not a final exam. ", deck.Kind, deck.Name, status)
	if verdict == pressure.CompareImproved {
		return s + "Confirm the improvement on a separately written confirmation deck, frozen before the revised prompt is evaluated, " +
			"with the same crossings and repeats, before relying on it."
	}
	return s + "Results on it are not confirmed until a frozen confirmation deck is run."
}

// errStop stops an EachOutcome from inside.
var errStop = errors.New("stop")

// sameContrast: two runs showed the model the same identity field and
// labels (the reviewer does not change what the model saw).
func sameContrast(b, a pressure.Identity) bool {
	return b.Label == a.Label && b.X == a.X && b.Y == a.Y
}

func contrastText(id pressure.Identity) string {
	return fmt.Sprintf("%s X=%q Y=%q", id.Label, id.X, id.Y)
}
