package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/buildlab/budge/review"
	"github.com/buildlab/budge/store"
	"github.com/buildlab/budge/study"
)

const reviewAbout = `
The blinded two-reviewer review of the model's stated justifications.

  sample   draws and freezes the sample: every failure, both members of every
           identity-discordant pair and a seeded random sample of successes of
           the declared size. It runs before any explanation is shown and only
           once per run. Reviewers are named here.
  status   prints each reviewer's progress and, once both have finished,
           Cohen's kappa with its interval and the codes by failure type.
  export   writes one JSON line per sampled session with both reviewers'
           codes and notes (only once both have finished), the adjudication,
           the final code and the review status.

The coding itself happens in the viewer (budge view, then "review"): the
first pass masks identity-assignment labels and synthetic identity values,
and neither reviewer sees the other's codes until both have finished.`

const reviewExamples = `
  budge review sample latest --reviewers ana,ben --successes 20 --seed 7
  budge review status latest
  budge review export latest -o review.jsonl`

func cmdReview(ctx context.Context, std IO, args []string) error {
	fs := newFlags(std, "review", "sample|status|export [RUN] [flags]", reviewAbout, reviewExamples)
	dir := dirFlag(fs)
	reviewers := fs.String("reviewers", "", "sample: the two reviewers' names, comma-separated")
	successes := fs.Int("successes", 20, "sample: how many successes to draw at random")
	seed := fs.Uint64("seed", 1, "sample: the seed of the random sample")
	out := fs.String("o", "", "export: write to this file instead of standard output")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageError{"budge review needs sample, status or export"}
	}
	verb := pos[0]
	ref, err := oneRun(pos[1:])
	if err != nil {
		return err
	}
	return withStore(*dir, func(st *store.Store) error {
		switch verb {
		case "sample":
			return reviewSample(ctx, std, st, ref, *reviewers, *successes, *seed)
		case "status":
			return reviewStatus(ctx, std, st, ref)
		case "export":
			id, rs, err := loadReview(ctx, st, ref)
			if err != nil {
				return err
			}
			return writeOut(std, *out, func(w io.Writer) error { return review.Export(w, id, rs) })
		}
		return usageError{fmt.Sprintf("unknown review command %q (use sample, status or export)", verb)}
	})
}

// reviewSample draws and freezes the review sample of a pressure run.
func reviewSample(ctx context.Context, std IO, st *store.Store, ref, reviewers string, successes int, seed uint64) error {
	names := strings.Split(reviewers, ",")
	if len(names) != 2 || strings.TrimSpace(names[0]) == "" || strings.TrimSpace(names[1]) == "" {
		return usageError{"--reviewers must name two reviewers, e.g. --reviewers ana,ben"}
	}
	if successes < 0 {
		return usageError{"--successes must not be negative"}
	}
	res, err := study.Load(ctx, st, ref)
	if err != nil {
		return err
	}
	pr, ok := res.(*study.PressureResult)
	if !ok {
		return usageError{"the explanation review is for pressure runs"}
	}
	id := pr.Run.ID
	rev, err := review.Freeze(ctx, st, id, [2]string{names[0], names[1]}, seed, successes, pr.Outcomes, pr.Summary)
	if err != nil {
		return err
	}
	why := map[string]int{}
	for _, it := range rev.Items {
		why[it.Why]++
	}
	fmt.Fprintf(std.Out, "review sample of run %s frozen: %d sessions (%d failures, %d in identity-discordant pairs, %d successes)\n",
		id, len(rev.Items), why[review.WhyFailure], why[review.WhyDiscordant], why[review.WhySuccess])
	fmt.Fprintln(std.Out, "code it in the viewer: budge view", id)
	return nil
}

// loadReview reads the review of the run ref names; a run without one is
// an error.
func loadReview(ctx context.Context, st *store.Store, ref string) (string, review.State, error) {
	id, err := st.Resolve(ctx, ref)
	if err != nil {
		return id, review.State{}, err
	}
	rs, err := review.Load(ctx, st, id)
	if err == nil && rs.Review == nil {
		err = fmt.Errorf("%w: run %s", store.ErrNoReview, id)
	}
	return id, rs, err
}

// reviewStatus prints each reviewer's progress and, once both have
// finished, the agreement.
func reviewStatus(ctx context.Context, std IO, st *store.Store, ref string) error {
	id, rs, err := loadReview(ctx, st, ref)
	if errors.Is(err, store.ErrNoReview) {
		return fmt.Errorf("%w (start with: budge review sample %s --reviewers A,B)", err, id)
	}
	if err != nil {
		return err
	}
	sum := rs.Summary()
	fmt.Fprintf(std.Out, "review of run %s: %d sampled sessions\n", id, sum.Sample)
	for i, who := range rs.Review.Reviewers {
		fmt.Fprintf(std.Out, "  %s: %d/%d coded, finished: %v\n", who, sum.Finished[i], sum.Sample, rs.Finished[who])
	}
	if !rs.BothFinished() {
		fmt.Fprintln(std.Out, "agreement: when both reviewers have finished")
		return nil
	}
	k := "— (not computable)"
	if sum.Kappa != nil {
		k = fmt.Sprintf("%.3f", *sum.Kappa)
		if sum.KappaLo != nil {
			k += fmt.Sprintf(" [%.3f, %.3f]", *sum.KappaLo, *sum.KappaHi)
		}
	}
	fmt.Fprintf(std.Out, "agreement: %d/%d, Cohen's kappa %s; adjudicated %d, unresolved %d, disagreements %d\n",
		sum.Agreed, sum.Compared, k, sum.Adjudicated, sum.Unresolved, len(rs.Disagreements()))
	for _, ft := range sortedNames(sum.ByFailure) {
		var parts []string
		for _, c := range sortedNames(sum.ByFailure[ft]) {
			parts = append(parts, fmt.Sprintf("%s %d", c, sum.ByFailure[ft][c]))
		}
		fmt.Fprintf(std.Out, "  %s: %s\n", ft, strings.Join(parts, ", "))
	}
	return nil
}
