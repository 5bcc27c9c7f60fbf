package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
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
           once per run. Reviewers are named here, and each gets their own
           access token, printed once (or written to --tokens FILE, mode 0600):
           budge keeps only its sha256.
  token    issues a new token for one reviewer (--reviewer NAME); the old one
           stops working. This is how a lost token is replaced.
  status   prints each reviewer's progress (how many sessions coded, not
           which codes) and, once both have finished, Cohen's kappa with its
           95% interval (large-sample standard error) and the codes by
           failure type.
  export   writes one JSON line per sampled session with both reviewers'
           codes and notes (only once both have finished), the adjudication,
           the final code and the review status.

The coding itself happens in the viewer (budge view): each reviewer opens
their own link (the viewer's address followed by the path printed with
their token); the view token does not open a reviewer's pages, and one
reviewer's token opens neither the other's pages nor the adjudication. The
first pass masks the identity field and its values as whole words ("You"
and "Yes" stay) and the identity assignment in session ids, and neither
reviewer sees the other's codes until both have finished. Tokens are never
written to reports, exports or logs.`

const reviewExamples = `
  budge review sample latest --reviewers ana,ben --successes 20 --seed 7
  budge review sample latest --reviewers ana,ben --tokens ~/review-tokens.txt
  budge review token latest --reviewer ana
  budge review status latest
  budge review export latest -o review.jsonl`

func cmdReview(ctx context.Context, std IO, args []string) error {
	fs := newFlags(std, "review", "sample|token|status|export [RUN] [flags]", reviewAbout, reviewExamples)
	dir := dirFlag(fs)
	reviewers := fs.String("reviewers", "", "sample: the two reviewers' names, comma-separated")
	reviewer := fs.String("reviewer", "", "token: the reviewer to issue a new token for")
	tokens := fs.String("tokens", "", "sample, token: write the reviewer tokens to this file (mode 0600) instead of standard output")
	successes := fs.Int("successes", 20, "sample: how many successes to draw at random")
	seed := fs.Uint64("seed", 1, "sample: the random seed that draws the sample")
	out := fs.String("o", "", "export: write to this file instead of standard output")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageError{"budge review needs sample, token, status or export"}
	}
	verb := pos[0]
	ref, err := oneRun(pos[1:])
	if err != nil {
		return err
	}
	return withExistingStore(*dir, func(st *store.Store) error {
		switch verb {
		case "sample":
			return reviewSample(ctx, std, st, ref, *reviewers, *successes, *seed, *tokens)
		case "token":
			return reviewToken(ctx, std, st, ref, *reviewer, *tokens)
		case "status":
			return reviewStatus(ctx, std, st, ref)
		case "export":
			id, rs, err := loadReview(ctx, st, ref)
			if err != nil {
				return err
			}
			return writeOut(std, *out, func(w io.Writer) error { return review.Export(w, id, rs) })
		}
		return usageError{fmt.Sprintf("unknown review command %q (use sample, token, status or export)", verb)}
	})
}

// reviewSample draws and freezes the review sample of a pressure run.
func reviewSample(ctx context.Context, std IO, st *store.Store, ref, reviewers string, successes int, seed uint64, tokenFile string) error {
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
	rv, ok := res.(study.Reviewable)
	if !ok {
		return usageError{"the explanation review is for pressure runs; " + res.Head().RunID + " is not one"}
	}
	id := rv.Stored().ID
	outcomes, summary := rv.ReviewSource(ctx)
	rev, tokens, err := review.Freeze(ctx, st, id, [2]string{names[0], names[1]}, seed, successes, outcomes, summary)
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
	return showTokens(std, tokenFile, id, rev.Reviewers[:], tokens[:])
}

// reviewToken issues a new token for one reviewer; the old one stops
// working.
func reviewToken(ctx context.Context, std IO, st *store.Store, ref, who, tokenFile string) error {
	if strings.TrimSpace(who) == "" {
		return usageError{"--reviewer must name the reviewer to issue a new token for"}
	}
	id, _, err := loadReview(ctx, st, ref)
	if err != nil {
		return err
	}
	tok, err := review.Reissue(ctx, st, id, who)
	if err != nil {
		return err
	}
	return showTokens(std, tokenFile, id, []string{who}, []string{tok})
}

// showTokens prints reviewer tokens with the viewer path each opens, or
// writes them to a file only its owner can read. They are shown this once:
// the store keeps only their hashes.
func showTokens(std IO, path, runID string, who, tokens []string) error {
	var b strings.Builder
	for i := range who {
		fmt.Fprintf(&b, "  %s  %s  open: <viewer address>/runs/%s/review/code?%s\n", who[i], tokens[i], runID,
			url.Values{"who": {who[i]}, "key": {tokens[i]}}.Encode())
	}
	const head = "reviewer tokens (shown once; budge keeps only their hash; give each reviewer only their own):\n"
	if path == "" || path == "-" {
		_, err := io.WriteString(std.Out, head+b.String())
		return err
	}
	if err := os.WriteFile(path, []byte(head+b.String()), 0o600); err != nil {
		return err
	}
	if err := os.Chmod(path, 0o600); err != nil { // WriteFile keeps an existing file's mode
		return err
	}
	fmt.Fprintf(std.Out, "reviewer tokens written to %s (mode 0600)\n", path)
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
		// Counts only: whoever runs this may be a reviewer, and neither sees
		// the other's codes before both have finished.
		fmt.Fprintln(std.Out, "agreement: when both reviewers have finished (codes stay hidden until then)")
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
