package cli

import (
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersionAgrees: budge --version, budge -version and budge version
// print the same line, naming budge's version.
func TestVersionAgrees(t *testing.T) {
	t.Parallel()
	var outs []string
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		code, out, errs := budge(t, args...)
		if code != ExitOK || errs != "" {
			t.Fatalf("budge %s: exit %d, stderr %q", args[0], code, errs)
		}
		outs = append(outs, out)
	}
	if outs[0] != outs[1] || outs[0] != outs[2] {
		t.Fatalf("versions differ: %q, %q, %q", outs[0], outs[1], outs[2])
	}
	if !strings.HasPrefix(outs[0], "budge 0.") || strings.Count(outs[0], "\n") != 1 {
		t.Fatalf("version is not one line naming budge's version: %q", outs[0])
	}
	if code, _, errs := budge(t, "version", "extra"); code != ExitInvalid || !strings.Contains(errs, "no arguments") {
		t.Fatalf("budge version extra: exit %d, %q", code, errs)
	}
}

func TestVersionLine(t *testing.T) {
	t.Parallel()
	vcs := []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "7aec4496da90d392349536ade2a79336d846ffca"},
		{Key: "vcs.time", Value: "2026-12-06T19:40:27Z"},
	}
	for _, c := range []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{"no build info", nil, false, "(development build, commit not recorded)"},
		{"devel without vcs", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true, "(development build, commit not recorded)"},
		{"devel with vcs", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs}, true,
			"(development build, commit 7aec4496da90 of 2026-12-06T19:40:27Z)"},
		{"pseudo-version, modified", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261206194027-7aec4496da90+dirty"},
			Settings: append(vcs[:3:3], debug.BuildSetting{Key: "vcs.modified", Value: "true"})}, true,
			"(development build, commit 7aec4496da90 of 2026-12-06T19:40:27Z, with uncommitted changes)"},
		{"pseudo-version after a tag", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.4-0.20261206194027-7aec4496da90"}}, true,
			"(development build, commit not recorded)"},
		{"tagged module", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, true, "(module v1.2.3, commit not recorded)"},
		{"tagged module with vcs", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: vcs}, true,
			"(module v1.2.3, commit 7aec4496da90 of 2026-12-06T19:40:27Z)"},
	} {
		got := versionLine(c.info, c.ok)
		if !strings.HasPrefix(got, "budge ") || !strings.HasSuffix(got, " "+c.want) {
			t.Errorf("%s: %q, want it to end %q", c.name, got, c.want)
		}
	}
}
