package calibrate

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/buildlab/budge/pressure"
)

// CompareScenario is one planted before-and-after of `budge calibrate
// --compare`: the knobs of the run before and of the run after, and the
// verdict the comparison should give. On a pair of one profile the
// expected verdict is "no clear change" and every other verdict is a false
// positive; on a planted change the share of the expected verdict is the
// rule's power.
type CompareScenario struct {
	Name          string
	Before, After Knobs
	Expect        string
}

// DefaultCompareGrid plants: pairs of one profile (sim:default; and a
// profile with no asymmetry), a 15-point fall of unsupported reversals
// with everything else unchanged (0.20 → 0.05), a smaller fall (0.20 →
// 0.12), the same 15-point fall with correction uptake collapsed (0.92 →
// 0.10) or with neutral drift risen (0.03 → 0.30), and a rise of
// reversals (0.05 → 0.20).
func DefaultCompareGrid() []CompareScenario {
	rev := func(r float64) Knobs {
		k := SimDefault()
		k.Reversal = flat(r, r)
		return k
	}
	collapsed := rev(0.05)
	collapsed.CorrectionUptake = 0.10
	drifting := rev(0.05)
	drifting.NeutralDrift = 0.30
	return []CompareScenario{
		{"same profile: sim:default", SimDefault(), SimDefault(), pressure.CompareNoChange},
		{"same profile: no asymmetry (0.15 / 0.15)", base(0.15, 0.15), base(0.15, 0.15), pressure.CompareNoChange},
		{"reversals fall 15 points (0.20 → 0.05), the rest unchanged", rev(0.20), rev(0.05), pressure.CompareImproved},
		{"reversals fall 8 points (0.20 → 0.12), the rest unchanged", rev(0.20), rev(0.12), pressure.CompareImproved},
		{"reversals fall 15 points, correction uptake collapses (0.92 → 0.10)", rev(0.20), collapsed, pressure.CompareRejected},
		{"reversals fall 15 points, neutral drift rises (0.03 → 0.30)", rev(0.20), drifting, pressure.CompareRejected},
		{"reversals rise 15 points (0.05 → 0.20)", rev(0.05), rev(0.20), pressure.CompareWorse},
	}
}

// CompareRow is the comparison's behaviour on one scenario over many pairs
// of runs.
type CompareRow struct {
	Scenario string `json:"scenario"`
	Expect   string `json:"expected_verdict"`
	Pairs    int    `json:"pairs"`
	// Verdicts is the share of pairs given each verdict.
	Verdicts map[string]float64 `json:"verdicts"`
	// Expected is the share given the expected verdict: the power of the
	// rule on a planted change, one minus its false-positive rate on a pair
	// of one profile.
	Expected float64 `json:"expected_share"`
	// Coverage is, per measure, the share of pairs whose paired 95%
	// interval of the change holds the planted change; Planted is that
	// change.
	Coverage map[string]float64 `json:"coverage"`
	Planted  map[string]float64 `json:"planted_change"`
}

// CompareCalibration is the result of `budge calibrate --compare`.
type CompareCalibration struct {
	Deck         string       `json:"deck"`
	Sessions     int          `json:"determinate_sessions_per_run"`
	Replications int          `json:"pairs_per_scenario"`
	Seed         uint64       `json:"seed"`
	Simulated    string       `json:"what_was_simulated"`
	Rules        []string     `json:"predeclared_rules"`
	Rows         []CompareRow `json:"rows"`
}

// compareModel says what the compare calibration simulates.
const compareModel = "Each pair draws two independent runs of the design's determinate sessions, before with one scenario's knobs and after with " +
	"the other's, as `budge calibrate` draws one run, scores each session as a run would, and compares the two with budge compare's own " +
	"rule (paired intervals over base cases, the McNemar test agreeing, the guards). Coverage is of each paired interval computed at 95%."

// CoveredMeasures are the compared measures whose paired interval the
// compare calibration checks against the planted change.
var CoveredMeasures = []string{pressure.MeasureAllReversal, pressure.MeasureUptakeAll, "neutral drift", "baseline correctness"}

// plantedChange is the change of a compared measure between two runs drawn
// with the knobs b and a.
func plantedChange(measure string, b, a Knobs) float64 {
	val := func(k Knobs) float64 {
		_, x, y, drift, up := PlantedValues(k)
		switch measure {
		case pressure.MeasureAllReversal:
			return (x + y) / 2
		case pressure.MeasureUptakeAll:
			return up
		case "neutral drift":
			return drift
		}
		return (1 - k.InitialError) * (1 - k.Refusal - k.Malformed) // baseline correctness
	}
	return val(a) - val(b)
}

// drawRun draws every determinate session of the design with the knobs p
// and scores it as a run would (pressure.Synthetic).
func drawRun(rng *rand.Rand, p Knobs, design []calSession) []pressure.Outcome {
	answer := answerer(rng, p)
	outs := make([]pressure.Outcome, 0, len(design))
	for _, s := range design {
		initial := pressure.Incorrect
		if rng.Float64() >= p.InitialError {
			initial = answer()
		}
		var final *pressure.Status
		st := answer()
		switch s.branch {
		case pressure.NoFollowUp:
		case pressure.Correction:
			if st == pressure.Correct && !(rng.Float64() >= p.SkipReread && rng.Float64() < p.CorrectionUptake) {
				st = pressure.Incorrect // kept the old answer
			}
			final = &st
		case pressure.Neutral:
			if initial == pressure.Correct && st == pressure.Correct && rng.Float64() < p.NeutralDrift {
				st = pressure.Incorrect
			}
			final = &st
		case pressure.UserClaim:
			final = &st
		default:
			f, _ := s.branch.Family()
			if initial == pressure.Correct && st == pressure.Correct && rng.Float64() < p.Reversal[string(f)][s.toward] {
				st = pressure.Incorrect
			}
			final = &st
		}
		if initial != pressure.Correct && final != nil && *final == pressure.Correct && s.branch != pressure.Correction {
			// A wrong first answer stays wrong unless the model changes it.
			kept := initial
			final = &kept
		}
		outs = append(outs, pressure.Synthetic(s.spec, s.toward, initial, final))
	}
	return outs
}

// CalibrateCompare draws o.Replications pairs of runs for every scenario
// of grid (DefaultCompareGrid when nil) and reports the verdicts and the
// coverage of the paired intervals.
func CalibrateCompare(ctx context.Context, o Options, grid []CompareScenario) (*CompareCalibration, error) {
	d, err := pressure.OpenDeck(o.Deck)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if o.Replications < 1 || o.Cases < 0 || o.Repeats < 0 || o.Cases == 1 {
		return nil, fmt.Errorf("%w: replications must be at least 1, cases 0 or at least 2, repeats not negative", ErrInvalid)
	}
	if grid == nil {
		grid = DefaultCompareGrid()
	}
	_, _, design := calibrationDesign(d, o.Cases, o.Repeats)
	cal := &CompareCalibration{Deck: d.Name, Sessions: len(design), Replications: o.Replications, Seed: o.Seed, Simulated: compareModel,
		Rules: pressure.CompareRules(0)}
	for gi, sc := range grid {
		for _, k := range []Knobs{sc.Before, sc.After} {
			if errs := k.Validate(); len(errs) > 0 {
				return nil, fmt.Errorf("%w: scenario %s: %v", ErrInvalid, sc.Name, errs)
			}
		}
		type rep struct {
			verdict string
			in      map[string]bool
		}
		res := make([]rep, o.Replications)
		planted := map[string]float64{}
		for _, m := range CoveredMeasures {
			planted[m] = plantedChange(m, sc.Before, sc.After)
		}
		if err := replicate(ctx, o.Replications, o.Workers, func(i int) {
			rng := rand.New(rand.NewPCG(o.Seed, 1<<40|uint64(gi)<<32|uint64(i)))
			before, after := drawRun(rng, sc.Before, design), drawRun(rng, sc.After, design)
			cm := pressure.NewComparer(d, 0)
			for j := range before {
				cm.Before(&before[j])
			}
			for j := range after {
				cm.After(&after[j], &before[j])
			}
			r := rep{verdict: cm.Comparison().Verdict, in: map[string]bool{}}
			for _, m := range CoveredMeasures {
				lo, hi, ok := cm.PairedInterval(m, 0.95)
				r.in[m] = ok && lo <= planted[m]+1e-12 && planted[m]-1e-12 <= hi
			}
			res[i] = r
		}); err != nil {
			return nil, err
		}
		row := CompareRow{Scenario: sc.Name, Expect: sc.Expect, Pairs: o.Replications, Verdicts: map[string]float64{}, Coverage: map[string]float64{}, Planted: planted}
		n := float64(o.Replications)
		for _, r := range res {
			row.Verdicts[r.verdict] += 1 / n
			for m, in := range r.in {
				if in {
					row.Coverage[m] += 1 / n
				}
			}
		}
		row.Expected = row.Verdicts[sc.Expect]
		for m := range row.Coverage {
			row.Coverage[m] = math.Round(row.Coverage[m]*1e9) / 1e9
		}
		cal.Rows = append(cal.Rows, row)
	}
	return cal, nil
}
