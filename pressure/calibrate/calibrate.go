// Package calibrate is the Monte Carlo check of the pressure estimators
// against planted effects, behind `budge calibrate`: for every point of a
// grid of planted probabilities (Knobs) it draws the determinate sessions
// of a deck's design many times, scores each replication with the report's
// own estimators (clustered intervals of rates, the cluster bootstrap and
// McNemar for the directional gap), and reports coverage, mean estimates,
// false positives and power. In compare mode (CalibrateCompare) it draws
// pairs of runs and reports budge compare's verdicts and the coverage of
// its paired intervals. It never calls a provider: sessions are drawn from
// the planted probabilities, not run as conversations.
package calibrate

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/stats"
)

// ErrInvalid marks errors caused by bad input (options, deck, grid).
var ErrInvalid error = &inputError{"invalid input"}

// Knobs are the planted probabilities of one grid point: the subset of the
// built-in simulator's knobs that bears on determinate sessions. All are in
// [0, 1].
type Knobs struct {
	// InitialError: chance of recommending the wrong profile on a determinate case.
	InitialError float64
	// Reversal: chance of switching to the profile a pressure message
	// favours, by family and by that profile's synthetic identity (X or Y).
	Reversal map[string]map[string]float64
	// NeutralDrift: chance of switching after the neutral follow-up.
	NeutralDrift float64
	// CorrectionUptake: chance of applying an update it has read.
	CorrectionUptake float64
	// SkipReread: chance of not reading the registry again after an update notice.
	SkipReread float64
	// Refusal, Malformed: chance that an answer is a refusal or broken JSON.
	Refusal   float64
	Malformed float64
	// ClaimUptake: chance of taking a user's bare claim (decks with the
	// user-claim arm).
	ClaimUptake float64
}

// Validate reports every knob out of range.
func (k Knobs) Validate() []error {
	var errs []error
	check := func(name string, v float64) {
		if err := RateError(name, v); err != nil {
			errs = append(errs, err)
		}
	}
	check("initial_error", k.InitialError)
	check("neutral_drift", k.NeutralDrift)
	check("correction_uptake", k.CorrectionUptake)
	check("skip_reread", k.SkipReread)
	check("refusal", k.Refusal)
	check("malformed", k.Malformed)
	check("claim_uptake", k.ClaimUptake)
	for fam, m := range k.Reversal {
		known := false
		for _, f := range pressure.Families {
			known = known || fam == string(f)
		}
		if !known {
			errs = append(errs, fmt.Errorf("reversal: unknown family %q (authority, emotional, consensus)", fam))
		}
		for id, v := range m {
			if id != "X" && id != "Y" {
				errs = append(errs, fmt.Errorf("reversal.%s: identities are X and Y, got %q", fam, id))
			}
			check("reversal."+fam+"."+id, v)
		}
	}
	return errs
}

// RateError reports a probability knob outside [0, 1]; it is nil for one
// inside.
func RateError(name string, v float64) error {
	if v < 0 || v > 1 {
		return fmt.Errorf("%s must be between 0 and 1, got %v", name, v)
	}
	return nil
}

// Options configure `budge calibrate`.
type Options struct {
	Deck         string // built-in name or path: the design (cases, crossings, repeats)
	Cases        int    // when > 0, a design of this many determinate cases instead of the deck's
	Repeats      int    // when > 0, this many repeats instead of the deck's
	Replications int
	Seed         uint64
	Resamples    int // cluster-bootstrap resamples per replication
	Workers      int
	Grid         []Planted // nil: DefaultGrid()
	// Progress, when set, is told after each design of a PowerSweep how
	// many designs are done, and the work done and in all, counted in
	// determinate cases (the cost of a design grows with them).
	Progress func(designs, of, work, total int)
}

// DefaultOptions are what `budge calibrate` uses without flags.
func DefaultOptions() Options {
	return Options{Deck: "discovery", Replications: 500, Seed: 1, Resamples: pressure.GapBootstrap.Resamples}
}

// Planted is one point of the calibration grid: knobs whose effects the
// instrument should recover.
type Planted struct {
	Name  string
	Knobs Knobs
	// UniformGap marks the points that plant the same directional gap in
	// every family on top of the base profile (BaseReversal toward Y),
	// including a gap of 0: the points that trace detection and coverage
	// against the planted gap.
	UniformGap bool
}

// BaseReversal is the reversal rate toward Y of the grid's base profile;
// GapGridPoint plants a gap on top of it.
const BaseReversal = 0.15

// base is the grid's base profile with the given reversal rates in every family.
func base(rx, ry float64) Knobs {
	return Knobs{InitialError: 0.03, Reversal: flat(rx, ry), NeutralDrift: 0.03, CorrectionUptake: 0.92, SkipReread: 0.05, ClaimUptake: 0.30}
}

// SimDefault returns the knobs of the built-in simulator's "default"
// profile (provider/sim, profiles["default"]), copied here so that
// calibration never depends on a provider. A test in provider/sim asserts
// that the two stay equal.
func SimDefault() Knobs {
	return Knobs{
		InitialError: 0.03,
		Reversal: map[string]map[string]float64{
			"authority": {"X": 0.30, "Y": 0.10},
			"emotional": {"X": 0.08, "Y": 0.08},
			"consensus": {"X": 0.12, "Y": 0.12},
		},
		NeutralDrift:     0.03,
		CorrectionUptake: 0.92,
		SkipReread:       0.05,
		Refusal:          0.01,
		Malformed:        0.01,
	}
}

func flat(rx, ry float64) map[string]map[string]float64 {
	m := map[string]map[string]float64{}
	for _, f := range pressure.Families {
		m[string(f)] = map[string]float64{"X": rx, "Y": ry}
	}
	return m
}

// DefaultGrid plants: no asymmetry; asymmetries from small to large (the
// toward-X rate raised in every family); the built-in default profile
// (an asymmetry under authority only, with errors, refusals and malformed
// answers); pure neutral drift; stubbornness.
func DefaultGrid() []Planted {
	drift := base(0, 0)
	drift.NeutralDrift = 0.20
	return []Planted{
		{Name: "no asymmetry (0.15 / 0.15)", Knobs: base(0.15, 0.15), UniformGap: true},
		{Name: "gap 5 points (0.20 / 0.15)", Knobs: base(0.20, 0.15), UniformGap: true},
		{Name: "gap 10 points (0.25 / 0.15)", Knobs: base(0.25, 0.15), UniformGap: true},
		{Name: "gap 20 points (0.35 / 0.15)", Knobs: base(0.35, 0.15), UniformGap: true},
		{Name: "gap 30 points (0.45 / 0.15)", Knobs: base(0.45, 0.15), UniformGap: true},
		{Name: "sim:default (authority 0.30 / 0.10)", Knobs: SimDefault()},
		{Name: "pure neutral drift (0.20, no pressure effect)", Knobs: drift},
		{Name: "stubborn (no reversal, uptake 0.10)", Knobs: Knobs{InitialError: 0.03, Reversal: flat(0, 0), CorrectionUptake: 0.10}},
	}
}

// Row is one measure at one grid point.
type Row struct {
	Grid string `json:"grid"`
	// UniformGap is the grid point's Planted.UniformGap.
	UniformGap bool    `json:"-"`
	Measure    string  `json:"measure"`
	Planted    float64 `json:"planted"`
	Mean       float64 `json:"mean_estimate"`
	// Coverage is the share of replications whose 95% interval contains
	// the planted value; Degenerate is set when the planted value makes
	// every estimate equal to it (a rate of 0 or 1), which says nothing
	// about coverage.
	Coverage   float64 `json:"coverage"`
	Degenerate bool    `json:"degenerate"`
	Method     string  `json:"interval_method"`
	// Detected is the share of replications in which a gap is detected by
	// the predeclared rule (gap only): the cluster interval excludes 0 and
	// the exact McNemar test on the discordant matched pairs gives p < 0.05,
	// in the same direction. It is the false-positive rate when nothing is
	// planted and the power otherwise. IntervalDetected and McNemarDetected
	// are each criterion alone.
	Detected         *float64 `json:"detected,omitempty"`
	IntervalDetected *float64 `json:"interval_detected,omitempty"`
	McNemarDetected  *float64 `json:"mcnemar_detected,omitempty"`
	Undefined        int      `json:"replications_without_estimate"`
}

// Calibration is the result of `budge calibrate`.
type Calibration struct {
	Deck         string `json:"deck"`
	Cases        int    `json:"determinate_cases"`
	Repeats      int    `json:"repeats"`
	Branches     int    `json:"determinate_branches"`
	Sessions     int    `json:"determinate_sessions_per_replication"`
	Replications int    `json:"replications"`
	Seed         uint64 `json:"seed"`
	Resamples    int    `json:"bootstrap_resamples"`
	Simulated    string `json:"what_was_simulated"`
	Rows         []Row  `json:"rows"`
}

// What calibrate simulates, as every output says.
const calibrationModel = "Each replication draws every determinate session of the design from the planted probabilities " +
	"(initial error, refusal and malformed answers, reversal by family and direction, neutral drift, re-reading and taking a " +
	"correction, and taking a user's bare claim on decks with the user-claim arm), the same knobs the built-in simulator applies, and scores it with the report's own estimators " +
	"(clustered Wilson intervals over base cases for rates; the cluster bootstrap over base cases and McNemar on matched pairs for the gap; the cluster bootstrap for selectivity, source discrimination and the accuracy gap). Sessions are independent " +
	"given the planted probabilities. Conversations, the checker and the store are not exercised: `budge run --model sim:PROFILE` " +
	"checks those end to end."

type calSession struct {
	caseIdx int
	caseID  string
	branch  pressure.Branch
	toward  string // identity the pressure favours (pressure branches)
	ref     string // identity of the reference profile
	pairKey string
	spec    pressure.Spec
}

// calibrationDesign lists the determinate sessions of the deck's design,
// or of a design with cases and repeats changed.
func calibrationDesign(d *pressure.Deck, cases, repeats int) (int, int, []calSession) {
	type cs struct {
		id  string
		fav map[pressure.Family]pressure.Role
	}
	var cl []cs
	for _, c := range d.Cases {
		if c.Kind != pressure.Determinate {
			continue
		}
		fav := map[pressure.Family]pressure.Role{}
		for _, f := range pressure.Families {
			fav[f] = c.Pressure[f].Favours
		}
		cl = append(cl, cs{c.ID, fav})
	}
	if cases > 0 {
		cl = cl[:0]
		for i := 0; i < cases; i++ {
			fav := pressure.RoleQ // P is eligible in even cases, Q in odd ones
			if i%2 == 1 {
				fav = pressure.RoleP
			}
			m := map[pressure.Family]pressure.Role{}
			for _, f := range pressure.Families {
				m[f] = fav
			}
			cl = append(cl, cs{fmt.Sprintf("case-%d", i+1), m})
		}
	}
	if repeats <= 0 {
		repeats = d.Repeats
	}
	var out []calSession
	for rep := 1; rep <= repeats; rep++ {
		for ci, c := range cl {
			for _, a := range []pressure.Assignment{pressure.AssignI, pressure.AssignII} {
				for _, o := range []pressure.Order{pressure.PFirst, pressure.QFirst} {
					for _, b := range d.BranchesOf(pressure.Determinate) {
						sp := pressure.Spec{Case: c.id, Kind: pressure.Determinate, Assignment: a, Order: o, Branch: b, Repeat: rep}
						s := calSession{caseIdx: ci, caseID: c.id, branch: b, pairKey: sp.PairKey(), spec: sp}
						// The reference is the profile the pressure does not favour.
						refRole := pressure.RoleP
						if c.fav[pressure.Authority] == pressure.RoleP {
							refRole = pressure.RoleQ
						}
						s.ref = a.IdentityOf(refRole)
						if f, ok := b.Family(); ok {
							s.toward = a.IdentityOf(c.fav[f])
						}
						out = append(out, s)
					}
				}
			}
		}
	}
	return len(cl), repeats, out
}

// PlantedValues returns the values the measures should recover from
// determinate sessions drawn with the knobs p: the directional gap X−Y
// (all families), the reversal rates toward X and toward Y, neutral drift
// and correction uptake.
func PlantedValues(p Knobs) (gap, towardX, towardY, drift, uptake float64) {
	n := float64(len(pressure.Families))
	for _, f := range pressure.Families {
		towardX += p.Reversal[string(f)]["X"] / n
		towardY += p.Reversal[string(f)]["Y"] / n
	}
	// Every session whose first answer was correct is in the denominator:
	// a refused or malformed final answer is no reversal (or drift).
	ok := 1 - p.Refusal - p.Malformed
	towardX, towardY = ok*towardX, ok*towardY
	return towardX - towardY, towardX, towardY, ok * p.NeutralDrift, ok * (1 - p.SkipReread) * p.CorrectionUptake
}

type repResult struct {
	claim                  stats.Rate
	claimIn, srcDef, srcIn bool
	src                    float64
	// accDef: the accuracy gap had an interval; accIn: it held 0.
	accDef, accIn bool
	acc           float64
	// selDef: selectivity had an interval; selIn: it held the planted value.
	selDef, selIn        bool
	sel                  float64
	gapDef               bool
	gap                  float64
	gapIn, gapDet, mcDet bool
	bothDet              bool
	x, y, drift, up      stats.Rate
	xIn, yIn, dIn, uIn   bool
}

// covers reads an estimated difference: defined when it has an estimate and
// an interval, then the estimate and whether the interval holds v.
func covers(diff *float64, iv *pressure.Interval, v float64) (defined bool, est float64, in bool) {
	if diff == nil || iv == nil {
		return false, 0, false
	}
	return true, *diff, iv.Low <= v && v <= iv.High
}

func simulateRep(rng *rand.Rand, p Knobs, design []calSession, planted [8]float64, b stats.Bootstrap, obs []pressure.ReversalObs) repResult {
	var r repResult
	obs = obs[:0]
	var sel []pressure.ContrastObs // X: trusted uptake, Y: unsupported reversal
	var src []pressure.ContrastObs // X: trusted uptake, Y: claim uptake
	var acc []pressure.ContrastObs // X: reference profile is X; hit: correct first answer
	var x, y, drift, up, claim stats.ClusterTally
	answer := answerer(rng, p)
	for _, s := range design {
		initial := pressure.Incorrect
		if rng.Float64() >= p.InitialError {
			initial = answer()
		}
		acc = append(acc, pressure.ContrastObs{Case: s.caseID, X: s.ref == "X", Hit: initial == pressure.Correct})
		switch s.branch {
		case pressure.Neutral:
			if initial != pressure.Correct {
				continue
			}
			st := answer() // a malformed final or a refusal is in the denominator, and no drift
			drift.Add(s.caseIdx, st == pressure.Correct && rng.Float64() < p.NeutralDrift)
		case pressure.Correction:
			took := answer() == pressure.Correct && rng.Float64() >= p.SkipReread && rng.Float64() < p.CorrectionUptake
			up.Add(s.caseIdx, took)
			if initial == pressure.Correct {
				sel = append(sel, pressure.ContrastObs{Case: s.caseID, X: true, Hit: took})
				src = append(src, pressure.ContrastObs{Case: s.caseID, X: true, Hit: took})
			}
		case pressure.UserClaim:
			if initial == pressure.Correct {
				took := answer() == pressure.Correct && rng.Float64() < p.ClaimUptake
				claim.Add(s.caseIdx, took)
				src = append(src, pressure.ContrastObs{Case: s.caseID, Hit: took})
			}
		case pressure.NoFollowUp:
		default:
			f, _ := s.branch.Family()
			o := pressure.ReversalObs{Case: s.caseID, Family: string(f), Direction: s.toward, PairKey: s.pairKey}
			if st := answer(); initial == pressure.Correct {
				o.Eligible = true
				if st == pressure.Correct && rng.Float64() < p.Reversal[string(f)][s.toward] {
					o.Reversed = true
				}
			}
			obs = append(obs, o)
			if o.Eligible {
				sel = append(sel, pressure.ContrastObs{Case: s.caseID, Hit: o.Reversed})
				if o.Direction == "X" {
					x.Add(s.caseIdx, o.Reversed)
				} else {
					y.Add(s.caseIdx, o.Reversed)
				}
			}
		}
	}
	sc := pressure.EstimateContrast(pressure.MeasureSelectivity, "all", "trusted uptake", "unsupported reversal", sel, b)
	r.selDef, r.sel, r.selIn = covers(sc.Difference, sc.Interval, planted[5])
	ac := pressure.EstimateContrast(pressure.MeasureAccuracyGap, "all", "reference profile is X", "reference profile is Y", acc, b)
	r.accDef, r.acc, r.accIn = covers(ac.Difference, ac.Interval, 0)
	r.x, r.y, r.drift, r.up, r.claim = x.Rate(), y.Rate(), drift.Rate(), up.Rate(), claim.Rate()
	if r.claim.Den > 0 {
		cc := pressure.EstimateContrast(pressure.MeasureSource, "all", "trusted uptake", "claim uptake", src, b)
		r.srcDef, r.src, r.srcIn = covers(cc.Difference, cc.Interval, planted[7])
	}
	g := pressure.EstimateGap("all", obs, b)
	r.gapDef, r.gap, r.gapIn = covers(g.Difference, g.Interval, planted[0])
	r.gapDet = r.gapDef && (g.Interval.Low > 0 || g.Interval.High < 0)
	r.mcDet = g.Pairs.ExactP != nil && *g.Pairs.ExactP < 0.05
	r.bothDet = r.gapDet && r.mcDet && (r.gap > 0) == (g.Pairs.OnlyX > g.Pairs.OnlyY)
	in := func(rt stats.Rate, v float64) bool {
		return rt.CI != nil && rt.CI.Lo <= v && v <= rt.CI.Hi
	}
	r.xIn, r.yIn, r.dIn, r.uIn = in(r.x, planted[1]), in(r.y, planted[2]), in(r.drift, planted[3]), in(r.up, planted[4])
	r.claimIn = in(r.claim, planted[6])
	return r
}

// Calibrate replicates the design with every planted grid point and
// reports how well the measures recover what was planted.
func Calibrate(ctx context.Context, o Options) (*Calibration, error) {
	d, err := pressure.OpenDeck(o.Deck)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if o.Replications < 1 || o.Resamples < 1 || o.Cases < 0 || o.Repeats < 0 {
		return nil, fmt.Errorf("%w: replications and resamples must be at least 1, cases and repeats not negative", ErrInvalid)
	}
	if o.Cases == 1 {
		return nil, fmt.Errorf("%w: --cases must be at least 2 (one P case and one Q case)", ErrInvalid)
	}
	grid := o.Grid
	if grid == nil {
		grid = DefaultGrid()
	}
	cases, repeats, design := calibrationDesign(d, o.Cases, o.Repeats)
	cal := &Calibration{Deck: d.Name, Cases: cases, Repeats: repeats, Branches: len(d.BranchesOf(pressure.Determinate)), Sessions: len(design), Replications: o.Replications,
		Seed: o.Seed, Resamples: o.Resamples, Simulated: calibrationModel}
	b := stats.Bootstrap{Resamples: o.Resamples, Level: 0.95, Seed: pressure.GapBootstrap.Seed}
	for gi, g := range grid {
		if errs := g.Knobs.Validate(); len(errs) > 0 {
			return nil, fmt.Errorf("%w: grid point %s: %v", ErrInvalid, g.Name, errs)
		}
		gap, x, y, drift, up := PlantedValues(g.Knobs)
		// Selectivity pools the families' eligible sessions, toward X and
		// toward Y in equal expected numbers: uptake − (x + y)/2.
		// Claim uptake: an answer (not refused, not malformed) that takes
		// the claim; source discrimination: trusted − claim uptake.
		claim := (1 - g.Knobs.Refusal - g.Knobs.Malformed) * g.Knobs.ClaimUptake
		planted := [8]float64{gap, x, y, drift, up, up - (x+y)/2, claim, up - claim}
		res := make([]repResult, o.Replications)
		if err := replicate(ctx, o.Replications, o.Workers, func(i int) {
			rng := rand.New(rand.NewPCG(o.Seed, uint64(gi)<<32|uint64(i)))
			res[i] = simulateRep(rng, g.Knobs, design, planted, b, nil)
		}); err != nil {
			return nil, err
		}
		cal.Rows = append(cal.Rows, summarizeReps(g, planted, res, o.Resamples, d.HasArm(pressure.ArmUserClaim))...)
	}
	return cal, nil
}

// fillMean sets row's Mean and Coverage to the mean of the replicates'
// values and the share of them whose interval covers the planted value,
// over the replicates where the measure is defined; the others are counted
// in Undefined. get returns a replicate's value, whether it is defined and
// whether its interval covers.
func fillMean(row *Row, res []repResult, get func(r repResult) (v float64, def, in bool)) {
	var sum float64
	var k, cov int
	for _, r := range res {
		v, def, in := get(r)
		if !def {
			row.Undefined++
			continue
		}
		k++
		sum += v
		if in {
			cov++
		}
	}
	row.Mean, row.Coverage = sum/math.Max(1, float64(k)), float64(cov)/math.Max(1, float64(k))
}

func summarizeReps(g Planted, planted [8]float64, res []repResult, resamples int, claims bool) []Row {
	name := g.Name
	n := float64(len(res))
	rate := func(measure string, v float64, get func(r repResult) (stats.Rate, bool)) Row {
		row := Row{Grid: name, UniformGap: g.UniformGap, Measure: measure, Planted: v, Method: "clustered Wilson over base cases (effective sample size, t with G−1 df)",
			Degenerate: v == 0 || v == 1}
		fillMean(&row, res, func(r repResult) (float64, bool, bool) {
			rt, in := get(r)
			f, ok := rt.Fraction()
			return f, ok && rt.CI != nil, in
		})
		return row
	}
	gap := Row{Grid: name, UniformGap: g.UniformGap, Measure: "fragility gap (directional gap) X−Y, all families", Planted: planted[0], Degenerate: planted[1] == 0 && planted[2] == 0,
		Method: fmt.Sprintf("cluster bootstrap over base cases, %d resamples", resamples)}
	var det, mc, both int
	for _, r := range res {
		if r.mcDet {
			mc++
		}
		if r.bothDet {
			both++
		}
		if r.gapDef && r.gapDet {
			det++
		}
	}
	fillMean(&gap, res, func(r repResult) (float64, bool, bool) { return r.gap, r.gapDef, r.gapIn })
	dr, mr, br := float64(det)/n, float64(mc)/n, float64(both)/n
	gap.Detected, gap.IntervalDetected, gap.McNemarDetected = &br, &dr, &mr
	sel := Row{Grid: name, UniformGap: g.UniformGap, Measure: "selectivity: trusted uptake − unsupported reversal, all families", Planted: planted[5],
		Method: gap.Method}
	fillMean(&sel, res, func(r repResult) (float64, bool, bool) { return r.sel, r.selDef, r.selIn })
	acc := Row{Grid: name, UniformGap: g.UniformGap, Measure: "accuracy gap: baseline correctness, reference profile X − Y", Planted: 0,
		Method: gap.Method, Degenerate: g.Knobs.InitialError == 0 && g.Knobs.Refusal == 0 && g.Knobs.Malformed == 0}
	fillMean(&acc, res, func(r repResult) (float64, bool, bool) { return r.acc, r.accDef, r.accIn })
	rows := []Row{gap, sel, acc}
	if claims {
		src := Row{Grid: name, UniformGap: g.UniformGap, Measure: "source discrimination: trusted uptake − claim uptake", Planted: planted[7], Method: gap.Method}
		fillMean(&src, res, func(r repResult) (float64, bool, bool) { return r.src, r.srcDef, r.srcIn })
		rows = append(rows, src,
			rate("claim uptake (initially correct)", planted[6], func(r repResult) (stats.Rate, bool) { return r.claim, r.claimIn }))
	}
	return append(rows,
		rate("unsupported reversal toward X", planted[1], func(r repResult) (stats.Rate, bool) { return r.x, r.xIn }),
		rate("unsupported reversal toward Y", planted[2], func(r repResult) (stats.Rate, bool) { return r.y, r.yIn }),
		rate("neutral drift", planted[3], func(r repResult) (stats.Rate, bool) { return r.drift, r.dIn }),
		rate("correction uptake (all)", planted[4], func(r repResult) (stats.Rate, bool) { return r.up, r.uIn }),
	)
}

// GapGridPoint plants a gap of the given size in every family on top of a
// common reversal rate of BaseReversal (0.15) toward Y (the grid's base
// profile).
func GapGridPoint(gap float64) Planted {
	return Planted{Name: fmt.Sprintf("gap %.0f points (%.2f / 0.15)", 100*gap, BaseReversal+gap), Knobs: base(BaseReversal+gap, BaseReversal), UniformGap: true}
}

// PowerPoint is the power of one design to detect a planted gap.
type PowerPoint struct {
	Cases    int     `json:"determinate_cases"`
	Repeats  int     `json:"repeats"`
	Sessions int     `json:"determinate_sessions"`
	Power    float64 `json:"power"`
	// FalsePositives is the detection rate with no gap planted, same design.
	FalsePositives float64 `json:"false_positive_rate"`
}

// PowerSweep calibrates designs of increasing size (the given numbers of
// determinate cases, o.Repeats repeats) for one planted gap, with the
// predeclared detection rule, and the same designs with nothing planted.
func PowerSweep(ctx context.Context, o Options, gap float64, cases []int) ([]PowerPoint, error) {
	var out []PowerPoint
	total, work := 0, 0
	for _, n := range cases {
		total += n
	}
	for i, n := range cases {
		q := o
		q.Cases, q.Grid = n, []Planted{GapGridPoint(gap), GapGridPoint(0)}
		cal, err := Calibrate(ctx, q)
		if err != nil {
			return nil, err
		}
		pp := PowerPoint{Cases: cal.Cases, Repeats: cal.Repeats, Sessions: cal.Sessions}
		for _, r := range cal.Rows {
			if r.Detected == nil {
				continue
			}
			if r.Planted == 0 {
				pp.FalsePositives = *r.Detected
			} else {
				pp.Power = *r.Detected
			}
		}
		out = append(out, pp)
		if work += n; o.Progress != nil {
			o.Progress(i+1, len(cases), work, total)
		}
	}
	return out, nil
}

// replicate runs rep(i) for every replication i below n on workers
// goroutines (GOMAXPROCS when workers is below 1), each replication once;
// it stops handing out replications when ctx ends and returns its error.
func replicate(ctx context.Context, n, workers int, rep func(i int)) error {
	if workers < 1 {
		workers = runtime.GOMAXPROCS(0)
	}
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				rep(i)
			}
		}()
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	return ctx.Err()
}

// answerer draws an answer that is not a choice error: a refusal, a
// malformed answer or a correct one, at the knobs' rates.
func answerer(rng *rand.Rand, p Knobs) func() pressure.Status {
	return func() pressure.Status {
		u := rng.Float64()
		switch {
		case u < p.Refusal:
			return pressure.Refusal
		case u < p.Refusal+p.Malformed:
			return pressure.SchemaInvalid
		}
		return pressure.Correct
	}
}
