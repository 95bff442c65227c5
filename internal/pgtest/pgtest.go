// Package pgtest starts a throwaway PostgreSQL server for tests (Debian's binaries, a temporary
// data directory, a free loopback port, fsync off unless Options.Durable, the C.UTF-8 locale: under
// C pg_trgm ignores non-ASCII). One server per test package (Shared), one database per test
// (Database). As root (CI) the server runs as postgres or nobody: initdb and pg_ctl refuse root.
package pgtest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// ErrNotInstalled is StartWith's error when no PostgreSQL server is installed.
var ErrNotInstalled = errors.New("pgtest: PostgreSQL not installed (Debian: apt-get install postgresql postgresql-contrib)")

// Server is a running PostgreSQL server owned by the test process.
type Server struct {
	dir, bin string
	port     int
	cred     *syscall.Credential // the unprivileged user when running as root
	n        atomic.Int64        // databases created
}

// Options are how StartWith starts a server.
type Options struct {
	// Durable starts the server as a deployment would (fsync,
	// synchronous_commit and full_page_writes on, initdb's shared_buffers):
	// for benchmarks. Off, commits skip the disk (tests).
	Durable bool
}

// StartWith initializes a data directory and starts a server on a free loopback port. Errors:
// ErrNotInstalled, or initdb/pg_ctl failures with their output.
func StartWith(o Options) (_ *Server, err error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "trendfetch-pg-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	s := &Server{dir: dir, bin: bin}
	if os.Geteuid() == 0 {
		if s.cred, err = unprivileged(); err != nil {
			return nil, err
		}
		if err := os.Chown(dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	if err := s.run("initdb", "-D", data, "-U", "trendfetch", "-A", "trust", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"); err != nil {
		return nil, err
	}
	if s.port, err = freePort(); err != nil {
		return nil, err
	}
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c max_connections=300", s.port, dir)
	if !o.Durable {
		opts += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
	}
	if err := s.run("pg_ctl", "-D", data, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "-o", opts, "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		return nil, fmt.Errorf("%w\n%s", err, log)
	}
	return s, nil
}

// Stop stops the server at once and removes its data directory.
func (s *Server) Stop() {
	_ = s.run("pg_ctl", "-D", filepath.Join(s.dir, "data"), "-m", "immediate", "-w", "stop")
	os.RemoveAll(s.dir)
}

// URL is the connection URL of database name on s (trust authentication).
func (s *Server) URL(name string) string {
	return fmt.Sprintf("postgres://trendfetch@127.0.0.1:%d/%s?sslmode=disable", s.port, name)
}

// Database creates an empty database for t and returns its URL; it is dropped when t ends.
func (s *Server) Database(t testing.TB) string {
	t.Helper()
	url, name, err := s.NewDatabase()
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() { _, _ = s.Psql(s.URL("postgres"), "-c", "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") })
	return url
}

// NewDatabase creates an empty database that lives as long as the server
// (a shared fixture) and returns its URL and name.
func (s *Server) NewDatabase() (url, name string, err error) {
	name = fmt.Sprintf("t%d_%d", os.Getpid(), s.n.Add(1))
	_, err = s.Psql(s.URL("postgres"), "-c", "CREATE DATABASE "+name)
	return s.URL(name), name, err
}

// Require returns the package's server for t, or ends t: a skip when
// PostgreSQL is not installed, else (and under CI=true) a failure.
func Require(t testing.TB, s *Server, startErr error) *Server {
	t.Helper()
	switch {
	case s != nil:
		return s
	case errors.Is(startErr, ErrNotInstalled) && os.Getenv("CI") != "true":
		t.Skip(startErr)
	}
	t.Fatalf("pgtest: %v", startErr)
	return nil
}

// Psql runs psql (beside the server's binaries, else on PATH) on the
// database at url with args, no psqlrc and ON_ERROR_STOP, and returns its
// output. Errors: ErrNotInstalled without psql, else psql's stderr.
func (s *Server) Psql(url string, args ...string) (string, error) {
	bin := filepath.Join(s.bin, "psql")
	if _, err := os.Stat(bin); err != nil {
		if bin, err = exec.LookPath("psql"); err != nil {
			return "", fmt.Errorf("%w: no psql", ErrNotInstalled)
		}
	}
	out, err := exec.Command(bin, append([]string{"-X", "-v", "ON_ERROR_STOP=1", url}, args...)...).Output()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		err = fmt.Errorf("psql: %w: %s", err, ee.Stderr)
	}
	return string(out), err
}

// run runs a server binary, as the unprivileged user when root.
func (s *Server) run(name string, args ...string) error {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w: %s", name, err, out)
	}
	return nil
}

// binDir is the newest /usr/lib/postgresql/VERSION/bin holding initdb, or
// the directory of an initdb on PATH.
func binDir() (string, error) {
	version := func(initdb string) int {
		v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
		return v
	}
	if dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb"); len(dirs) > 0 {
		return filepath.Dir(slices.MaxFunc(dirs, func(a, b string) int { return version(a) - version(b) })), nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", ErrNotInstalled
}

// unprivileged is the credential of the postgres user, else nobody.
func unprivileged() (*syscall.Credential, error) {
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("pgtest: running as root and no postgres or nobody user to run PostgreSQL as")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Shared is a test package's PostgreSQL server: started by the first test that asks for it (Server,
// Database), stopped by Stop in TestMain. Its zero value starts with Options{}.
type Shared struct {
	// Options, when set, gives the server's Options at its start.
	Options func() Options

	once sync.Once
	srv  *Server
	err  error
}

// Server returns the package's server, starting it on first use, or ends
// t: a skip under -short (which starts no server; ignored under CI=true) or when PostgreSQL is
// not installed, else (and under CI=true) a failure (Require).
func (sh *Shared) Server(t testing.TB) *Server {
	t.Helper()
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("pgtest: starts PostgreSQL; not under -short")
	}
	sh.once.Do(func() {
		var o Options
		if sh.Options != nil {
			o = sh.Options()
		}
		sh.srv, sh.err = StartWith(o)
	})
	return Require(t, sh.srv, sh.err)
}

// Database creates an empty database of t's own on the package's server
// and returns its URL (Server; Server.Database).
func (sh *Shared) Database(t testing.TB) string {
	t.Helper()
	return sh.Server(t).Database(t)
}

// Stop stops the server if a test started it.
func (sh *Shared) Stop() {
	if sh.srv != nil {
		sh.srv.Stop()
	}
}
