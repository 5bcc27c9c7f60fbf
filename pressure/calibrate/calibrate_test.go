package calibrate

import (
	"context"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/buildlab/budge/testkit/decktest"
	"github.com/buildlab/budge/testkit/paralleltest"
)

// TestMain lets the collector run less often: the simulated runs and
// replications allocate much and keep little.
func TestMain(m *testing.M) {
	paralleltest.FewerCollections()
	os.Exit(m.Run())
}

// The acceptance test of `budge calibrate` on the discovery deck: over
// 1,000 replications per grid point (a coverage of 95% is then estimated
// to within about ±1.4 points), every clustered interval with something to
// estimate (the rates' clustered Wilson intervals, the cluster-bootstrap
// gap, selectivity and accuracy gap) covers its planted value between 92%
// and 98% of the time at nominal 95%, the gap is falsely detected at most
// 5% of the time where nothing is planted, and the mean estimates recover
// what was planted.
func TestCalibrateDiscoveryDeck(t *testing.T) {
	t.Parallel()
	o := DefaultOptions()
	o.Replications = 1000
	cal, err := Calibrate(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if cal.Cases != 8 || cal.Repeats != 2 || cal.Sessions != 384 || cal.Replications != 1000 || !strings.Contains(cal.Simulated, "planted probabilities") {
		t.Fatalf("design %+v", cal)
	}
	var power20 float64
	for _, r := range cal.Rows {
		if !r.Degenerate && (r.Coverage < 0.92 || r.Coverage > 0.98) {
			t.Errorf("%s / %s: coverage %.3f outside [0.92, 0.98]", r.Grid, r.Measure, r.Coverage)
		}
		if !r.Degenerate && r.Undefined > 5 {
			t.Errorf("%s / %s: %d replications without an interval", r.Grid, r.Measure, r.Undefined)
		}
		if r.Degenerate && r.Mean != 0 {
			t.Errorf("%s / %s: planted 0, mean estimate %v", r.Grid, r.Measure, r.Mean)
		}
		// Mean of 500 estimates: within 0.015 of the planted value (the
		// standard error of the mean is below 0.004 for every measure).
		if d := r.Mean - r.Planted; d > 0.015 || d < -0.015 {
			t.Errorf("%s / %s: mean estimate %.4f, planted %.4f", r.Grid, r.Measure, r.Mean, r.Planted)
		}
		if r.Detected == nil {
			continue
		}
		if r.Planted == 0 && *r.Detected > 0.05 {
			t.Errorf("%s: false-positive rate %.3f above 5%%", r.Grid, *r.Detected)
		}
		if strings.HasPrefix(r.Grid, "gap 20") {
			power20 = *r.Detected
		}
	}
	if power20 < 0.6 {
		t.Errorf("power for a 20-point gap %.2f; the discovery deck should detect it most of the time", power20)
	}
	// A larger design has more power for the same gap.
	o = DefaultOptions()
	o.Cases, o.Repeats, o.Replications, o.Grid = 32, 2, 200, DefaultGrid()[2:3]
	big, err := Calibrate(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	var small float64
	for _, r := range cal.Rows {
		if r.Detected != nil && strings.HasPrefix(r.Grid, "gap 10") {
			small = *r.Detected
		}
	}
	if big.Cases != 32 || big.Sessions != 32*4*6*2 || *big.Rows[0].Detected <= small {
		t.Errorf("32 cases: %d sessions, power %.2f vs %.2f with 8 cases", big.Sessions, *big.Rows[0].Detected, small)
	}
}

// BenchmarkCalibrate is the acceptance benchmark: the default calibration
// (discovery deck, 8 grid points × 500 replications, 2,000 cluster-bootstrap
// resamples each) on 2 cores:
//
//	go test ./pressure/calibrate -run XXX -bench Calibrate -benchtime 3x -cpu 2
func BenchmarkCalibrate(b *testing.B) {
	o := DefaultOptions()
	o.Workers = runtime.GOMAXPROCS(0)
	for i := 0; i < b.N; i++ {
		if _, err := Calibrate(context.Background(), o); err != nil {
			b.Fatal(err)
		}
	}
}

// The grid's uniform-gap points are the no-asymmetry point and the gaps,
// and GapGridPoint builds the same points as the grid.
func TestUniformGapPoints(t *testing.T) {
	t.Parallel()
	var names []string
	for _, g := range DefaultGrid() {
		if g.UniformGap {
			names = append(names, g.Name)
		}
	}
	want := []string{"no asymmetry (0.15 / 0.15)", "gap 5 points (0.20 / 0.15)", "gap 10 points (0.25 / 0.15)", "gap 20 points (0.35 / 0.15)", "gap 30 points (0.45 / 0.15)"}
	if strings.Join(names, "|") != strings.Join(want, "|") {
		t.Errorf("uniform-gap points %q, want %q", names, want)
	}
	g := GapGridPoint(0.10)
	if !g.UniformGap || g.Name != "gap 10 points (0.25 / 0.15)" {
		t.Errorf("GapGridPoint(0.10) = %+v", g)
	}
	if gap, x, y, _, _ := PlantedValues(g.Knobs); gap < 0.0999 || gap > 0.1001 || x < 0.2499 || x > 0.2501 || y < 0.1499 || y > 0.1501 {
		t.Errorf("GapGridPoint(0.10) plants gap %v (%v / %v)", gap, x, y)
	}
	for _, g := range DefaultGrid() {
		if errs := g.Knobs.Validate(); len(errs) > 0 {
			t.Errorf("%s: %v", g.Name, errs)
		}
	}
	bad := Knobs{InitialError: 2, Reversal: map[string]map[string]float64{"flattery": {"Z": 0.1}}}
	if errs := bad.Validate(); len(errs) != 3 {
		t.Errorf("invalid knobs: %v", errs)
	}
}

// With the user-claim arm, calibrate plants a claim uptake beside the
// verified correction's and checks source discrimination and claim uptake:
// coverage between 90% and 99% over 300 replications, means within 0.015;
// the discovery deck itself gets the selectivity row and no claim rows.
func TestCalibrateUserClaimArm(t *testing.T) {
	t.Parallel()
	path := decktest.Edited(t, "discovery", "\nrepeats: 2\n", "\nrepeats: 2\narms: [user-claim]\n")
	o := DefaultOptions()
	o.Deck, o.Replications, o.Grid = path, 300, DefaultGrid()[:1]
	cal, err := Calibrate(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	// 8 cases × 2 × 2 × 7 branches × 2 repeats.
	if cal.Branches != 7 || cal.Sessions != 448 {
		t.Fatalf("design: %d branches, %d sessions; want 7 and 448", cal.Branches, cal.Sessions)
	}
	seen := map[string]bool{}
	for _, r := range cal.Rows {
		name := strings.SplitN(r.Measure, ":", 2)[0]
		seen[name] = true
		if r.Coverage < 0.90 || r.Coverage > 0.99 {
			t.Errorf("%s: coverage %.3f outside [0.90, 0.99]", r.Measure, r.Coverage)
		}
		if d := r.Mean - r.Planted; d > 0.015 || d < -0.015 {
			t.Errorf("%s: mean estimate %.4f, planted %.4f", r.Measure, r.Mean, r.Planted)
		}
	}
	for _, m := range []string{"selectivity", "source discrimination", "claim uptake (initially correct)"} {
		if !seen[m] {
			t.Errorf("no %s row in %v", m, seen)
		}
	}
	o.Deck = "discovery"
	o.Replications = 20
	cal, err = Calibrate(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range cal.Rows {
		if strings.Contains(r.Measure, "claim") {
			t.Errorf("discovery deck without the arm has a row %q", r.Measure)
		}
	}
}

// The compare calibration: on pairs of runs of one profile the
// comparison's false-positive rate (any verdict but "no clear change") is
// at most 3%; a planted 15-point fall of reversals is "improved" at least
// 85% of the time, with correction uptake collapsed "rejected" at least 99%
// of the time, and a 15-point rise "worse" at least 85%; every paired 95%
// interval covers the planted change between 92% and 98% of the time.
func TestCalibrateCompare(t *testing.T) {
	t.Parallel()
	o := DefaultOptions()
	o.Replications = 600
	cal, err := CalibrateCompare(context.Background(), o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cal.Rows) != len(DefaultCompareGrid()) || cal.Sessions != 384 || !strings.Contains(cal.Simulated, "independent runs") {
		t.Fatalf("calibration %+v", cal)
	}
	want := map[string]float64{
		"same profile: sim:default":                                           0.97,
		"same profile: no asymmetry (0.15 / 0.15)":                            0.97,
		"reversals fall 15 points (0.20 → 0.05), the rest unchanged":          0.85,
		"reversals fall 15 points, correction uptake collapses (0.92 → 0.10)": 0.99,
		"reversals rise 15 points (0.05 → 0.20)":                              0.85,
	}
	for _, r := range cal.Rows {
		if w, ok := want[r.Scenario]; ok && r.Expected < w {
			t.Errorf("%s: %.3f %q (verdicts %v), want at least %.2f", r.Scenario, r.Expected, r.Expect, r.Verdicts, w)
		}
		for m, c := range r.Coverage {
			if c < 0.92 || c > 0.98 {
				t.Errorf("%s / %s: coverage %.3f of the paired interval outside [0.92, 0.98] (planted %+.3f)", r.Scenario, m, c, r.Planted[m])
			}
		}
		if len(r.Coverage) != len(CoveredMeasures) {
			t.Errorf("%s: coverage of %d measures, want %d", r.Scenario, len(r.Coverage), len(CoveredMeasures))
		}
	}
}
