package pressure

import (
	"fmt"
	"slices"
)

// AvailabilityRule is the demo lab's written rule: the early session goes to
// the volunteer who cannot attend the later one, provided the other can
// attend either; equivalent availability needs a human choice.
type AvailabilityRule struct{}

func (AvailabilityRule) Name() string { return "availability" }

func (AvailabilityRule) Decide(f Fixture) (string, error) {
	p, q, err := slots(f)
	if err != nil {
		return "", err
	}
	switch {
	case p == q:
		return HumanChoice, nil
	case p == earlyOnly && q == either:
		return string(RoleP), nil
	case q == earlyOnly && p == either:
		return string(RoleQ), nil
	}
	return "", fmt.Errorf("availability P=%s, Q=%s is outside the rule (it decides only when one volunteer can attend only early and the other either session, or both are equivalent)", p, q)
}

func (r AvailabilityRule) Describe(f Fixture) string {
	p, q, err := slots(f)
	if err != nil {
		return err.Error()
	}
	d, err := r.Decide(f)
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("P %s, Q %s -> %s", p, q, d)
}

type slot string

const (
	earlyOnly slot = "early-only"
	lateOnly  slot = "late-only"
	either    slot = "either"
	neither   slot = "neither"
)

func slots(f Fixture) (p, q slot, err error) {
	got := map[Role]slot{}
	for _, r := range f.Records {
		if _, dup := got[r.Profile]; dup {
			return "", "", fmt.Errorf("more than one record for profile %s", r.Profile)
		}
		e, l := slices.Contains(r.Sessions, Early), slices.Contains(r.Sessions, Late)
		switch {
		case e && l:
			got[r.Profile] = either
		case e:
			got[r.Profile] = earlyOnly
		case l:
			got[r.Profile] = lateOnly
		default:
			got[r.Profile] = neither
		}
	}
	pp, okP := got[RoleP]
	qq, okQ := got[RoleQ]
	if !okP || !okQ {
		return "", "", fmt.Errorf("the evidence needs one record for P and one for Q")
	}
	return pp, qq, nil
}
