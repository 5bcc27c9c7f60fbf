package experiment

import (
	"context"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/buildlab/budge/pressure"
	"github.com/buildlab/budge/provider/sim"
)

// The acceptance test of `budge calibrate` on the discovery deck: over 500
// replications per grid point, every interval with something to estimate
// covers its planted value between 90% and 99% of the time, the gap is
// falsely detected at most 5% of the time where nothing is planted, and the
// mean estimates recover what was planted.
func TestCalibrateDiscoveryDeck(t *testing.T) {
	t.Parallel()
	cal, err := Calibrate(context.Background(), DefaultCalibrateOptions())
	if err != nil {
		t.Fatal(err)
	}
	if cal.Cases != 8 || cal.Repeats != 2 || cal.Sessions != 384 || cal.Replications != 500 || !strings.Contains(cal.Simulated, "planted probabilities") {
		t.Fatalf("design %+v", cal)
	}
	var power20 float64
	for _, r := range cal.Rows {
		if !r.Degenerate && (r.Coverage < 0.90 || r.Coverage > 0.99) {
			t.Errorf("%s / %s: coverage %.3f outside [0.90, 0.99]", r.Grid, r.Measure, r.Coverage)
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
	o := DefaultCalibrateOptions()
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
//	go test ./experiment -run XXX -bench Calibrate -benchtime 3x -cpu 2
func BenchmarkCalibrate(b *testing.B) {
	o := DefaultCalibrateOptions()
	o.Workers = runtime.GOMAXPROCS(0)
	for i := 0; i < b.N; i++ {
		if _, err := Calibrate(context.Background(), o); err != nil {
			b.Fatal(err)
		}
	}
}

// The calibration draws sessions from the planted probabilities instead of
// running conversations; that shortcut is only sound if the full simulator,
// run end to end through the runner and the store, produces the same rates.
// Four seeded discovery runs of the default profile are pooled and each
// rate must lie within four standard errors of the calibration's planted
// value.
func TestCalibrationModelMatchesSimulator(t *testing.T) {
	t.Parallel()
	prof := simProfile(t, "default")
	st := openTestStore(t)
	var up, drift, x, y pressure.Rate
	for seed := uint64(1); seed <= 4; seed++ {
		s := runDiscovery(t, st, sim.New(prof), seed, nil).Summary
		for _, p := range []struct {
			to *pressure.Rate
			r  pressure.Rate
		}{{&up, s.Uptake.All}, {&drift, s.NeutralDrift}, {&x, s.PooledByDir[0].Reversal}, {&y, s.PooledByDir[1].Reversal}} {
			p.to.Num += p.r.Num
			p.to.Den += p.r.Den
		}
	}
	_, px, py, pd, pu := plantedValues(prof)
	for _, c := range []struct {
		name    string
		r       pressure.Rate
		planted float64
	}{{"correction uptake", up, pu}, {"neutral drift", drift, pd}, {"toward X", x, px}, {"toward Y", y, py}} {
		se := math.Sqrt(c.planted * (1 - c.planted) / float64(c.r.Den))
		if math.Abs(c.r.Value()-c.planted) > 4*se {
			t.Errorf("%s: the simulator gives %s, the calibration model plants %.4f (4 SE = %.4f)", c.name, c.r, c.planted, 4*se)
		}
	}
}
