package study

import (
	"errors"
	"strings"

	"github.com/buildlab/budge/framing"
)

// invalidError is bad input whose message is the problem itself, without
// the "invalid input" prefix of ErrInvalid: the command line prints it as
// it is and exits as for any invalid input.
type invalidError struct{ err error }

func (e invalidError) Error() string    { return e.err.Error() }
func (e invalidError) Unwrap() error    { return e.err }
func (invalidError) InvalidInput() bool { return true }

// DesignChoice names a framing design the way a command line gives it:
// template sets and label sets (built-in names or directories) to cross,
// mitigations, where mitigated arms take C1 from, challenge families (and a
// file of their wording) and the policy for unparseable answers.
type DesignChoice struct {
	Templates, Labels, Mitigations []string
	Mode, Challenge, ChallengeFile string
	Policy                         string
}

// BuildDesign is the framing design c names, checked: a name that opens
// nothing or a design that does not hold together is invalid input.
func BuildDesign(c DesignChoice) (framing.Design, error) {
	d := framing.DefaultDesign()
	d.Mode, d.Policy = c.Mode, c.Policy
	var err error
	if len(c.Templates) > 0 {
		if d.Templates, err = each(c.Templates, framing.OpenTemplates); err != nil {
			return d, err
		}
	}
	if len(c.Labels) > 0 {
		if d.Labels, err = each(c.Labels, framing.ParseLabels); err != nil {
			return d, err
		}
	}
	if d.Mitigations, err = each(c.Mitigations, framing.ParseMitigation); err != nil {
		return d, err
	}
	if c.Challenge != "" || c.ChallengeFile != "" {
		fams := strings.Split(c.Challenge, ",")
		if c.Challenge == "" {
			fams = []string{"all"}
		}
		if d.Challenges, err = framing.ParseChallenges(fams, c.ChallengeFile); err != nil {
			return d, invalidError{err}
		}
	}
	if errs := d.Validate(); len(errs) > 0 {
		return d, invalidError{errors.New(strings.Join(errs, "; "))}
	}
	return d, nil
}

// each opens every one of names; a bad one is invalid input.
func each[T any](names []string, open func(string) (T, error)) ([]T, error) {
	var out []T
	for _, n := range names {
		v, err := open(n)
		if err != nil {
			return nil, invalidError{err}
		}
		out = append(out, v)
	}
	return out, nil
}
