// Package redistest starts real redis-server processes for tests and benchmarks on free loopback
// ports: a standalone server (Start) or a master with replicas watched by redis-sentinel processes
// (StartSentinel). Servers keep no data on disk, live in the test's TempDir and are killed by
// tb.Cleanup or with the test binary. A missing binary skips the test, or fails it under CI=true;
// `go test -short` skips every test that starts one.
package redistest

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startTimeout bounds how long a server may take to answer PING.
const startTimeout = 10 * time.Second

// Server is one redis-server process listening on 127.0.0.1:Port.
type Server struct {
	tb       testing.TB
	bin, dir string
	args     []string

	// Port is the TCP port on 127.0.0.1 (it survives Restart); Addr is "127.0.0.1:Port".
	Port int
	Addr string

	conf     string // the config file of a redis-sentinel process
	password string // sent by Do (StartSentinel with a password)

	mu     sync.Mutex
	proc   *os.Process
	exited chan error // receives cmd.Wait's result once the process is reaped
}

// Start launches redis-server on a free loopback port with persistence off
// and extra args appended (e.g. "--requirepass", "s3cret"), waits until it
// answers PING, and registers tb.Cleanup to kill it.
func Start(tb testing.TB, args ...string) *Server {
	tb.Helper()
	bin := lookPath(tb, "redis-server")
	args = append([]string{"--save", "", "--appendonly", "no"}, args...)
	return launch(tb, func(string) *Server { return &Server{bin: bin, args: args} })
}

// launch starts the server mk builds in a fresh TempDir directory on a free
// port, trying others while one fails.
func launch(tb testing.TB, mk func(dir string) *Server) *Server {
	tb.Helper()
	var err error
	for attempt := 0; attempt < 10; attempt++ {
		l, lerr := net.Listen("tcp", "127.0.0.1:0")
		if lerr != nil {
			tb.Fatalf("redistest: cannot find a free port: %v", lerr)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
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
}

// Freeze stops the server process (SIGSTOP): it keeps its connections but
// answers nothing, like a hung or partitioned Redis.
func (s *Server) Freeze() { s.signal(syscall.SIGSTOP) }

// Thaw resumes a server stopped by Freeze (SIGCONT).
func (s *Server) Thaw() { s.signal(syscall.SIGCONT) }

// signal sends sig to the server process, failing the test if it is not running.
func (s *Server) signal(sig os.Signal) {
	s.tb.Helper()
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
		// The dying process, or another test's (whose PING would pass for ours), may hold the port.
		var l net.Listener
		if l, err = net.Listen("tcp", s.Addr); err == nil {
			l.Close()
			if err = s.start(); err == nil {
				return
			}
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
	args := []string{"--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1", "--dir", s.dir,
		"--protected-mode", "no"}
	if s.conf != "" {
		args = append([]string{s.conf}, args...) // redis-sentinel: its config file (which it rewrites) first
	}
	logf, err := os.OpenFile(filepath.Join(s.dir, fmt.Sprintf("redis-%d.log", s.Port)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close() // the process has its own descriptor
	cmd := exec.Command(s.bin, append(args, s.args...)...)
	cmd.Stdout, cmd.Stderr, cmd.Dir = logf, logf, s.dir
	setPdeathsig(cmd)
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("%s exited early (%v); see %s", filepath.Base(s.bin), err, logf.Name())
		default:
		}
		if ping(s.Addr) {
			s.proc, s.exited = cmd.Process, exited
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	<-exited
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
	_, _ = c.Write([]byte("*1\r\n$4\r\nPING\r\n")) // a failed write fails the read
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && (strings.HasPrefix(line, "+PONG") || strings.HasPrefix(line, "-NOAUTH"))
}

// lookPath finds the binary name, skipping the test (failing it under CI=true) when it is missing.
// Under `go test -short` (the edit-test loop) every test that starts a server is skipped, except
// under CI=true, where every test runs.
func lookPath(tb testing.TB, name string) string {
	tb.Helper()
	if testing.Short() && os.Getenv("CI") != "true" {
		tb.Skip("-short: this test starts a server process (make test runs it)")
	}
	p, err := exec.LookPath(name)
	if err != nil {
		pkg := strings.Replace(name, "redis-cli", "redis-tools", 1) // the Debian package
		missing := fmt.Sprintf("%s not found: install it (apt-get install -y %s, or scripts/ensure-redis.sh)", name, pkg)
		if os.Getenv("CI") == "true" {
			tb.Fatal(missing)
		}
		tb.Skip(missing)
	}
	return p
}

// Sentinel is a replicated Redis watched by Redis Sentinel: the initial
// Master, its Replicas and the redis-sentinel processes (Sentinels), which
// monitor it as Name ("mymaster"). Roles change after a failover.
type Sentinel struct {
	Name                string
	Master              *Server
	Replicas, Sentinels []*Server
}

// StartSentinel starts a master, replicas replicas of it (synced) and sentinels (>= 1)
// redis-sentinel processes monitoring it with quorum sentinels/2+1, and returns once every Sentinel
// knows every replica and every other Sentinel, so a failover can start as soon as the master dies.
// With a password, every server requires it and the Sentinels use it; the Sentinels require
// sentinelPassword ("": none). Server.Do authenticates.
func StartSentinel(tb testing.TB, replicas, sentinels int, password, sentinelPassword string) *Sentinel {
	tb.Helper()
	if sentinels < 1 {
		tb.Fatalf("redistest: StartSentinel needs at least one Sentinel, got %d", sentinels)
	}
	sbin := lookPath(tb, "redis-sentinel")
	lookPath(tb, "redis-cli")
	g := &Sentinel{Name: "mymaster"}
	// Any server may become the master: none delays a full sync (default 5 s).
	args := []string{"--repl-diskless-sync-delay", "0"}
	if password != "" {
		args = append(args, "--requirepass", password, "--masterauth", password)
	}
	g.Master = Start(tb, args...)
	g.Master.password = password
	for i := 0; i < replicas; i++ {
		r := Start(tb, append(args, "--replicaof", "127.0.0.1", strconv.Itoa(g.Master.Port))...)
		r.password = password
		g.Replicas = append(g.Replicas, r)
	}
	g.Master.WaitReplicasOnline(replicas)
	// Small timings, so that a failover takes seconds.
	conf := fmt.Sprintf("sentinel monitor %[1]s 127.0.0.1 %[2]d %[3]d\n"+
		"sentinel down-after-milliseconds %[1]s 500\nsentinel failover-timeout %[1]s 2000\n"+
		"sentinel parallel-syncs %[1]s 1\n", g.Name, g.Master.Port, sentinels/2+1)
	if password != "" {
		conf += fmt.Sprintf("sentinel auth-pass %s %s\n", g.Name, password)
	}
	if sentinelPassword != "" {
		conf += fmt.Sprintf("requirepass %s\n", sentinelPassword)
	}
	for i := 0; i < sentinels; i++ {
		g.Sentinels = append(g.Sentinels, launch(tb, func(dir string) *Server {
			file := filepath.Join(dir, "sentinel.conf") // redis-sentinel rewrites it
			if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
				tb.Fatal(err)
			}
			return &Server{bin: sbin, conf: file, password: sentinelPassword}
		}))
	}
	waitFor(tb, 20*time.Second, "the Sentinels to discover each other and the replicas", func() bool {
		for _, s := range g.Sentinels {
			out, _ := s.cli("SENTINEL", "MASTER", g.Name) // field, value, ... one a line
			if !strings.Contains(out, fmt.Sprintf("\nnum-slaves\n%d\n", replicas)) ||
				!strings.Contains(out, fmt.Sprintf("\nnum-other-sentinels\n%d\n", sentinels-1)) {
				return false
			}
		}
		return true
	})
	return g
}

// Addrs returns the address of every Sentinel, for redis.FailoverOptions.SentinelAddrs.
func (g *Sentinel) Addrs() []string {
	out := make([]string, len(g.Sentinels))
	for i, s := range g.Sentinels {
		out[i] = s.Addr
	}
	return out
}

// WaitReplicasOnline waits until n replicas of the master s are online and
// have acknowledged a probe write made after that: only then does WAIT count
// them (after a diskless sync, the stream starts on the replica's first ack).
func (s *Server) WaitReplicasOnline(n int) {
	s.tb.Helper()
	what := fmt.Sprintf("%d replicas of %s online", n, s.Addr)
	waitFor(s.tb, 10*time.Second, what, func() bool {
		return strings.Count(s.Do("INFO", "replication"), "state=online") >= n
	})
	// A probe key this master owns (on Cluster, one of its slots).
	for i := 0; ; i++ {
		key := fmt.Sprintf("redistest:probe:%d", i)
		if out := s.Do("SET", key, "1"); out == "OK" {
			s.Do("DEL", key)
			break
		}
		if i > 10000 {
			s.tb.Fatalf("redistest: no probe key accepted by %s", s.Addr)
		}
	}
	target := int64(-1)
	if m := masterOffset.FindStringSubmatch(s.Do("INFO", "replication")); m != nil {
		target, _ = strconv.ParseInt(m[1], 10, 64)
	}
	waitFor(s.tb, 10*time.Second, fmt.Sprintf("%s and acknowledging offset %d", what, target), func() bool {
		acked := 0
		for _, m := range replicaOffset.FindAllStringSubmatch(s.Do("INFO", "replication"), -1) {
			if off, err := strconv.ParseInt(m[1], 10, 64); err == nil && off >= target {
				acked++
			}
		}
		return acked >= n
	})
}

// masterOffset and replicaOffset find the master's replication offset and
// each online replica's acknowledged one in INFO replication.
var (
	masterOffset  = regexp.MustCompile(`(?m)^master_repl_offset:(\d+)`)
	replicaOffset = regexp.MustCompile(`(?m)^slave\d+:.*state=online,offset=(\d+)`)
)

// waitFor polls cond every 50 ms until it holds, failing the test after timeout.
func waitFor(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("redistest: timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
