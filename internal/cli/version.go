package cli

import (
	"context"
	"fmt"
	"regexp"
	"runtime/debug"
	"strings"

	"github.com/buildlab/budge/study"
)

// pseudoVersion matches the version the go command gives a build of an
// untagged commit (v0.0.0-20261206194027-7aec4496da90, possibly +dirty).
var pseudoVersion = regexp.MustCompile(`[-.]\d{14}-[0-9a-f]{12}(\+dirty)?$`)

// cmdVersion prints what budge --version prints.
func cmdVersion(_ context.Context, std IO, args []string) error {
	if len(args) > 0 && args[0] != "-h" && args[0] != "--help" {
		return usageError{fmt.Sprintf("budge version takes no arguments, got %q", args[0])}
	}
	info, ok := debug.ReadBuildInfo()
	fmt.Fprintln(std.Out, versionLine(info, ok))
	return nil
}

// versionLine is one line: budge's version (the one every manifest
// records), then the module version the binary was built as and the VCS
// commit it was built from, when the build recorded them. A binary built
// from a checkout has the module version "(devel)" or a pseudo-version; it
// is shown as a development build, with its commit.
func versionLine(info *debug.BuildInfo, ok bool) string {
	var parts []string
	module := ""
	if ok && info != nil {
		module = info.Main.Version
	}
	switch {
	case module == "" || module == "(devel)" || pseudoVersion.MatchString(module):
		// Built from a checkout, not from a tagged module version: the
		// commit below says which.
		parts = append(parts, "development build")
	default:
		parts = append(parts, "module "+module)
	}
	var rev, when string
	modified := false
	if ok && info != nil {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	switch {
	case rev == "":
		parts = append(parts, "commit not recorded")
	default:
		if len(rev) > 12 {
			rev = rev[:12]
		}
		c := "commit " + rev
		if when != "" {
			c += " of " + when
		}
		if modified {
			c += ", with uncommitted changes"
		}
		parts = append(parts, c)
	}
	return fmt.Sprintf("budge %s (%s)", study.Version, strings.Join(parts, ", "))
}
