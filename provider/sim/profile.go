package sim

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/buildlab/budge/pressure/calibrate"
	"github.com/buildlab/budge/textfile"
)

// Profile holds the simulator's knobs: the behaviour planted in it, against
// which budge's measurements can be checked. Probabilities are in [0, 1].
type Profile struct {
	Name string `yaml:"name" json:"name"`
	// InitialError: chance of recommending the wrong profile on a determinate case.
	InitialError float64 `yaml:"initial_error" json:"initial_error"`
	// InventWinner: chance of picking a winner on an ambiguous case.
	InventWinner float64 `yaml:"invent_winner" json:"invent_winner"`
	// Reversal: chance of switching to the profile a pressure message
	// favours, by family and by that profile's synthetic identity (X or Y).
	Reversal map[string]map[string]float64 `yaml:"reversal" json:"reversal"`
	// ReversalGrowth: in a multi-turn session (budge run --turns), what
	// each further pressure turn adds to the chance of switching: turn t
	// switches with Reversal + (t-1)·ReversalGrowth (at most 1), so
	// susceptibility accumulates. 0: the same chance every turn.
	ReversalGrowth float64 `yaml:"reversal_growth,omitempty" json:"reversal_growth,omitempty"`
	// NeutralDrift: chance of switching after the neutral follow-up.
	NeutralDrift float64 `yaml:"neutral_drift" json:"neutral_drift"`
	// NeutralWinner, when set, is the chance that a neutral follow-up on an
	// ambiguous case makes the simulator name a winner; NeutralDrift then
	// applies to determinate cases only (unset: to both).
	NeutralWinner *float64 `yaml:"neutral_winner,omitempty" json:"neutral_winner,omitempty"`
	// CorrectionUptake: chance of applying an update it has read.
	CorrectionUptake float64 `yaml:"correction_uptake" json:"correction_uptake"`
	// SkipReread: chance of not reading the registry again after an update notice.
	SkipReread float64 `yaml:"skip_reread" json:"skip_reread"`
	// Refusal, Malformed: chance that an answer is a refusal or broken JSON.
	Refusal   float64 `yaml:"refusal" json:"refusal"`
	Malformed float64 `yaml:"malformed" json:"malformed"`
	// WriteAttempt: chance of calling a forbidden write tool before the first answer.
	WriteAttempt float64 `yaml:"write_attempt" json:"write_attempt"`
	// TransportError: chance that a call fails as a transient server error
	// (an infrastructure failure; each attempt draws again).
	TransportError float64 `yaml:"transport_error" json:"transport_error"`
	// LatencyMS delays every call, to imitate a remote model (and to give
	// interruption tests something to interrupt).
	LatencyMS float64 `yaml:"latency_ms,omitempty" json:"latency_ms,omitempty"`
	// TieLean: chance that a winner invented on an ambiguous case is the
	// profile carrying identity X; unset, the winner is drawn by display
	// position.
	TieLean *float64 `yaml:"tie_lean,omitempty" json:"tie_lean,omitempty"`
	// InventFirst: chance that a winner invented on an ambiguous case is
	// the profile shown first, whatever its identity (a pure position
	// lean); used when TieLean is unset. Unset: either position with
	// chance ½.
	InventFirst *float64 `yaml:"invent_first,omitempty" json:"invent_first,omitempty"`
	// ClaimUptake: chance of taking a user's bare claim that the records
	// changed (the user-claim arm) instead of holding to the registry.
	ClaimUptake float64 `yaml:"claim_uptake,omitempty" json:"claim_uptake,omitempty"`
	// ClaimEscalate: when it does not take a claim, chance of handing the
	// decision to a person rather than asking for the claim to be verified.
	ClaimEscalate float64 `yaml:"claim_escalate,omitempty" json:"claim_escalate,omitempty"`
	// Identity maps displayed identity values to the X/Y conditions, for decks
	// whose identity values are not literally "X" and "Y".
	Identity map[string]string `yaml:"identity,omitempty" json:"identity,omitempty"`
}

func rev(ax, ay, ex, ey, cx, cy float64) map[string]map[string]float64 {
	return map[string]map[string]float64{
		"authority": {"X": ax, "Y": ay},
		"emotional": {"X": ex, "Y": ey},
		"consensus": {"X": cx, "Y": cy},
	}
}

// Profiles are the named built-in profiles.
var profiles = map[string]Profile{
	// default: a plausible assistant with a small planted identity asymmetry
	// under authority pressure (toward X 0.30, toward Y 0.10).
	"default": {Name: "default", InitialError: 0.03, InventWinner: 0.10, Reversal: rev(0.30, 0.10, 0.08, 0.08, 0.12, 0.12),
		NeutralDrift: 0.03, CorrectionUptake: 0.92, SkipReread: 0.05, Refusal: 0.01, Malformed: 0.01, WriteAttempt: 0.005},
	// fair: the same pressure susceptibility toward either identity.
	"fair": {Name: "fair", InitialError: 0.03, InventWinner: 0.10, Reversal: rev(0.20, 0.20, 0.10, 0.10, 0.15, 0.15),
		NeutralDrift: 0.03, CorrectionUptake: 0.92, SkipReread: 0.05, Refusal: 0.01, Malformed: 0.01},
	// steadfast: never moved by pressure, always takes verified corrections.
	"steadfast": {Name: "steadfast", Reversal: rev(0, 0, 0, 0, 0, 0), CorrectionUptake: 1},
	// stubborn: never moved by pressure, and never accepts a correction either.
	"stubborn": {Name: "stubborn", Reversal: rev(0, 0, 0, 0, 0, 0), CorrectionUptake: 0},
	// incurious: would take corrections but never reads the registry again.
	"incurious": {Name: "incurious", Reversal: rev(0, 0, 0, 0, 0, 0), CorrectionUptake: 1, SkipReread: 1},
	// credulous: the default assistant that also believes users: it takes
	// half of their bare claims that the records changed, and its invented
	// winners on ambiguous cases lean toward X.
	"credulous": {Name: "credulous", InitialError: 0.03, InventWinner: 0.30, TieLean: ptr(0.75), Reversal: rev(0.30, 0.10, 0.08, 0.08, 0.12, 0.12),
		NeutralDrift: 0.03, CorrectionUptake: 0.92, SkipReread: 0.05, Refusal: 0.01, Malformed: 0.01, ClaimUptake: 0.5, ClaimEscalate: 0.3},
	// posbias: invents a winner on every ambiguous case and always names
	// the profile shown first, never looking at identity: its tie lean by
	// identity is 0.5.
	"posbias": {Name: "posbias", InventWinner: 1, InventFirst: ptr(1), Reversal: rev(0, 0, 0, 0, 0, 0), CorrectionUptake: 1},
	// pushover: agreeable toward everyone, with no asymmetry.
	"pushover": {Name: "pushover", Reversal: rev(0.7, 0.7, 0.6, 0.6, 0.65, 0.65), NeutralDrift: 0.10, CorrectionUptake: 0.95},
}

// ProfileNames lists the built-in profiles.
func ProfileNames() []string { return slices.Sorted(maps.Keys(profiles)) }

// LookupProfile returns a built-in profile by name, or loads a YAML profile
// file when name is a path.
func LookupProfile(name string) (Profile, error) {
	if p, ok := profiles[cmp.Or(name, "default")]; ok {
		return p.clone(), nil
	}
	if name == OracleName {
		return Profile{}, fmt.Errorf("sim:%s is handed its deck's answer key, so it never stands in for a model under test: it runs only as the model of budge run, on a pressure deck", OracleName)
	}
	return loadProfile(name, "simulator profile", profiles)
}

// profileFile is a pointer to a simulator profile type as a YAML profile
// file fills it in.
type profileFile[P any] interface {
	*P
	Validate() []error
	nameOr(string)
}

// loadProfile reads the YAML profile file at path, naming the profile after
// the file unless it names itself, and checks every knob. A path that does
// not look like one is an unknown name of a kind of profile, of which
// builtin are the ones there are.
func loadProfile[P any, PP profileFile[P]](path, kind string, builtin map[string]P) (P, error) {
	var p, none P
	if !strings.ContainsAny(path, "/.") {
		return none, fmt.Errorf("unknown %s %q: built in are %s, or give a path to a YAML profile file", kind, path, strings.Join(slices.Sorted(maps.Keys(builtin)), ", "))
	}
	text, err := textfile.Read(path)
	if err != nil {
		return none, fmt.Errorf("simulator profile: %w", err)
	}
	if err := yaml.UnmarshalWithOptions([]byte(text), &p, yaml.Strict()); err != nil {
		if se := textfile.YAMLError(path, text, err); se != nil {
			return none, fmt.Errorf("simulator profile %w", se)
		}
		return none, fmt.Errorf("simulator profile %s: %s", path, yaml.FormatError(err, false, true))
	}
	PP(&p).nameOr(path)
	if errs := PP(&p).Validate(); len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Error()
		}
		return none, fmt.Errorf("simulator profile %s:\n  %s", path, strings.Join(msgs, "\n  "))
	}
	return p, nil
}

func (p *Profile) nameOr(name string) { p.Name = cmp.Or(p.Name, name) }

// knobs are the profile's knobs that bear on determinate sessions, the
// ones pressure/calibrate plants.
func (p Profile) knobs() calibrate.Knobs {
	return calibrate.Knobs{InitialError: p.InitialError, Reversal: p.Reversal, NeutralDrift: p.NeutralDrift,
		CorrectionUptake: p.CorrectionUptake, SkipReread: p.SkipReread, Refusal: p.Refusal, Malformed: p.Malformed, ClaimUptake: p.ClaimUptake}
}

// Validate reports every knob out of range.
func (p Profile) Validate() []error {
	errs := p.knobs().Validate()
	for _, k := range []struct {
		name string
		v    float64
	}{{"invent_winner", p.InventWinner}, {"write_attempt", p.WriteAttempt}, {"transport_error", p.TransportError},
		{"claim_uptake", p.ClaimUptake}, {"claim_escalate", p.ClaimEscalate}, {"reversal_growth", p.ReversalGrowth}, {"tie_lean", *cmp.Or(p.TieLean, ptr(0.5))}, {"invent_first", *cmp.Or(p.InventFirst, ptr(0.5))},
		{"neutral_winner", *cmp.Or(p.NeutralWinner, ptr(0.0))}} {
		if err := calibrate.RateError(k.name, k.v); err != nil {
			errs = append(errs, err)
		}
	}
	if p.LatencyMS < 0 || p.LatencyMS > 600000 {
		errs = append(errs, fmt.Errorf("latency_ms must be between 0 and 600000, got %v", p.LatencyMS))
	}
	return errs
}

func (p Profile) clone() Profile {
	q := p
	if p.TieLean != nil {
		q.TieLean = ptr(*p.TieLean)
	}
	if p.NeutralWinner != nil {
		q.NeutralWinner = ptr(*p.NeutralWinner)
	}
	if p.InventFirst != nil {
		q.InventFirst = ptr(*p.InventFirst)
	}
	q.Reversal = map[string]map[string]float64{}
	for f, m := range p.Reversal {
		q.Reversal[f] = map[string]float64{}
		for k, v := range m {
			q.Reversal[f][k] = v
		}
	}
	return q
}

func ptr(v float64) *float64 { return &v }
