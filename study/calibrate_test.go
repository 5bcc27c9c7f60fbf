package study

import (
	"math"
	"testing"

	"github.com/buildlab/budge/pressure/calibrate"
	"github.com/buildlab/budge/provider/sim"
	"github.com/buildlab/budge/stats"
	"github.com/buildlab/budge/testkit/storetest"
)

// The calibration draws sessions from the planted probabilities instead of
// running conversations; that shortcut is only sound if the full simulator,
// run end to end through the runner and the store, produces the same rates.
// Four seeded discovery runs of the default profile are pooled and each
// rate must lie within four standard errors of the calibration's planted
// value. (The calibration lives in pressure/calibrate, which never runs a
// provider; this test stays here because it needs the runner and the store.)
func TestCalibrationModelMatchesSimulator(t *testing.T) {
	t.Parallel()
	prof := simProfile(t, "default")
	st := storetest.Open(t)
	var up, drift, x, y stats.Rate
	for seed := uint64(1); seed <= 4; seed++ {
		s := runDiscovery(t, st, sim.New(prof), seed, nil).Summary
		for _, p := range []struct {
			to *stats.Rate
			r  stats.Rate
		}{{&up, s.Uptake.All}, {&drift, s.NeutralDrift}, {&x, s.PooledByDir[0].Reversal}, {&y, s.PooledByDir[1].Reversal}} {
			p.to.Num += p.r.Num
			p.to.Den += p.r.Den
		}
	}
	_, px, py, pd, pu := calibrate.PlantedValues(calibrate.Knobs{InitialError: prof.InitialError, Reversal: prof.Reversal,
		NeutralDrift: prof.NeutralDrift, CorrectionUptake: prof.CorrectionUptake, SkipReread: prof.SkipReread,
		Refusal: prof.Refusal, Malformed: prof.Malformed})
	for _, c := range []struct {
		name    string
		r       stats.Rate
		planted float64
	}{{"correction uptake", up, pu}, {"neutral drift", drift, pd}, {"toward X", x, px}, {"toward Y", y, py}} {
		se := math.Sqrt(c.planted * (1 - c.planted) / float64(c.r.Den))
		if math.Abs(fraction(c.r)-c.planted) > 4*se {
			t.Errorf("%s: the simulator gives %s, the calibration model plants %.4f (4 SE = %.4f)", c.name, c.r, c.planted, 4*se)
		}
	}
}
