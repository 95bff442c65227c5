// Package redistest starts real redis-server processes for tests and
// benchmarks on free loopback ports: a standalone server (Start), a Redis
// Cluster (StartCluster) or a master with replicas watched by redis-sentinel
// processes (StartSentinel). Servers keep no data on disk, live in the
// test's TempDir and are killed by tb.Cleanup or with the test binary. A
// missing binary skips the test, or fails it under CI=true.
package redistest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// debianPackage names the Debian package of each binary the helpers run.
var debianPackage = map[string]string{
	"redis-server":   "redis-server",
	"redis-cli":      "redis-tools",
	"redis-sentinel": "redis-sentinel",
}

// startTimeout bounds how long a server may take to answer PING.
const startTimeout = 10 * time.Second

// Server is one redis-server process listening on 127.0.0.1:Port.
type Server struct {
	tb   testing.TB
	bin  string
	dir  string
	args []string

	// Port is the TCP port on 127.0.0.1; it survives Kill/Restart.
	Port int
	// Addr is "127.0.0.1:Port".
	Addr string

	conf     string // the config file of a redis-sentinel process
	password string // sent by Do (StartSentinel with a password)

	mu     sync.Mutex
	proc   *os.Process
	exited chan error // receives cmd.Wait's result once the process is reaped
	log    *os.File
}

// Start launches redis-server on a free loopback port with persistence off
// and extra args appended (e.g. "--requirepass", "s3cret"), waits until it
// answers PING, and registers tb.Cleanup to kill it.
func Start(tb testing.TB, args ...string) *Server {
	tb.Helper()
	bin := lookPath(tb, "redis-server")
	return launch(tb, func(string) *Server { return &Server{bin: bin, args: args} })
}

// launch starts the server mk builds in a fresh TempDir directory on a free
// port, trying others while one fails.
func launch(tb testing.TB, mk func(dir string) *Server) *Server {
	tb.Helper()
	var err error
	for attempt := 0; attempt < 10; attempt++ {
		port, perr := freePort()
		if perr != nil {
			tb.Fatalf("redistest: cannot find a free port: %v", perr)
		}
		dir := tb.TempDir()
		s := mk(dir)
		s.tb, s.dir, s.Port, s.Addr = tb, dir, port, "127.0.0.1:"+strconv.Itoa(port)
		if err = s.start(); err == nil {
			tb.Cleanup(s.Kill)
			return s
		}
	}
	tb.Fatalf("redistest: cannot start a server: %v", err)
	return nil
}

// URL returns "redis://127.0.0.1:Port/0" (no credentials).
func (s *Server) URL() string { return "redis://" + s.Addr + "/0" }

// Kill stops the server with SIGKILL and waits for it to exit; the port is
// kept for Restart. Killing a stopped server is a no-op.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return
	}
	_ = s.proc.Kill()
	<-s.exited
	s.proc = nil
	if s.log != nil {
		_ = s.log.Close()
		s.log = nil
	}
}

// Freeze stops the server process (SIGSTOP): it keeps its connections but
// answers nothing, like a hung or partitioned Redis.
func (s *Server) Freeze() {
	s.tb.Helper()
	s.signal(syscall.SIGSTOP)
}

// Thaw resumes a server stopped by Freeze (SIGCONT).
func (s *Server) Thaw() {
	s.tb.Helper()
	s.signal(syscall.SIGCONT)
}

func (s *Server) signal(sig os.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		s.tb.Fatalf("redistest: server on %s is not running", s.Addr)
	}
	if err := s.proc.Signal(sig); err != nil {
		s.tb.Fatalf("redistest: signal %v: %v", sig, err)
	}
}

// Restart kills the server if it runs and starts a fresh, empty one on the
// same port, failing the test when it does not come back.
func (s *Server) Restart() {
	s.tb.Helper()
	s.Kill()
	var err error
	for attempt := 0; attempt < 20; attempt++ {
		// Another test's process may have taken the port: its PING would pass for ours.
		var l net.Listener
		if l, err = net.Listen("tcp", s.Addr); err != nil {
			time.Sleep(50 * time.Millisecond) // port still held by the dying process, or taken
			continue
		}
		l.Close()
		if err = s.start(); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.tb.Fatalf("redistest: cannot restart redis-server on %s: %v", s.Addr, err)
}

// Do sends one command with redis-cli and returns its output, failing the
// test on error: for setup and assertions, not for the code under test.
func (s *Server) Do(args ...string) string {
	s.tb.Helper()
	out, err := s.cli(args...)
	if err != nil {
		s.tb.Fatalf("redistest: redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(out)
}

// cli runs redis-cli against s (authenticated when s has a password).
func (s *Server) cli(args ...string) (string, error) {
	s.tb.Helper()
	pre := []string{"-h", "127.0.0.1", "-p", strconv.Itoa(s.Port)}
	if s.password != "" {
		pre = append(pre, "-a", s.password, "--no-auth-warning")
	}
	out, err := exec.Command(lookPath(s.tb, "redis-cli"), append(pre, args...)...).CombinedOutput()
	return string(out), err
}

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	args := []string{
		"--port", strconv.Itoa(s.Port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", s.dir,
		"--protected-mode", "no",
	}
	if s.conf != "" {
		// redis-sentinel: its config file (which it rewrites) comes first.
		args = []string{s.conf, "--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1", "--dir", s.dir, "--protected-mode", "no"}
	}
	args = append(args, s.args...)
	logf, err := os.OpenFile(filepath.Join(s.dir, fmt.Sprintf("redis-%d.log", s.Port)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(s.bin, args...)
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.Dir = s.dir
	setPdeathsig(cmd)
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			_ = logf.Close()
			return fmt.Errorf("%s exited early (%v); see %s", filepath.Base(s.bin), err, logf.Name())
		default:
		}
		if ping(s.Addr) {
			s.proc, s.exited, s.log = cmd.Process, exited, logf
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	<-exited
	_ = logf.Close()
	return fmt.Errorf("%s on %s did not answer PING within %s", filepath.Base(s.bin), s.Addr, startTimeout)
}

// ping reports whether addr answers a raw RESP PING (+PONG, or -NOAUTH).
func ping(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && (strings.HasPrefix(line, "+PONG") || strings.HasPrefix(line, "-NOAUTH"))
}

// freePort returns a free loopback TCP port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func lookPath(tb testing.TB, name string) string {
	tb.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		missing := fmt.Sprintf("%s not found: install it (apt-get install -y %s, or scripts/ensure-redis.sh)", name, debianPackage[name])
		if os.Getenv("CI") == "true" {
			tb.Fatal(missing)
		}
		tb.Skip(missing)
	}
	return p
}
