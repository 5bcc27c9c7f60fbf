package store

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// SQLite only: an emptied, missing or damaged database file, and a
// directory without a store, are about SQLite's files.

// wantRefused checks that open refuses the store in dir with an error that
// matches target and says each of want.
func wantRefused(t *testing.T, open func(dir string) (*Store, error), dir string, target error, want ...string) {
	t.Helper()
	s, err := open(dir)
	if err == nil {
		s.Close()
		t.Fatalf("opened the store in %s, want %v", dir, target)
	}
	if !errors.Is(err, target) {
		t.Errorf("error %v does not match %v", err, target)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}

// An emptied or removed database beside stored runs is refused, and left
// as it is; an empty one in a store without runs is a new store.
func TestOpenRefusesEmptiedDatabase(t *testing.T) {
	for name, damage := range map[string]func(path string) error{
		"zero length": func(path string) error { return os.Truncate(path, 0) },
		"missing":     os.Remove,
	} {
		t.Run(name, func(t *testing.T) {
			dir := newStoreWithRun(t)
			path := filepath.Join(dir, "budge.db")
			if err := damage(path); err != nil {
				t.Fatal(err)
			}
			wantRefused(t, Open, dir, ErrEmptyDatabase, path, "r1", "1 runs", "backup")
			if fi, err := os.Stat(path); err == nil && fi.Size() != 0 {
				t.Errorf("refusing the store wrote %d bytes to its database", fi.Size())
			}
			if _, err := OpenExisting(dir); !errors.Is(err, ErrEmptyDatabase) && !errors.Is(err, ErrNoStore) {
				t.Errorf("OpenExisting: %v, want a refusal", err)
			}
		})
	}
	t.Run("no runs", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "store")
		if err := os.MkdirAll(filepath.Join(dir, "runs"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "budge.db"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		createRun(t, s, "r1", base)
	})
}

func TestOpenExisting(t *testing.T) {
	root := t.TempDir()
	for name, dir := range map[string]string{
		"a missing directory":         filepath.Join(root, "budge-runz"),
		"a directory without a store": root,
	} {
		t.Run(name, func(t *testing.T) {
			wantRefused(t, OpenExisting, dir, ErrNoStore, dir, "--dir", "$BUDGE_DIR", "budge runs --dir")
		})
	}
	// Nothing was created.
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("OpenExisting created %v", entries)
	}

	dir := newStoreWithRun(t)
	s, err := OpenExisting(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.GetRun(context.Background(), "r1"); err != nil {
		t.Error(err)
	}
}

// A file that is not a database is an error naming it.
func TestOpenNotADatabase(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "budge.db")
	if err := os.WriteFile(path, bytes.Repeat([]byte("this is not a database. "), 400), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir)
	if err == nil {
		s.Close()
		t.Fatal("opened a file that is not a database")
	}
	var ce *CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) || ce.Path != path {
		t.Fatalf("error %v: want a *CorruptError for %s", err, path)
	}
	if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "backup") {
		t.Errorf("error %q does not name the file and what to do", err)
	}
}

// A damaged page of a table is an error naming the database file from the
// readers of that table.
func TestMalformedPageNamesTheDatabase(t *testing.T) {
	ctx := context.Background()
	for _, table := range []string{"runs", "sessions"} {
		t.Run(table, func(t *testing.T) {
			dir := newStoreWithRun(t)
			path := filepath.Join(dir, "budge.db")
			db := rawDB(t, dir)
			var root, pageSize int64
			if err := db.QueryRow(`SELECT rootpage FROM sqlite_master WHERE type = 'table' AND name = $1`, table).Scan(&root); err != nil {
				t.Fatal(err)
			}
			if err := db.QueryRow(`PRAGMA page_size`).Scan(&pageSize); err != nil {
				t.Fatal(err)
			}
			db.Close()
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt(bytes.Repeat([]byte{0xff}, int(pageSize)), (root-1)*pageSize); err != nil {
				t.Fatal(err)
			}
			f.Close()

			s, err := Open(dir)
			if err != nil {
				// The damage may be found at once; it must be named then too.
				if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
					t.Fatalf("Open: %v, want a *CorruptError naming %s", err, path)
				}
				return
			}
			defer s.Close()
			var read error
			if table == "runs" {
				_, read = s.ListRuns(ctx)
			} else {
				_, read = s.Sessions(ctx, "r1")
			}
			var ce *CorruptError
			if !errors.As(read, &ce) || ce.Path != path || !strings.Contains(read.Error(), path) {
				t.Errorf("reading a damaged %s table: %v, want a *CorruptError naming %s", table, read, path)
			}
		})
	}
}

// A store opened to write (a run) keeps the small page cache a connection
// that bounds a run's memory; one opened only to read an existing store
// (report, export) the larger one that keeps a big run's interior B-tree
// pages; the viewer, which holds several connections at once, half of it.
func TestReadersGetTheLargerPageCache(t *testing.T) {
	dir := t.TempDir()
	reader := func(writes bool) func(string) (*Store, error) {
		return func(dir string) (*Store, error) { return OpenReader(context.Background(), dir, writes) }
	}
	for _, c := range []struct {
		open func(string) (*Store, error)
		kb   int
	}{{Open, writerCacheKB}, {OpenExisting, readerCacheKB}, {reader(false), readerCacheKB}, {reader(true), viewerCacheKB}} {
		s, err := c.open(dir)
		if err != nil {
			t.Fatal(err)
		}
		var size int
		err = s.db.QueryRowContext(context.Background(), `PRAGMA cache_size`).Scan(&size)
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		if size != -c.kb {
			t.Errorf("cache_size %d, want %d (KB)", size, -c.kb)
		}
	}
	if readerCacheKB <= writerCacheKB {
		t.Errorf("a reader's cache (%d KB) is no larger than a writer's (%d KB)", readerCacheKB, writerCacheKB)
	}
}
