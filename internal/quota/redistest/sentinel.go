package redistest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Timings of the Sentinels StartSentinel starts, small so that a failover
// test takes seconds: a master that does not answer for DownAfter is
// subjectively down; a failover attempt may take FailoverTimeout.
const (
	SentinelDownAfter       = 500 * time.Millisecond
	SentinelFailoverTimeout = 2 * time.Second
)

// Sentinel is a replicated Redis watched by Redis Sentinel: a master, its
// replicas and the redis-sentinel processes, all on free loopback ports.
// Roles change after a failover; MasterAddr asks the Sentinels for the
// current master and Server finds its process.
type Sentinel struct {
	// Name is the master name the Sentinels monitor ("mymaster").
	Name string
	// Master is the initial master; Replicas replicate it at the start.
	Master   *Server
	Replicas []*Server
	// Sentinels are the redis-sentinel processes.
	Sentinels []*Server
	tb        testing.TB
}

// StartSentinel starts a master, replicas replicas of it (waiting until
// each has synced), and sentinels (>= 1) redis-sentinel processes monitoring
// it as "mymaster" with quorum sentinels/2+1, down-after-milliseconds 500
// and failover-timeout 2000. It returns once every Sentinel knows every
// replica and every other Sentinel (Sentinels discover each other through
// hello messages every 2 s, so this takes a few seconds), so that a failover
// can start as soon as the master dies. Cleanup kills every process. A
// missing redis-server, redis-cli or redis-sentinel skips the test, or
// fails it under CI=true.
//
// With a password, every server requires it (requirepass, masterauth) and
// the Sentinels use it (auth-pass); the Sentinels themselves need none
// (StartSentinelAuth). Server.Do authenticates with it.
func StartSentinel(tb testing.TB, replicas, sentinels int, password string) *Sentinel {
	tb.Helper()
	return StartSentinelAuth(tb, replicas, sentinels, password, "")
}

// StartSentinelAuth is StartSentinel with Sentinels that require
// sentinelPassword from their clients and from each other (requirepass in
// sentinel.conf, Redis >= 5.0.1); "" requires none. Server.Do on a
// Sentinel authenticates with it.
func StartSentinelAuth(tb testing.TB, replicas, sentinels int, password, sentinelPassword string) *Sentinel {
	tb.Helper()
	if sentinels < 1 {
		tb.Fatalf("redistest: StartSentinel needs at least one Sentinel, got %d", sentinels)
	}
	sbin := lookPath(tb, "redis-sentinel")
	lookPath(tb, "redis-cli")
	g := &Sentinel{Name: "mymaster", tb: tb}
	// Any server may become the master: none delays a full sync (the
	// default waits 5 s for more replicas to share a diskless transfer).
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
	quorum := sentinels/2 + 1
	conf := fmt.Sprintf("sentinel monitor %[1]s 127.0.0.1 %[2]d %[3]d\n"+
		"sentinel down-after-milliseconds %[1]s %[4]d\n"+
		"sentinel failover-timeout %[1]s %[5]d\n"+
		"sentinel parallel-syncs %[1]s 1\n",
		g.Name, g.Master.Port, quorum, SentinelDownAfter.Milliseconds(), SentinelFailoverTimeout.Milliseconds())
	if password != "" {
		conf += fmt.Sprintf("sentinel auth-pass %s %s\n", g.Name, password)
	}
	if sentinelPassword != "" {
		conf += fmt.Sprintf("requirepass %s\n", sentinelPassword)
	}
	for i := 0; i < sentinels; i++ {
		g.Sentinels = append(g.Sentinels, launch(tb, false, func(dir string) *Server {
			file := filepath.Join(dir, "sentinel.conf") // redis-sentinel rewrites it
			if err := os.WriteFile(file, []byte(conf), 0o644); err != nil {
				tb.Fatal(err)
			}
			return &Server{bin: sbin, conf: file, password: sentinelPassword}
		}))
	}
	waitFor(tb, 20*time.Second, "the Sentinels to discover each other and the replicas", func() bool {
		for _, s := range g.Sentinels {
			m := g.masterInfo(s)
			if m["num-slaves"] != strconv.Itoa(replicas) || m["num-other-sentinels"] != strconv.Itoa(sentinels-1) {
				return false
			}
		}
		return true
	})
	return g
}

// Addrs returns the "127.0.0.1:port" address of every Sentinel, for
// redis.FailoverOptions.SentinelAddrs.
func (g *Sentinel) Addrs() []string {
	out := make([]string, len(g.Sentinels))
	for i, s := range g.Sentinels {
		out[i] = s.Addr
	}
	return out
}

// MasterAddr returns the master address the first reachable Sentinel
// reports (SENTINEL GET-MASTER-ADDR-BY-NAME), or "" if none answers.
func (g *Sentinel) MasterAddr() string {
	g.tb.Helper()
	for _, s := range g.Sentinels {
		if a := g.masterOf(s); a != "" {
			return a
		}
	}
	return ""
}

// masterOf returns the master address Sentinel s reports, or "" when s is
// down or does not answer.
func (g *Sentinel) masterOf(s *Server) string {
	if !s.running() {
		return ""
	}
	out, err := s.cli("SENTINEL", "GET-MASTER-ADDR-BY-NAME", g.Name)
	if f := strings.Fields(out); err == nil && len(f) == 2 {
		return f[0] + ":" + f[1]
	}
	return ""
}

// Server returns the master or replica process listening on addr, or nil.
func (g *Sentinel) Server(addr string) *Server {
	for _, s := range append([]*Server{g.Master}, g.Replicas...) {
		if s.Addr == addr {
			return s
		}
	}
	return nil
}

// WaitFailover waits until every running Sentinel names a master other
// than old, and that server answers ROLE as master; it returns that server
// (failing the test after timeout).
func (g *Sentinel) WaitFailover(old string, timeout time.Duration) *Server {
	g.tb.Helper()
	var promoted *Server
	waitFor(g.tb, timeout, "a Sentinel failover away from "+old, func() bool {
		addr := ""
		for _, s := range g.Sentinels {
			if !s.running() {
				continue
			}
			a := g.masterOf(s)
			if a == "" || a == old || (addr != "" && a != addr) {
				return false
			}
			addr = a
		}
		promoted = g.Server(addr)
		if promoted == nil || !promoted.running() {
			return false
		}
		role, err := promoted.cli("ROLE")
		return err == nil && strings.HasPrefix(strings.TrimSpace(role), "master")
	})
	return promoted
}

// masterInfo returns SENTINEL MASTER <name> as a field map, or nil.
func (g *Sentinel) masterInfo(s *Server) map[string]string {
	out, err := s.cli("SENTINEL", "MASTER", g.Name)
	if err != nil {
		return nil
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	m := map[string]string{}
	for i := 0; i+1 < len(lines); i += 2 {
		m[strings.TrimSpace(lines[i])] = strings.TrimSpace(lines[i+1])
	}
	return m
}

// WaitReplicasOnline waits until n replicas of the master s are online and
// have acknowledged a write made on s after that (a probe key set and
// deleted again), failing the test after 10 s. Only then does WAIT count
// them: after a diskless full sync a replica shows state=online at once,
// but the master starts its command stream only on the replica's first
// acknowledgement, up to a second later.
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
	target := replInfo(s.Do("INFO", "replication"), "master_repl_offset")
	waitFor(s.tb, 10*time.Second, fmt.Sprintf("%s and acknowledging offset %d", what, target), func() bool {
		acked := 0
		for _, line := range strings.Split(s.Do("INFO", "replication"), "\n") {
			if !strings.HasPrefix(line, "slave") || !strings.Contains(line, "state=online") {
				continue
			}
			for _, kv := range strings.Split(strings.TrimSpace(line), ",") {
				if v, ok := strings.CutPrefix(kv, "offset="); ok {
					if off, err := strconv.ParseInt(v, 10, 64); err == nil && off >= target {
						acked++
					}
				}
			}
		}
		return acked >= n
	})
}

// replInfo returns the integer field name of an INFO replication reply, or -1.
func replInfo(info, name string) int64 {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				return n
			}
		}
	}
	return -1
}

// running reports whether the process is up (not killed).
func (s *Server) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc != nil
}

// waitFor polls cond every 50 ms until it holds, failing the test with what
// it waited for after timeout.
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
