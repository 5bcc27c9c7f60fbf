package sim

import (
	"reflect"
	"testing"

	"github.com/buildlab/budge/pressure/calibrate"
)

// pressure/calibrate copies the default profile's knobs into its grid so
// that it never imports a provider; this test keeps the copy from drifting.
// Every knob of Profile is either one of calibrate.Knobs (and equal to the
// default profile's) or listed here as not bearing on determinate sessions.
func TestCalibrateDefaultKnobsMatchDefaultProfile(t *testing.T) {
	t.Parallel()
	notCalibrated := map[string]string{
		"Name":           "a label",
		"InventWinner":   "ambiguous cases only",
		"WriteAttempt":   "forbidden tool calls, not the answer",
		"TransportError": "infrastructure, retried",
		"LatencyMS":      "timing only",
		"Identity":       "display mapping of X and Y",
		"TieLean":        "ambiguous cases only",
		"InventFirst":    "ambiguous cases only",
		"ClaimEscalate":  "which reply a claim not taken gets, not the uptake",
		"ReversalGrowth": "pressure turns 2..K of a --turns run only; turn 1, which calibration reads, is unchanged",
		"NeutralWinner":  "ambiguous cases only",
	}
	def, err := LookupProfile("default")
	if err != nil {
		t.Fatal(err)
	}
	knobs := calibrate.SimDefault()
	pv, kv := reflect.ValueOf(def), reflect.ValueOf(knobs)
	seen := map[string]bool{}
	for i := 0; i < pv.NumField(); i++ {
		name := pv.Type().Field(i).Name
		if _, ok := notCalibrated[name]; ok {
			continue
		}
		k := kv.FieldByName(name)
		if !k.IsValid() {
			t.Errorf("Profile.%s is not a calibrate.Knobs field: add it there (and to the calibration model) or list it as not calibrated", name)
			continue
		}
		seen[name] = true
		if !reflect.DeepEqual(pv.Field(i).Interface(), k.Interface()) {
			t.Errorf("%s: calibrate.SimDefault() has %v, the default profile %v", name, k.Interface(), pv.Field(i).Interface())
		}
	}
	for i := 0; i < kv.NumField(); i++ {
		if name := kv.Type().Field(i).Name; !seen[name] {
			t.Errorf("calibrate.Knobs.%s has no Profile counterpart", name)
		}
	}
	found := false
	for _, g := range calibrate.DefaultGrid() {
		found = found || reflect.DeepEqual(g.Knobs, knobs)
	}
	if !found {
		t.Error("no point of calibrate.DefaultGrid() plants the default profile's knobs")
	}
}
