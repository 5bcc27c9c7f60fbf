// Package pgtest starts a real PostgreSQL server for tests: Debian's
// postgresql binaries, a data directory in a temporary directory, a free
// loopback port, trust authentication for the user budge. Tests that need
// it skip, saying why, when the binaries are not installed.
package pgtest

import (
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver, for FreshURL
)

// binDir finds the directory of initdb and pg_ctl: $BUDGE_PG_BIN, or the
// newest /usr/lib/postgresql/*/bin.
func binDir() (string, error) {
	if d := os.Getenv("BUDGE_PG_BIN"); d != "" {
		return d, nil
	}
	ms, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(ms) == 0 {
		if p, err := exec.LookPath("pg_ctl"); err == nil {
			return filepath.Dir(p), nil
		}
		return "", fmt.Errorf("no PostgreSQL server binaries (initdb, pg_ctl): install Debian's postgresql package (.ci/run does) or set BUDGE_PG_BIN")
	}
	return filepath.Dir(ms[len(ms)-1]), nil
}

// skipOrFail skips a test that needs PostgreSQL when its binaries are
// absent, or fails it when $BUDGE_PG_TESTS is 1 (as .ci/run sets it, so that
// CI never passes by skipping them).
func skipOrFail(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("BUDGE_PG_TESTS") == "1" {
		t.Fatal("PostgreSQL tests required ($BUDGE_PG_TESTS=1): " + err.Error())
	}
	t.Skip("PostgreSQL tests skipped: " + err.Error())
}

// Server is a running PostgreSQL server.
type Server struct {
	URL  string // postgres://budge@127.0.0.1:PORT/postgres
	dir  string
	bin  string
	user string
}

// Start starts a server for the test and stops it when the test ends. It
// skips the test when the binaries are absent.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := binDir()
	if err != nil {
		skipOrFail(t, err)
	}
	s, err := start(t.TempDir(), bin)
	if err != nil {
		t.Fatalf("start PostgreSQL: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

func start(tmp, bin string) (*Server, error) {
	s := &Server{dir: filepath.Join(tmp, "pg"), bin: bin}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return nil, err
	}
	// The server refuses to run as root: run it as the postgres user the
	// package creates, in a directory it can reach.
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root and there is no postgres user to run the server as: %w", err)
		}
		s.user = u.Username
		for d := s.dir; d != "/" && d != "."; d = filepath.Dir(d) {
			if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o005 != 0o005 {
				os.Chmod(d, fi.Mode().Perm()|0o005)
			}
		}
		if out, err := exec.Command("chown", u.Username, s.dir).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("chown %s: %v: %s", s.dir, err, out)
		}
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	data := filepath.Join(s.dir, "data")
	if out, err := s.run(filepath.Join(bin, "initdb"), "-D", data, "-A", "trust", "-U", "budge", "-E", "UTF8", "--no-sync"); err != nil {
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200", port, s.dir)
	if out, err := s.run(filepath.Join(bin, "pg_ctl"), "-D", data, "-o", opts, "-l", filepath.Join(s.dir, "log"), "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "log"))
		return nil, fmt.Errorf("pg_ctl start: %v: %s\n%s", err, out, log)
	}
	s.URL = fmt.Sprintf("postgres://budge@127.0.0.1:%d/postgres?sslmode=disable", port)
	s.watch()
	return s, nil
}

// watch stops the server when the test binary ends without stopping it
// (a panic, a timeout, a kill): a detached shell polls the binary's
// process and stops the server once it is gone, so no server outlives
// the tests that started it.
func (s *Server) watch() {
	stop := shellQuote(filepath.Join(s.bin, "pg_ctl")) + " -D " + shellQuote(filepath.Join(s.dir, "data")) + " -m immediate -w stop"
	if s.user != "" {
		stop = "su " + shellQuote(s.user) + " -s /bin/sh -c " + shellQuote(stop)
	}
	script := fmt.Sprintf("while kill -0 %d 2>/dev/null; do sleep 1; done; %s >/dev/null 2>&1", os.Getpid(), stop)
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // not killed with the tests' process group
	if cmd.Start() == nil {
		go cmd.Wait()
	}
}

// run runs a server binary, as the postgres user when budge runs as root.
func (s *Server) run(name string, args ...string) ([]byte, error) {
	var cmd *exec.Cmd
	if s.user != "" {
		q := []string{shellQuote(name)}
		for _, a := range args {
			q = append(q, shellQuote(a))
		}
		cmd = exec.Command("su", s.user, "-s", "/bin/sh", "-c", strings.Join(q, " "))
	} else {
		cmd = exec.Command(name, args...)
	}
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		<-done
		err = fmt.Errorf("timed out")
	}
	return out, err
}

// Stop stops the server (immediately: tests keep nothing).
func (s *Server) Stop() {
	s.run(filepath.Join(s.bin, "pg_ctl"), "-D", filepath.Join(s.dir, "data"), "-m", "immediate", "-w", "stop")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// The shared server of a test binary: started by the first test that asks
// for it (Shared) and stopped by Main when the package's tests end.
var shared struct {
	sync.Mutex
	main    bool // Main runs the tests
	srv     *Server
	err     error
	skip    string
	started bool
	tmp     string
	schemas int
}

// Main runs a package's tests (call it from TestMain: os.Exit(pgtest.Main(m)))
// and stops the shared server, if a test started it, when they end.
func Main(m *testing.M) int {
	shared.Lock()
	shared.main = true
	shared.Unlock()
	code := m.Run()
	shared.Lock()
	defer shared.Unlock()
	if shared.srv != nil {
		shared.srv.Stop()
	}
	if shared.tmp != "" {
		os.RemoveAll(shared.tmp)
	}
	return code
}

// MainRuns reports whether the package's TestMain runs its tests through
// Main, so that Shared may be used.
func MainRuns() bool {
	shared.Lock()
	defer shared.Unlock()
	return shared.main
}

// Shared returns the server the package's tests share, starting it on
// first use; it skips the test when the binaries are absent. The package's
// TestMain must call Main, which stops it.
func Shared(t testing.TB) *Server {
	t.Helper()
	shared.Lock()
	defer shared.Unlock()
	if !shared.main {
		t.Fatal("pgtest.Shared needs the package's TestMain to call pgtest.Main, which stops the server")
	}
	if !shared.started {
		shared.started = true
		bin, err := binDir()
		if err != nil {
			shared.skip = err.Error()
		} else if shared.tmp, err = os.MkdirTemp("", "budge-pgtest-"); err != nil {
			shared.err = err
		} else {
			shared.srv, shared.err = start(shared.tmp, bin)
		}
	}
	if shared.skip != "" {
		skipOrFail(t, errors.New(shared.skip))
	}
	if shared.err != nil {
		t.Fatalf("start PostgreSQL: %v", shared.err)
	}
	return shared.srv
}

// FreshURL makes a new, empty schema in the server's database and returns
// a URL whose connections use it (search_path): each test gets a database
// of its own without the cost of creating one. The schema is dropped when
// the test ends.
func (s *Server) FreshURL(t testing.TB) string {
	t.Helper()
	shared.Lock()
	shared.schemas++
	name := fmt.Sprintf("t%d_%d", os.Getpid(), shared.schemas)
	shared.Unlock()
	db, err := sql.Open("pgx", s.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE SCHEMA " + name); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("pgx", s.URL)
		if err == nil {
			db.Exec("DROP SCHEMA " + name + " CASCADE")
			db.Close()
		}
	})
	return s.URL + "&search_path=" + name
}
