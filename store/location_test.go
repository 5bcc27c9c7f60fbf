package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A store directory whose name holds #, ? or % keeps its database inside
// it, not at a shortened name beside it.
func TestStoreDirectoryWithURICharacters(t *testing.T) {
	parent := t.TempDir()
	for _, name := range []string{"runs #2", "out?x", "100%", "a?b#c%d"} {
		dir := filepath.Join(parent, name)
		st, err := Open(dir)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := st.ListRuns(context.Background()); err != nil {
			t.Fatal(err)
		}
		st.Close()
		fi, err := os.Stat(filepath.Join(dir, dbName))
		if err != nil || fi.Size() == 0 {
			t.Errorf("%s: the database is not in the directory (%v)", name, err)
		}
	}
	ents, _ := os.ReadDir(parent)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if len(names) != 4 {
		t.Errorf("the parent holds %q: a store landed outside its directory", names)
	}
}

// Store URLs are recognised in any letter case; any other scheme is
// refused, its password never shown.
func TestStoreLocationSchemes(t *testing.T) {
	for _, loc := range []string{"POSTGRES://u:pw@h/db", "PostgreSQL://u:pw@h/db", "postgres://u:pw@h/db"} {
		if !IsURL(loc) {
			t.Errorf("%s is not recognised as a database URL", loc)
		}
		if r := Redact(loc); strings.Contains(r, "pw") {
			t.Errorf("Redact(%s) = %s", loc, r)
		}
	}
	for _, loc := range []string{"http://u:secret@h/x", "HTTPS://u:secret@h", "ftp://anon:secret@h"} {
		_, err := OpenLocation(context.Background(), loc, false)
		if err == nil || strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "a directory or a postgres:// URL") {
			t.Errorf("OpenLocation(%s) = %v", loc, err)
		}
		if _, err := os.Stat(loc); err == nil {
			t.Errorf("%s was created as a directory", loc)
		}
	}
	for _, loc := range []string{"runs", "./a://b", "C:/x", "dir with spaces"} {
		if IsURL(loc) {
			t.Errorf("%s read as a URL", loc)
		}
	}
}
