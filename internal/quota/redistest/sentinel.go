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

// Sentinel timings, small so that a failover takes seconds: a master silent
// for sentinelDownAfter is down; a failover may take sentinelFailoverTimeout.
const (
	sentinelDownAfter       = 500 * time.Millisecond
	sentinelFailoverTimeout = 2 * time.Second
)

// Sentinel is a replicated Redis watched by Redis Sentinel: the initial
// Master, its Replicas and the redis-sentinel processes (Sentinels), which
// monitor it as Name ("mymaster"). Roles change after a failover.
type Sentinel struct {
	Name                string
	Master              *Server
	Replicas, Sentinels []*Server
}

// StartSentinel starts a master, replicas replicas of it (synced) and
// sentinels (>= 1) redis-sentinel processes monitoring it with quorum
// sentinels/2+1. It returns once every Sentinel knows every replica and
// every other Sentinel (a few seconds), so a failover can start as soon as
// the master dies. With a password, every server requires it and the
// Sentinels use it; Server.Do authenticates with it.
func StartSentinel(tb testing.TB, replicas, sentinels int, password string) *Sentinel {
	tb.Helper()
	return StartSentinelAuth(tb, replicas, sentinels, password, "")
}

// StartSentinelAuth is StartSentinel with Sentinels that require
// sentinelPassword ("": none) from their clients and each other.
func StartSentinelAuth(tb testing.TB, replicas, sentinels int, password, sentinelPassword string) *Sentinel {
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
	quorum := sentinels/2 + 1
	conf := fmt.Sprintf("sentinel monitor %[1]s 127.0.0.1 %[2]d %[3]d\n"+
		"sentinel down-after-milliseconds %[1]s %[4]d\n"+
		"sentinel failover-timeout %[1]s %[5]d\n"+
		"sentinel parallel-syncs %[1]s 1\n",
		g.Name, g.Master.Port, quorum, sentinelDownAfter.Milliseconds(), sentinelFailoverTimeout.Milliseconds())
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
			m := g.masterInfo(s)
			if m["num-slaves"] != strconv.Itoa(replicas) || m["num-other-sentinels"] != strconv.Itoa(sentinels-1) {
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
