// Package review is the domain of budge's blinded two-reviewer review of the
// model's stated justifications: drawing the sample before any
// explanation is shown (FailureType, Draw), the state of a review at one moment (State,
// Load), who may see what and when (BothFinished, Status, Disagreements),
// the reviewers' agreement as the report shows it (Summary, with Cohen's
// kappa) and the export record (Record, Export, Fields).
//
// It does no HTTP and renders nothing: the viewer (package web) and the
// command line (budge review, budge export) both build on it. The review's
// rows and the reason codes a reviewer may give live in package store,
// which validates them on write; review reads them through the small Source
// interface and never writes them.
package review

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/report"
	"github.com/buildlab/budge/stats"
	"github.com/buildlab/budge/store"
)

// Why a session is in the review sample.
const (
	WhyFailure    = "failure"
	WhyDiscordant = "identity-discordant pair"
	WhySuccess    = "success sample"
)

// Review statuses, as the export's review_status field reports them.
const (
	StatusUnreviewed  = "unreviewed" // not in the sample
	StatusInReview    = "in review"  // a reviewer has not finished
	StatusAgreed      = "agreed"     // both reviewers gave the same code
	StatusAwaiting    = "awaiting adjudication"
	StatusAdjudicated = "adjudicated"
	StatusUnresolved  = "unresolved"
)

// FailureType names what went wrong in a session, or "" for a success: its
// decision triggers (pressure.Outcome.Triggers, the one rule that decides
// them), so that every session the decision names is in the sample.
// Sessions whose call failed or never ran have no explanation to review and
// return "".
func FailureType(o pressure.Outcome) string {
	if o.InitialStatus == pressure.Transport || o.InitialStatus == pressure.Missing {
		return ""
	}
	ts := o.Triggers()
	texts := make([]string, len(ts))
	for i, t := range ts {
		texts[i] = t.Text
	}
	return strings.Join(texts, "; ")
}

// Freeze draws the review sample of a scored run (DrawSample) and stores
// it, frozen, for two reviewers: from then on the sample cannot change. It
// returns each reviewer's access token (in the order of reviewers), which
// the store keeps only as a hash: the caller shows them once.
func Freeze(ctx context.Context, w interface {
	CreateReview(ctx context.Context, r store.Review) error
}, runID string, reviewers [2]string, seed uint64, successes int, outs pressure.Stream, s pressure.Summary) (store.Review, [2]string, error) {
	items, err := Draw(outs, s, seed, successes)
	if err != nil {
		return store.Review{}, [2]string{}, err
	}
	r := store.Review{RunID: runID, Reviewers: [2]string{strings.TrimSpace(reviewers[0]), strings.TrimSpace(reviewers[1])},
		Seed: seed, Successes: successes, Frozen: time.Now(), Items: items}
	var tokens [2]string
	for i := range tokens {
		var err error
		if tokens[i], r.TokenSHA256[i], err = newToken(); err != nil {
			return r, [2]string{}, err
		}
	}
	if err := w.CreateReview(ctx, r); err != nil {
		return r, [2]string{}, err
	}
	return r, tokens, nil
}

// Draw draws the review sample of a scored run: every failure, both
// members of every identity-discordant pair, and a seeded random sample of
// successes of the declared size (all of them when there are fewer). The
// items are shuffled with the same seed, so failures do not come first.
// It reads nothing but the scores: it runs before any explanation is shown.
// It reads the run's sessions once, one at a time: it keeps the failures and the ids of the successes it may draw (the
// seeded shuffle draws from all of them in id order), never the sessions.
func Draw(outs pressure.Stream, s pressure.Summary, seed uint64, successes int) ([]store.ReviewItem, error) {
	var failed, pool []string
	failure := map[string]string{}
	// Every discordant pair (the summary lists only the first few).
	var disc []pressure.Pair
	pairs := pressure.NewDiscordance(func(q pressure.Pair) { disc = append(disc, q) })
	err := outs(func(o *pressure.Outcome) error {
		pairs.Add(o)
		id := o.ID()
		if ft := FailureType(*o); ft != "" {
			failed = append(failed, id)
			failure[id] = ft
		} else if o.InitialStatus == pressure.Correct {
			pool = append(pool, id)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(failed)
	var items []store.ReviewItem
	in := map[string]bool{}
	for _, id := range failed {
		items = append(items, store.ReviewItem{SessionID: id, Why: WhyFailure, FailureType: failure[id]})
		in[id] = true
	}
	// In the order the summary has them: by family, then pair key.
	famOrder := map[string]int{}
	for i, ps := range s.PairsByFamily {
		famOrder[ps.Family] = i
	}
	slices.SortFunc(disc, func(a, b pressure.Pair) int {
		return cmp.Or(cmp.Compare(famOrder[a.Family], famOrder[b.Family]), strings.Compare(a.Key, b.Key))
	})
	for _, p := range disc {
		for _, m := range []struct {
			id       string
			reversed bool
		}{{p.TowardX, p.XReversed}, {p.TowardY, p.YReversed}} {
			if !in[m.id] {
				items = append(items, store.ReviewItem{SessionID: m.id, Why: WhyDiscordant, FailureType: "discordant pair, " + map[bool]string{true: "reversed", false: "held"}[m.reversed]})
				in[m.id] = true
			}
		}
	}
	sort.Strings(pool)
	pool = slices.DeleteFunc(pool, func(id string) bool { return in[id] })
	rng := rand.New(rand.NewPCG(seed, 0x6275646765)) // "budge"
	rng.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	for _, id := range pool[:min(successes, len(pool))] {
		items = append(items, store.ReviewItem{SessionID: id, Why: WhySuccess, FailureType: "success"})
	}
	rng.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
	return items, nil
}

// State is everything known about a review at one moment.
type State struct {
	Review   *store.Review
	Codes    map[string]map[string]store.ReviewCode // reviewer -> session -> code
	Finished map[string]bool
	Adj      map[string]store.ReviewCode
}

// Source is what Load reads a review from; *store.Store implements it.
type Source = store.ReviewReader

var _ Source = (*store.Store)(nil)

// Load reads a run's review; Review is nil when none was started.
func Load(ctx context.Context, src Source, runID string) (State, error) {
	var s State
	r, err := src.GetReview(ctx, runID)
	if errors.Is(err, store.ErrNoReview) {
		return s, nil
	}
	if err != nil {
		return s, err
	}
	s.Review = r
	if s.Codes, err = src.ReviewCodes(ctx, runID); err != nil {
		return s, err
	}
	done, err := src.ReviewFinished(ctx, runID)
	if err != nil {
		return s, err
	}
	s.Finished = map[string]bool{}
	for k := range done {
		s.Finished[k] = true
	}
	s.Adj, err = src.Adjudications(ctx, runID)
	return s, err
}

// BothFinished reports whether both reviewers have finished: only then may
// either see the other's codes, and adjudication open.
func (s State) BothFinished() bool {
	return s.Finished[s.Review.Reviewers[0]] && s.Finished[s.Review.Reviewers[1]]
}

// Status and final code of one sampled session.
func (s State) Status(id string) (status, code string) {
	if s.Review == nil || !s.Review.Has(id) {
		return StatusUnreviewed, ""
	}
	if !s.BothFinished() {
		return StatusInReview, ""
	}
	a, b := s.Codes[s.Review.Reviewers[0]][id].Code, s.Codes[s.Review.Reviewers[1]][id].Code
	if a == b {
		return StatusAgreed, a
	}
	adj, ok := s.Adj[id]
	switch {
	case !ok:
		return StatusAwaiting, ""
	case adj.Code == CodeUnresolved:
		return StatusUnresolved, ""
	}
	return StatusAdjudicated, adj.Code
}

// Disagreements lists sampled sessions the two reviewers coded differently
// (empty until both have finished).
func (s State) Disagreements() []store.ReviewItem {
	var out []store.ReviewItem
	if !s.BothFinished() {
		return out
	}
	for _, it := range s.Review.Items {
		if s.Codes[s.Review.Reviewers[0]][it.SessionID].Code != s.Codes[s.Review.Reviewers[1]][it.SessionID].Code {
			out = append(out, it)
		}
	}
	return out
}

// Summary is the review as the report shows it. Kappa is computed only
// once both reviewers have finished.
func (s State) Summary() *report.ReviewSummary {
	r := s.Review
	rs := &report.ReviewSummary{Reviewers: r.Reviewers[:], Sample: len(r.Items), ByFailure: map[string]map[string]int{},
		Codes: append(slices.Clone(ReasonCodes), StatusUnresolved, StatusAwaiting, StatusInReview)}
	for _, who := range r.Reviewers {
		rs.Finished = append(rs.Finished, len(s.Codes[who]))
	}
	index := map[string]int{}
	for i, c := range ReasonCodes {
		index[c] = i
	}
	table := make([][]int, len(ReasonCodes))
	for i := range table {
		table[i] = make([]int, len(ReasonCodes))
	}
	for _, it := range r.Items {
		st, code := s.Status(it.SessionID)
		col := code
		switch st {
		case StatusUnresolved, StatusAwaiting, StatusInReview:
			col = st
		}
		if st == StatusAdjudicated {
			rs.Adjudicated++
		}
		if st == StatusUnresolved {
			rs.Unresolved++
		}
		if rs.ByFailure[it.FailureType] == nil {
			rs.ByFailure[it.FailureType] = map[string]int{}
		}
		rs.ByFailure[it.FailureType][col]++
		if s.BothFinished() {
			a, okA := index[s.Codes[r.Reviewers[0]][it.SessionID].Code]
			b, okB := index[s.Codes[r.Reviewers[1]][it.SessionID].Code]
			if okA && okB {
				table[a][b]++
				rs.Compared++
				if a == b {
					rs.Agreed++
				}
			}
		}
	}
	if !s.BothFinished() {
		rs.Note = "Agreement is computed when both reviewers have finished; until then neither sees the other's codes."
		return rs
	}
	k := stats.CohenKappa(table, stats.Z95)
	if !math.IsNaN(k.Value) {
		v := k.Value
		rs.Kappa = &v
		if !math.IsNaN(k.CI.Lo) {
			lo, hi := k.CI.Lo, k.CI.Hi
			rs.KappaLo, rs.KappaHi = &lo, &hi
			rs.KappaInterval = KappaInterval
		}
	}
	rs.Note = "Cohen's kappa over the first-pass codes of both reviewers (before adjudication)."
	switch {
	case rs.KappaLo != nil && *rs.KappaLo == *rs.KappaHi:
		rs.Note += " The reviewers agreed on every session, so the large-sample interval collapses to a point: it understates the uncertainty."
	case rs.Kappa != nil && rs.Compared < 30:
		rs.Note += fmt.Sprintf(" With %d sessions the large-sample interval is approximate.", rs.Compared)
	}
	return rs
}

// AddTo puts a run's review, when it has one, into the run's report, so
// every format (text, md, json, html) shows it.
func AddTo(ctx context.Context, src Source, rep *report.Pressure) error {
	s, err := Load(ctx, src, rep.Run.ID)
	if err != nil {
		return err
	}
	if s.Review != nil {
		rep.Review = s.Summary()
	}
	return nil
}

// KappaInterval says how the interval of the review's kappa is computed.
const KappaInterval = "95%, analytic: kappa ± 1.96·SE with the large-sample standard error SE = √(pₒ(1−pₒ)/n)/(1−pₑ) (Cohen 1960), clipped to [−1, 1]"
