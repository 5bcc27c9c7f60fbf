package cli

import (
	"flag"
	"fmt"
	"slices"
	"strings"
)

// choiceFlag is a string flag that takes one of a few values: it refuses any
// other as the command line is parsed.
type choiceFlag struct {
	name    string
	val     *string
	allowed []string
}

// formatFlag adds a flag (usually --format) that takes one of allowed, def
// unless given; a def that is not allowed makes the flag required.
func formatFlag(fs *flag.FlagSet, name, def, usage string, allowed ...string) *string {
	c := &choiceFlag{name: name, val: &def, allowed: allowed}
	fs.Var(c, name, usage)
	return c.val
}

func (c *choiceFlag) String() string {
	if c == nil || c.val == nil {
		return ""
	}
	return *c.val
}

func (c *choiceFlag) Set(s string) error {
	if err := c.check(s); err != nil {
		return err
	}
	*c.val = s
	return nil
}

func (c *choiceFlag) check(s string) error {
	if slices.Contains(c.allowed, s) {
		return nil
	}
	return usageError{fmt.Sprintf("--%s must be %s, got %q", c.name, orList(c.allowed), s)}
}

// orList is "a, b or c".
func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// checkChoices refuses a choice flag left at a default it does not allow.
func checkChoices(fs *flag.FlagSet) error {
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if c, ok := f.Value.(*choiceFlag); ok && err == nil {
			err = c.check(*c.val)
		}
	})
	return err
}

// printDefaults is fs.PrintDefaults, with choice flags shown as the string
// flags they are: "-format string", (default "text").
func printDefaults(fs *flag.FlagSet) {
	plain := flag.NewFlagSet("", flag.ContinueOnError)
	var restore []func()
	fs.VisitAll(func(f *flag.Flag) {
		if c, ok := f.Value.(*choiceFlag); ok {
			plain.String(f.Name, "", "")
			f.Value = plain.Lookup(f.Name).Value
			restore = append(restore, func() { f.Value = c })
		}
	})
	fs.PrintDefaults()
	for _, r := range restore {
		r()
	}
}

// listFlag collects a repeatable flag; with split set, each value may also
// be a comma-separated list.
type listFlag struct {
	vals  []string
	split bool
}

func (l *listFlag) String() string { return strings.Join(l.vals, ",") }
func (l *listFlag) Set(s string) error {
	if l.split {
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				l.vals = append(l.vals, p)
			}
		}
		return nil
	}
	l.vals = append(l.vals, s)
	return nil
}

// listVar adds a listFlag.
func listVar(fs *flag.FlagSet, name string, split bool, usage string) *listFlag {
	l := &listFlag{split: split}
	fs.Var(l, name, usage)
	return l
}
