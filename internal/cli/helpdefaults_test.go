package cli

import (
	"flag"
	"regexp"
	"strings"
	"testing"

	"github.com/buildlab/budge/store"
)

// helpPages is every page of help budge prints: each command, and each
// subcommand of those that have them.
func helpPages(t *testing.T) [][]string {
	sub := map[string][]string{
		"framing": {"run", "report", "import", "export-training"},
		"deck":    {"init", "check", "list", "schema", "freeze"},
		"sim":     {"serve"},
		"review":  {"sample", "token", "status", "export"},
	}
	pages := [][]string{{}}
	for _, c := range commands() {
		pages = append(pages, []string{c.name})
		// A "Subcommands:" list names no subcommand this test misses.
		_, out, _ := budge(t, c.name, "--help")
		if i := strings.Index(out, "\nSubcommands:\n"); i >= 0 {
			for _, l := range strings.Split(out[i+len("\nSubcommands:\n"):], "\n") {
				f := strings.Fields(l)
				if len(f) == 0 {
					break
				}
				if !strings.Contains(strings.Join(sub[c.name], " "), f[0]) {
					t.Errorf("budge %s --help lists subcommand %q that this test does not read", c.name, f[0])
				}
			}
		}
		for _, s := range sub[c.name] {
			pages = append(pages, []string{c.name, s})
		}
	}
	return pages
}

// statedDefault is one statement of a flag's default.
var statedDefault = regexp.MustCompile(`\(default\b|\bdefaults? (is|to)\b|\bby default\b`)

// TestHelpStatesDefaultsOnce: no flag of any help page states its default
// twice, as "(default from $BUDGE_DIR) (default budge-runs)" did.
func TestHelpStatesDefaultsOnce(t *testing.T) {
	t.Setenv("BUDGE_STORE", "")
	t.Setenv("BUDGE_DIR", "")
	flags := 0
	for _, page := range helpPages(t) {
		code, out, _ := budge(t, append(append([]string{}, page...), "--help")...)
		name := strings.TrimSpace("budge " + strings.Join(page, " "))
		if code != ExitOK || out == "" {
			t.Errorf("%s --help: exit %d, %d bytes", name, code, len(out))
			continue
		}
		// flag.PrintDefaults writes "  -name TYPE" then the usage on
		// lines indented "    \t"; an entry is the two together.
		var entry []string
		check := func() {
			if len(entry) > 0 {
				flags++
				if n := len(statedDefault.FindAllString(strings.Join(entry, " "), -1)); n > 1 {
					t.Errorf("%s --help states a default %d times:\n%s", name, n, strings.Join(entry, "\n"))
				}
			}
			entry = nil
		}
		for _, l := range strings.Split(out, "\n") {
			switch {
			case strings.HasPrefix(l, "  -"):
				check()
				entry = []string{l}
			case strings.HasPrefix(l, "    \t") && entry != nil:
				entry = append(entry, l)
			default:
				check()
			}
		}
		check()
	}
	if flags < 100 {
		t.Fatalf("read only %d flag entries: the help layout changed under this test", flags)
	}
}

// TestStoreFlag: --store and its alias --dir set the same location, a
// directory or a postgres:// URL in any case; the environment gives the
// default.
func TestStoreFlag(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, nil, "budge-runs"},
		{map[string]string{"BUDGE_DIR": "/d"}, nil, "/d"},
		{map[string]string{"BUDGE_DIR": "/d", "BUDGE_STORE": "/s"}, nil, "/s"},
		{map[string]string{"BUDGE_STORE": "/s"}, []string{"--dir", "/x"}, "/x"},
		{nil, []string{"--store", "/x"}, "/x"},
		{nil, []string{"-dir", "POSTGRES://u:pw@db/budge"}, "POSTGRES://u:pw@db/budge"},
		{nil, []string{"--store", "PostgreSQL://db/budge"}, "PostgreSQL://db/budge"},
	} {
		t.Setenv("BUDGE_STORE", c.env["BUDGE_STORE"])
		t.Setenv("BUDGE_DIR", c.env["BUDGE_DIR"])
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		loc := dirFlag(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if *loc != c.want {
			t.Errorf("%v %v: %q, want %q", c.env, c.args, *loc, c.want)
		}
		if strings.Contains(c.want, "://") && !store.IsURL(*loc) {
			t.Errorf("%q is not taken for a database URL", *loc)
		}
	}
}
