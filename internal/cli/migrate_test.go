package cli

import (
	"database/sql"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/buildlab/budge/store"
)

// Reading commands never migrate a store: one at an older schema version
// is refused, naming budge migrate, and left as it was; budge migrate
// brings it up to date and the reading commands work again.
func TestReadingCommandsNeverMigrate(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "store")
	if code, out, errs := budge(t, "run", "--dir", dir, "--quiet"); code != ExitOK && code != ExitBlocked {
		t.Fatalf("run exit %d\n%s\n%s", code, out, errs)
	}
	path := filepath.Join(dir, "budge.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("PRAGMA user_version = " + strconv.Itoa(store.SchemaVersion-1)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	before, _ := os.ReadFile(path)
	for _, cmd := range [][]string{{"runs"}, {"report", "latest"}, {"export", "latest"}, {"show", "latest", "--artifact", "sha256:00"}} {
		code, _, errs := budge(t, append(cmd, "--dir", dir)...)
		if code == ExitOK || !strings.Contains(errs, "budge migrate --dir "+dir) {
			t.Errorf("%s on an older store: exit %d, %s", cmd[0], code, errs)
		}
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Error("a reading command changed the database")
	}
	if code, out, errs := budge(t, "migrate", "--dir", dir); code != ExitOK || !strings.Contains(out, "schema version "+strconv.Itoa(store.SchemaVersion)) {
		t.Fatalf("migrate exit %d\n%s\n%s", code, out, errs)
	}
	if code, out, errs := budge(t, "runs", "--dir", dir); code != ExitOK || !strings.Contains(out, "complete") {
		t.Errorf("runs after migrate: exit %d\n%s\n%s", code, out, errs)
	}
	if code, _, errs := budge(t, "migrate", "--dir", filepath.Join(t.TempDir(), "none")); code == ExitOK || !strings.Contains(errs, "no budge store") {
		t.Errorf("migrate of no store: exit %d, %s", code, errs)
	}
}
