package quota

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/trendfetch/trendfetch/internal/quota/redistest"
	"github.com/trendfetch/trendfetch/internal/redisconn"
)

// Tests of the Redis backend against real redis-server processes started by
// the tests (internal/quota/redistest); never mocks.

func newTestRedis(t testing.TB, srv *redistest.Server) *redisBackend {
	t.Helper()
	c, err := redisconn.New(srv.URL(), nil, redisconn.Sentinel{})
	if err != nil {
		t.Fatal(err)
	}
	b := NewRedis(c, 0, 0).(*redisBackend)
	t.Cleanup(func() { b.Close() })
	return b
}

// redisCluster is a Redis Cluster of masters (Nodes) on loopback ports.
type redisCluster struct{ Nodes []*redistest.Server }

// startClusterNode starts one cluster-enabled server (nodes.conf in its own
// directory). Its bus port is port+10000: redistest.Start tries other ports
// while the server fails to start (a bus port taken or above 65535).
func startClusterNode(tb testing.TB) *redistest.Server {
	tb.Helper()
	return redistest.Start(tb, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", "3000", "--repl-diskless-sync-delay", "0")
}

// startCluster starts n (>= 3) cluster-enabled masters, joins them with
// `redis-cli --cluster create` and waits until each reports cluster_state:ok.
func startCluster(tb testing.TB, n int) *redisCluster {
	tb.Helper()
	c := &redisCluster{}
	for range n {
		c.Nodes = append(c.Nodes, startClusterNode(tb))
	}
	redisCLI(tb, append(append([]string{"--cluster", "create"}, c.Addrs()...), "--cluster-replicas", "0", "--cluster-yes")...)
	deadline := time.Now().Add(20 * time.Second)
	for _, s := range c.Nodes {
		for !strings.Contains(s.Do("CLUSTER", "INFO"), "cluster_state:ok") {
			if time.Now().After(deadline) {
				tb.Fatalf("cluster node %s not ok after 20s", s.Addr)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return c
}

// Addrs returns the address of every master, for redis.ClusterOptions.Addrs.
func (c *redisCluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.Addr
	}
	return out
}

// addReplica starts a cluster node, joins it as a replica of master and
// waits until master counts it online.
func (c *redisCluster) addReplica(tb testing.TB, master *redistest.Server) *redistest.Server {
	tb.Helper()
	r := startClusterNode(tb)
	redisCLI(tb, "--cluster", "add-node", r.Addr, master.Addr, "--cluster-slave", "--cluster-master-id", master.Do("CLUSTER", "MYID"))
	master.WaitReplicasOnline(1)
	return r
}

// redisCLI runs redis-cli with args, failing the test on error.
func redisCLI(tb testing.TB, args ...string) {
	tb.Helper()
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		tb.Fatalf("redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func newTestRedisCluster(t testing.TB, cl *redisCluster) *redisBackend {
	t.Helper()
	c, err := redisconn.New("", cl.Addrs(), redisconn.Sentinel{})
	if err != nil {
		t.Fatal(err)
	}
	b := NewRedis(c, 0, 0).(*redisBackend)
	t.Cleanup(func() { b.Close() })
	return b
}

// skipIfShort skips a slow test (a cluster, several processes, a wait for a
// wall-clock boundary) under `go test -short`, except in CI (CI=true), where
// every Redis test must run: there -short is ignored.
func skipIfShort(tb testing.TB, why string) {
	tb.Helper()
	if testing.Short() && os.Getenv("CI") != "true" {
		tb.Skip("-short: " + why)
	}
}

// startTLS starts a server like redistest.Start that also accepts TLS on the
// port it returns, with net/http/httptest's self-signed test certificate
// (for 127.0.0.1; no client certificate required): a certificate no system
// trusts. The plain port stays open for setup and PING.
func startTLS(tb testing.TB, args ...string) (tlsPort int) {
	tb.Helper()
	ts := httptest.NewUnstartedServer(nil) // started only to hand out its certificate
	ts.StartTLS()
	ts.Close()
	cert := ts.TLS.Certificates[0]
	key, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	for file, block := range map[string]*pem.Block{certFile: {Type: "CERTIFICATE", Bytes: cert.Certificate[0]}, keyFile: {Type: "PRIVATE KEY", Bytes: key}} {
		if err := os.WriteFile(file, pem.EncodeToMemory(block), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tlsPort = l.Addr().(*net.TCPAddr).Port
	l.Close()
	redistest.Start(tb, append([]string{
		"--tls-port", strconv.Itoa(tlsPort),
		"--tls-cert-file", certFile,
		"--tls-key-file", keyFile,
		"--tls-ca-cert-file", certFile,
		"--tls-auth-clients", "no",
	}, args...)...)
	return tlsPort
}

// Backend specs for the multi-process helpers (procs_test.go):
// "redis:<URL>" and "rediscluster:<host:port>,<host:port>,...".
var (
	_ = registerProcBackend("redis", func(url string) (Backend, error) {
		c, err := redisconn.New(url, nil, redisconn.Sentinel{})
		if err != nil {
			return nil, err
		}
		return NewRedis(c, 0, 0), nil
	})
	_ = registerProcBackend("rediscluster", func(addrs string) (Backend, error) {
		c, err := redisconn.New("", strings.Split(addrs, ","), redisconn.Sentinel{})
		if err != nil {
			return nil, err
		}
		return NewRedis(c, 0, 0), nil
	})
)

// TestRedisProcessesNoOverAdmission: 8 OS processes, limit 9,500, a random
// mix of cost 1 and cost 100 until a cost-1 call is denied: exactly 9,500.
func TestRedisProcessesNoOverAdmission(t *testing.T) {
	skipIfShort(t, "multi-process test")
	srv := redistest.Start(t)
	runOverAdmission(t, "redis:"+srv.URL(), 8, 9500)
}

func TestRedisBackendSuite(t *testing.T) {
	srv := redistest.Start(t)
	b := newTestRedis(t, srv)
	runBackendSuite(t, func(t *testing.T) Backend { return b })
}

// TestRedisCluster runs on one three-master Redis Cluster (the keys of a
// credential share a hash tag, so multi-bucket scripts never CROSSSLOT): the
// behaviour suite, two-bucket reservations on credentials spread over every
// master, and the 8-process over-admission test.
func TestRedisCluster(t *testing.T) {
	skipIfShort(t, "starts a Redis Cluster")
	cl := startCluster(t, 3)
	b := newTestRedisCluster(t, cl)
	t.Run("Suite", func(t *testing.T) {
		runBackendSuite(t, func(t *testing.T) Backend { return b })
	})
	t.Run("TwoBuckets", func(t *testing.T) {
		testRedisClusterTwoBuckets(t, b)
	})
	t.Run("ProcessesNoOverAdmission", func(t *testing.T) {
		runOverAdmission(t, "rediscluster:"+strings.Join(cl.Addrs(), ","), 8, 9500)
	})
}

func testRedisClusterTwoBuckets(t *testing.T, b *redisBackend) {
	ctx := testCtx(t)
	units := Bucket{Name: "units", Limit: 9500, Window: time.Hour}
	search := Bucket{Name: "search", Limit: 95, Calendar: true}
	// Different credentials land on different masters; each must work.
	for i := range 12 {
		cred := fmt.Sprintf("project-%d", i)
		d, err := b.Reserve(ctx, cred, "", charge(units, 100, search, int64(1)))
		if err != nil {
			t.Fatalf("Reserve(%s): %v (CROSSSLOT?)", cred, err)
		}
		if !d.Allowed || d.Remaining["units"] != 9400 || d.Remaining["search"] != 94 {
			t.Fatalf("Reserve(%s) = %+v, want allowed with 9400 and 94 left", cred, d)
		}
		if err := b.MarkExhausted(ctx, cred, Mark{Until: time.Now().Add(time.Minute)}); err != nil {
			t.Fatal(err)
		}
		if d := mustReserve(t, b, cred, charge(units, 1, search, int64(1))); !d.Exhausted {
			t.Fatalf("Reserve after MarkExhausted = %+v, want exhausted", d)
		}
		if err := b.Reset(ctx, cred); err != nil {
			t.Fatalf("Reset(%s): %v", cred, err)
		}
		st := mustStatus(t, b, cred, []Bucket{units, search}, nil)
		if st.Buckets[0].Used != 0 || !st.ExhaustedUntil().IsZero() {
			t.Fatalf("Status after Reset = %+v", st)
		}
	}
}

// TestRedisScriptFlush proves the transparent NOSCRIPT fallback: the script
// cache is flushed between decisions (as after a restart or failover).
func TestRedisScriptFlush(t *testing.T) {
	srv := redistest.Start(t)
	b := newTestRedis(t, srv)
	units := Bucket{Name: "units", Limit: 5, Window: time.Hour}
	for i := int64(1); i <= 5; i++ {
		srv.Do("SCRIPT", "FLUSH")
		d := mustAllow(t, b, "flush", charge(units, 1))
		if d.Remaining["units"] != 5-i {
			t.Fatalf("call %d: remaining %d, want %d", i, d.Remaining["units"], 5-i)
		}
		srv.Do("SCRIPT", "FLUSH")
		mustStatus(t, b, "flush", []Bucket{units}, nil)
		srv.Do("SCRIPT", "FLUSH")
		if err := b.MarkExhausted(testCtx(t), "flush-other", Mark{Until: time.Now().Add(time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	srv.Do("SCRIPT", "FLUSH")
	mustDeny(t, b, "flush", charge(units, 1), "units")
}

// TestRedisKilledAndRestarted: a dead Redis answers ErrUnavailable fast (the
// call site then applies its policy) and a restarted one is used again.
func TestRedisKilledAndRestarted(t *testing.T) {
	srv := redistest.Start(t)
	b := newTestRedis(t, srv)
	units := Bucket{Name: "units", Limit: 100, Window: time.Hour}
	mustAllow(t, b, "kill", charge(units, 1))

	srv.Kill()
	for i := range 3 {
		start := time.Now()
		_, err := b.Reserve(context.Background(), "kill", "", charge(units, 1))
		took := time.Since(start)
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("Reserve %d with Redis killed: err = %v, want ErrUnavailable", i, err)
		}
		if took > time.Second {
			t.Fatalf("Reserve %d with Redis killed took %v, want < 1s", i, took)
		}
		t.Logf("Reserve %d with Redis killed: %v after %v", i, err, took)
	}
	if _, err := b.Status(context.Background(), "kill", []Bucket{units}, nil); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Status with Redis killed: %v, want ErrUnavailable", err)
	}
	if err := b.MarkExhausted(context.Background(), "kill", Mark{Until: time.Now().Add(time.Hour)}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("MarkExhausted with Redis killed: %v, want ErrUnavailable", err)
	}
	if err := b.Reset(context.Background(), "kill"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Reset with Redis killed: %v, want ErrUnavailable", err)
	}

	srv.Restart() // empty: persistence is off, and the script cache is gone
	var d Decision
	var err error
	for range 20 { // the pool may hold a dead connection or two
		if d, err = b.Reserve(context.Background(), "kill", "", charge(units, 1)); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil || !d.Allowed || d.Remaining["units"] != 99 {
		t.Fatalf("Reserve after restart = %+v, %v; want allowed with 99 left", d, err)
	}
}

// TestRedisFrozenTimeout: a Redis that keeps the connection but answers
// nothing (SIGSTOP: hung host, network partition) is a read timeout well
// under a second, wrapped in ErrUnavailable, and the reservation whose
// reply was lost is counted once when Redis resumes, not once per attempt.
func TestRedisFrozenTimeout(t *testing.T) {
	srv := redistest.Start(t)
	b := newTestRedis(t, srv)
	units := Bucket{Name: "units", Limit: 100, Window: time.Hour}
	mustAllow(t, b, "stall", charge(units, 1))
	srv.Freeze()
	start := time.Now()
	_, err := b.Reserve(context.Background(), "stall", "", charge(units, 1))
	took := time.Since(start)
	srv.Thaw()
	if !errors.Is(err, ErrUnavailable) || took > time.Second {
		t.Fatalf("Reserve against a frozen Redis: %v after %v, want ErrUnavailable in < 1s", err, took)
	}
	t.Logf("frozen Redis: %v after %v", err, took)
	// The timed-out script was sent, so it runs once Redis resumes: it is
	// counted once, never twice (go-redis must not resend a reserve).
	used := func() int64 { return mustStatus(t, b, "stall", []Bucket{units}, nil).Buckets[0].Used }
	for deadline := time.Now().Add(2 * time.Second); used() < 2 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // a resent copy would have run by now
	if u := used(); u != 2 {
		t.Fatalf("used %d after one admitted and one timed-out call, want 2 (the timed-out one counted once)", u)
	}
	if d := mustAllow(t, b, "stall", charge(units, 1)); d.Remaining["units"] != 97 {
		t.Fatalf("Remaining after Redis resumed = %d, want 97", d.Remaining["units"])
	}
}

// sleepRedis makes srv (started with --enable-debug-command yes) sleep for
// d with DEBUG SLEEP from a client of its own and returns once srv has
// stopped answering (a PING with a 20 ms read timeout times out); the
// channel gets DEBUG SLEEP's result when srv wakes up.
func sleepRedis(t *testing.T, srv *redistest.Server, d time.Duration) <-chan error {
	t.Helper()
	blocker := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: 5 * time.Second})
	probe := redis.NewClient(&redis.Options{Addr: srv.Addr, ReadTimeout: 20 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { blocker.Close(); probe.Close() })
	slept := make(chan error, 1)
	go func() { slept <- blocker.Do(context.Background(), "DEBUG", "SLEEP", d.Seconds()).Err() }()
	for deadline := time.Now().Add(d / 2); probe.Ping(context.Background()).Err() == nil; {
		if time.Now().After(deadline) {
			t.Fatal("Redis still answers PING after DEBUG SLEEP")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return slept
}

// TestRedisSlowReplyChargedOnce: a reserve whose reply comes after the read
// timeout because Redis was busy (here DEBUG SLEEP from another client) has
// run; it must not run a second time on another connection (go-redis
// retries a command after a read timeout unless it is NoRetry). The caller
// gets ErrUnavailable and one reservation is counted.
func TestRedisSlowReplyChargedOnce(t *testing.T) {
	srv := redistest.Start(t, "--enable-debug-command", "yes")
	b := newTestRedis(t, srv)
	units := Bucket{Name: "units", Limit: 100, Window: time.Hour}
	mustAllow(t, b, "slow", charge(units, 1))

	slept := sleepRedis(t, srv, 500*time.Millisecond)
	_, err := b.Reserve(context.Background(), "slow", "", charge(units, 1))
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Reserve while Redis sleeps past the read timeout: err = %v, want ErrUnavailable", err)
	}
	if err := <-slept; err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // a resent copy would have run by now
	st := mustStatus(t, b, "slow", []Bucket{units}, nil)
	if u := st.Buckets[0]; u.Used != 2 || u.Entries != 2 {
		t.Fatalf("after one admitted and one slow call: used %d in %d entries, want 2 in 2 (the slow one once)", u.Used, u.Entries)
	}
}

// TestRedisResendsWhatDidNotRun: a replica refuses the reserve script at
// its first write (READONLY), which proves it did not run, so Reserve sends
// it once more (a failover client may have found the new master by then);
// a reply lost after the script was sent is never resent (see
// TestRedisSlowReplyChargedOnce).
func TestRedisResendsWhatDidNotRun(t *testing.T) {
	master := redistest.Start(t)
	replica := redistest.Start(t, "--replicaof", "127.0.0.1", strconv.Itoa(master.Port))
	b := newTestRedis(t, replica)
	units := Bucket{Name: "units", Limit: 100, Window: time.Hour}
	_, err := b.Reserve(context.Background(), "ro", "", charge(units, 1))
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "READONLY") {
		t.Fatalf("Reserve on a replica: err = %v, want ErrUnavailable naming READONLY", err)
	}
	// Each run of the script reaches its ZADD, which the replica rejects.
	c := redis.NewClient(&redis.Options{Addr: replica.Addr})
	defer c.Close()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	_, zadd, _ := strings.Cut(info, "cmdstat_zadd:")
	zadd, _, _ = strings.Cut(zadd, "\n")
	if !strings.HasPrefix(zadd, "calls=0,") || !strings.Contains(zadd, ",rejected_calls=2,") {
		t.Fatalf("ZADD stats %q, want 0 calls and 2 rejected (the script run twice, writing nothing)", zadd)
	}
}

// TestRedisKeysAndExpiry checks the key layout (one hash tag per
// credential, no secret) and that every written key carries a TTL.
func TestRedisKeysAndExpiry(t *testing.T) {
	srv := redistest.Start(t)
	b := newTestRedis(t, srv)
	units := Bucket{Name: "units", Limit: 100, Window: time.Hour}
	search := Bucket{Name: "search", Limit: 95, Calendar: true}
	mustAllow(t, b, "main-project", charge(units, 100, search, int64(1)))
	if err := b.MarkExhausted(testCtx(t), "main-project", Mark{Until: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	keys := strings.Fields(srv.Do("KEYS", "*"))
	want := map[string]bool{
		"trendfetch:{main-project}:units":  true,
		"trendfetch:{main-project}:search": true,
		"trendfetch:{main-project}:state":  true,
	}
	if len(keys) != len(want) {
		t.Fatalf("keys = %q, want %d keys", keys, len(want))
	}
	for _, k := range keys {
		if !want[k] {
			t.Fatalf("unexpected key %q", k)
		}
		ttl, err := strconv.ParseInt(srv.Do("PTTL", k), 10, 64)
		if err != nil || ttl <= 0 {
			t.Fatalf("PTTL %s = %d (%v), want > 0", k, ttl, err)
		}
		if strings.HasSuffix(k, ":units") && (ttl < time.Hour.Milliseconds() || ttl > 26*time.Hour.Milliseconds()) {
			t.Fatalf("PTTL %s = %dms, want between the window and a day + margin", k, ttl)
		}
	}
	// Members: one per call, "<cum>:<cost>".
	if got := srv.Do("ZRANGE", "trendfetch:{main-project}:units", "0", "-1"); got != "0000000000000100:100" {
		t.Fatalf("units members = %q", got)
	}

	// Names the key layout reserves are refused by New (the one place
	// buckets are checked); a credential with braces by the backend.
	for _, name := range []string{"lease:US", "lease", "exhausted", "state", "a{b}"} {
		if _, err := New(b, []Bucket{{Name: name, Limit: 1, Window: time.Hour}}, nil); err == nil {
			t.Errorf("New accepted a bucket named %q", name)
		}
	}
	if _, err := b.Reserve(testCtx(t), "bad{name}", "", charge(units, 1)); err == nil {
		t.Fatal("Reserve accepted a credential with braces")
	}
}

// TestRedisMemory: a saturated day of search.list calls (95 x cost 100)
// stores 95 entries, not 9,500; 9,500 x cost 1 is reported.
func TestRedisMemory(t *testing.T) {
	srv := redistest.Start(t)
	b := newTestRedis(t, srv)
	usage := func(cred string) int64 {
		var sum int64
		for _, k := range strings.Fields(srv.Do("KEYS", "trendfetch:{"+cred+"}:*")) {
			n, err := strconv.ParseInt(srv.Do("MEMORY", "USAGE", k, "SAMPLES", "0"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			sum += n
		}
		return sum
	}
	units := Bucket{Name: "units", Limit: 9500, Window: 24 * time.Hour}
	for range 95 {
		mustAllow(t, b, "heavy", charge(units, 100))
	}
	mustDeny(t, b, "heavy", charge(units, 1), "units")
	heavy := usage("heavy")
	t.Logf("MEMORY USAGE, 95 x cost 100: %d bytes (%s entries)", heavy, srv.Do("ZCARD", "trendfetch:{heavy}:units"))
	if heavy >= 8<<10 {
		t.Fatalf("95 x cost 100 uses %d bytes, want < 8 KB", heavy)
	}
	if testing.Short() {
		return
	}
	for range 9500 {
		mustAllow(t, b, "light", charge(units, 1))
	}
	mustDeny(t, b, "light", charge(units, 1), "units")
	t.Logf("MEMORY USAGE, 9,500 x cost 1: %d bytes (%s entries)", usage("light"), srv.Do("ZCARD", "trendfetch:{light}:units"))
}

// TestRedisMidnightTable unit-tests the Pacific midnights passed to the
// scripts on both 2026 DST changes: 23 h on 2026-03-08, 25 h on 2026-11-01.
func TestRedisMidnightTable(t *testing.T) {
	for _, tc := range []struct {
		now      string // RFC 3339
		day      string // the Pacific date of the middle midnight
		dayHours []float64
	}{
		// Noon PDT on the spring-forward day: the day started in PST.
		{"2026-03-08T19:00:00Z", "2026-03-08T08:00:00Z", []float64{24, 23, 24}},
		// Just before midnight: still the 23-hour day.
		{"2026-03-09T06:59:59Z", "2026-03-08T08:00:00Z", []float64{24, 23, 24}},
		// Exactly midnight PDT the next day: a new day.
		{"2026-03-09T07:00:00Z", "2026-03-09T07:00:00Z", []float64{23, 24, 24}},
		// Fall back: 2026-11-01 00:00 PDT = 07:00Z, the day lasts 25 h.
		{"2026-11-01T09:30:00Z", "2026-11-01T07:00:00Z", []float64{24, 25, 24}},
		{"2026-11-02T07:59:59Z", "2026-11-01T07:00:00Z", []float64{24, 25, 24}},
		{"2026-11-02T08:00:00Z", "2026-11-02T08:00:00Z", []float64{25, 24, 24}},
	} {
		now, _ := time.Parse(time.RFC3339, tc.now)
		want, _ := time.Parse(time.RFC3339, tc.day)
		mids := redisMidnightTable(now)
		if len(mids) != 4 {
			t.Fatalf("%s: %d midnights, want 4", tc.now, len(mids))
		}
		if got := time.UnixMicro(mids[1]).UTC(); !got.Equal(want) {
			t.Errorf("%s: current midnight %s, want %s", tc.now, got, want)
		}
		for i := 1; i < len(mids); i++ {
			h := (time.Duration(mids[i]-mids[i-1]) * time.Microsecond).Hours()
			if h != tc.dayHours[i-1] {
				t.Errorf("%s: day %d lasts %vh, want %vh (table %v)", tc.now, i, h, tc.dayHours[i-1], mids)
			}
			if p := time.UnixMicro(mids[i]).In(pacific); p.Hour() != 0 || p.Minute() != 0 {
				t.Errorf("%s: %s is not a Pacific midnight", tc.now, p)
			}
		}
		// The script's choice: last midnight <= now, first one after.
		nowUS := now.UnixMicro()
		if !(mids[1] <= nowUS && nowUS < mids[2]) {
			t.Errorf("%s: now not inside [%d, %d)", tc.now, mids[1], mids[2])
		}
		if !time.UnixMicro(mids[2]).Equal(NextPacificMidnight(now)) {
			t.Errorf("%s: next midnight %s, want %s", tc.now, time.UnixMicro(mids[2]), NextPacificMidnight(now))
		}
	}
}

// TestRedisCalendarMidnight moves "midnight" next to Redis TIME (the table
// passed to the script is the only thing Go decides): at the new day the
// calendar bucket is empty again, UsedToday restarts, Retry-After points to
// the next midnight, and the sliding bucket is unaffected.
func TestRedisCalendarMidnight(t *testing.T) {
	srv := redistest.Start(t)
	b := newTestRedis(t, srv)
	var table []int64
	b.midnights = func(time.Time) []int64 { return table }
	now := time.Now()
	table = []int64{now.Add(-24 * time.Hour).UnixMicro(), now.Add(-time.Hour).UnixMicro(), now.Add(time.Second).UnixMicro(), now.Add(25 * time.Hour).UnixMicro()}

	daily := Bucket{Name: "daily", Limit: 3, Calendar: true}
	units := Bucket{Name: "units", Limit: 100, Window: time.Hour}
	mustAllow(t, b, "cal", charge(daily, 2, units, int64(2)))
	d := mustDeny(t, b, "cal", charge(daily, 2, units, int64(2)), "daily")
	approx(t, "RetryAfter before 'midnight'", d.RetryAfter, time.UnixMicro(table[2]).Sub(d.Now), time.Microsecond)

	time.Sleep(time.Until(time.UnixMicro(table[2])) + 5*time.Millisecond)
	st := mustStatus(t, b, "cal", []Bucket{daily, units}, map[string]int64{"daily": 3})
	if st.Buckets[0].Used != 0 || st.Buckets[0].UsedToday != 0 || st.Buckets[1].Used != 2 || st.Buckets[1].UsedToday != 0 {
		t.Fatalf("after 'midnight': %s, want daily empty, units used 2 but 0 today", stateOf(st))
	}
	d = mustAllow(t, b, "cal", charge(daily, 3, units, int64(3)))
	if d.Remaining["daily"] != 0 || d.Remaining["units"] != 95 {
		t.Fatalf("after 'midnight': remaining %v", d.Remaining)
	}
	d = mustDeny(t, b, "cal", charge(daily, 1), "daily")
	approx(t, "RetryAfter to the next 'midnight'", d.RetryAfter, time.UnixMicro(table[3]).Sub(d.Now), time.Microsecond)

	// A client clock a day ahead: Redis TIME falls in the table's first day.
	now = time.Now()
	table = []int64{now.Add(-time.Hour).UnixMicro(), now.Add(time.Hour).UnixMicro(), now.Add(25 * time.Hour).UnixMicro(), now.Add(49 * time.Hour).UnixMicro()}
	mustAllow(t, b, "cal-ahead", charge(daily, 3))
	d = mustDeny(t, b, "cal-ahead", charge(daily, 1), "daily")
	approx(t, "RetryAfter, TIME in the first day", d.RetryAfter, time.UnixMicro(table[1]).Sub(d.Now), time.Microsecond)

	// A table that does not cover Redis TIME is an error, not a guess.
	table = []int64{now.Add(time.Hour).UnixMicro()}
	if _, err := b.Reserve(testCtx(t), "cal", "", charge(daily, 1)); err == nil || errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "midnight") {
		t.Fatalf("Reserve with a table after TIME: %v", err)
	}
}

// TestRedisBoundaryBurst is the seed article's failure mode with the
// issue's figures: limit 50 per 10 s, 50 calls just before a 10-second
// wall-clock boundary and 50 just after: exactly 50 admitted.
func TestRedisBoundaryBurst(t *testing.T) {
	skipIfShort(t, "waits for a 10-second boundary")
	srv := redistest.Start(t)
	b := newTestRedis(t, srv)
	units := Bucket{Name: "units", Limit: 50, Window: 10 * time.Second}
	boundary := time.Now().Truncate(10 * time.Second).Add(10 * time.Second)
	if time.Until(boundary) < 500*time.Millisecond {
		boundary = boundary.Add(10 * time.Second)
	}
	burst := func() (n int) {
		for range 50 {
			if d := mustReserve(t, b, "burst", charge(units, 1)); d.Allowed {
				n++
			}
		}
		return n
	}
	time.Sleep(time.Until(boundary.Add(-200 * time.Millisecond)))
	before := burst()
	time.Sleep(time.Until(boundary.Add(10 * time.Millisecond)))
	after := burst()
	if before+after != 50 || before != 50 {
		t.Fatalf("admitted %d before and %d after the boundary, want 50 and 0", before, after)
	}
}

// TestRedisClientURL covers AUTH, DB selection and TLS with a private
// CA through the backend (URL parsing and redaction: internal/redisconn).
func TestRedisClientURL(t *testing.T) {
	const secret = "s3cr3t-Pa55"
	srv := redistest.Start(t, "--requirepass", secret)
	units := Bucket{Name: "units", Limit: 5, Window: time.Hour}

	t.Run("AuthAndDB", func(t *testing.T) {
		c, err := redisconn.New("redis://:"+secret+"@"+srv.Addr+"/3", nil, redisconn.Sentinel{})
		if err != nil {
			t.Fatal(err)
		}
		b := NewRedis(c, 0, 0)
		defer b.Close()
		mustAllow(t, b, "db3", charge(units, 1))
		if n := srv.Do("-a", secret, "--no-auth-warning", "-n", "3", "EXISTS", "trendfetch:{db3}:units"); n != "1" {
			t.Fatalf("key not in db 3 (EXISTS = %q)", n)
		}
	})
	t.Run("WrongPasswordIsAccessErrorAndRedacted", func(t *testing.T) {
		c, err := redisconn.New("redis://:wrong-"+secret+"@"+srv.Addr+"/0", nil, redisconn.Sentinel{})
		if err != nil {
			t.Fatal(err)
		}
		b := NewRedis(c, 0, 0)
		defer b.Close()
		_, err = b.Reserve(context.Background(), "x", "", charge(units, 1))
		var access *AccessError
		if !errors.As(err, &access) || strings.Contains(err.Error(), secret) {
			t.Fatalf("err = %v, want an *AccessError without the password", err)
		}
	})
	t.Run("TLS", func(t *testing.T) {
		tlsPort := startTLS(t, "--requirepass", secret)
		u := fmt.Sprintf("rediss://:%s@127.0.0.1:%d/0", secret, tlsPort)
		// A certificate of a CA the system does not trust is rejected:
		// ErrUnavailable, not a silent plain-text fallback.
		c2, err := redisconn.New(u, nil, redisconn.Sentinel{})
		if err != nil {
			t.Fatal(err)
		}
		b2 := NewRedis(c2, 0, 0)
		defer b2.Close()
		if _, err := b2.Reserve(context.Background(), "tls", "", charge(units, 1)); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("TLS with an unknown CA: %v, want ErrUnavailable", err)
		}
		// The same server through TLS without verification admits: the
		// refusal above was the certificate's, and the port speaks TLS.
		c3, err := redisconn.New(u+"?skip_verify=true", nil, redisconn.Sentinel{})
		if err != nil {
			t.Fatal(err)
		}
		b3 := NewRedis(c3, 0, 0)
		defer b3.Close()
		mustAllow(t, b3, "tls", charge(units, 1))
	})
}

// TestRedisScoresUniqueWhenTimeBehind: when Redis TIME is behind a log's
// newest entry (a clock step back), new entries are still scored strictly
// after it, one µs apart, so each reservation keeps its own identity: a
// refund removes its entry only while it is the newest, and only once.
func TestRedisScoresUniqueWhenTimeBehind(t *testing.T) {
	srv := redistest.Start(t)
	b := newTestRedis(t, srv)
	units := Bucket{Name: "units", Limit: 10, Window: time.Hour}
	const cred = "behind"
	future := time.Now().Add(10 * time.Second).UnixMicro()
	b.client.ZAdd(testCtx(t), b.bucketKey(cred, "units"), redis.Z{Score: float64(future), Member: "0000000000000001:1"})
	x := mustAllow(t, b, cred, charge(units, 1))
	y := mustAllow(t, b, cred, charge(units, 1))
	if ax, ay := x.Reservation.entries[0].at, y.Reservation.entries[0].at; ax != future+1 || ay != future+2 {
		t.Fatalf("scores %d and %d while TIME is behind %d, want %d and %d", ax, ay, future, future+1, future+2)
	}
	mustRefund(t, b, cred, x.Reservation) // not the newest: stays
	mustRefund(t, b, cred, y.Reservation)
	mustRefund(t, b, cred, y.Reservation)
	if bs := mustStatus(t, b, cred, []Bucket{units}, nil).Buckets[0]; bs.Used != 2 || bs.Entries != 2 {
		t.Fatalf("after refunds: used %d entries %d, want 2 and 2", bs.Used, bs.Entries)
	}
	// An entry is named by its score and its cost: the right score with
	// another cost refunds nothing.
	z := mustAllow(t, b, cred, charge(units, 1))
	mustRefund(t, b, cred, Reservation{entries: []reservedEntry{{bucket: units, units: 2, at: z.Reservation.entries[0].at}}})
	if bs := mustStatus(t, b, cred, []Bucket{units}, nil).Buckets[0]; bs.Used != 3 {
		t.Fatalf("a refund naming the wrong cost took an entry: used %d, want 3", bs.Used)
	}
}

// TestRedisCacheFollowsTheLog: each bucket's cache in the state hash
// (lua/reserve.lua) answers the common decision, but a decision it would
// deny, or that it cannot answer, counts the log and the cache's pending
// entries themselves: a log that lost entries does not deny what they no
// longer count, a refund leaves no stale cache behind, a longer window
// than the cache was built for counts the older entries, and the state
// hash the reserve script creates expires like every other key.
func TestRedisCacheFollowsTheLog(t *testing.T) {
	srv := redistest.Start(t)
	b := newTestRedis(t, srv)
	units := Bucket{Name: "units", Limit: 4, Window: time.Hour}
	state, log := b.stateKey("cache"), b.bucketKey("cache", "units")
	for i := 0; i < 3; i++ {
		mustAllow(t, b, "cache", charge(units, 1))
	}
	if ttl, _ := strconv.ParseInt(srv.Do("PTTL", state), 10, 64); ttl < time.Hour.Milliseconds() {
		t.Fatalf("PTTL %s = %d ms, want at least the window", state, ttl)
	}
	// The first entry is in the log, the next two wait in the cache.
	if n, pending := srv.Do("ZCARD", log), srv.Do("HSTRLEN", state, log); n != "1" || pending != "88" {
		t.Fatalf("ZCARD %s = %s, cache %s bytes; want 1 and 40 + 2 x 24", log, n, pending)
	}
	if bs := mustStatus(t, b, "cache", []Bucket{units}, nil).Buckets[0]; bs.Used != 3 || bs.Entries != 3 {
		t.Fatalf("status: used %d, entries %d; want 3 and 3", bs.Used, bs.Entries)
	}
	mustDeny(t, b, "cache", charge(units, 2), "units")
	// At most 15 entries wait: the 16th moves them all to the log.
	many := Bucket{Name: "many", Limit: 100, Window: time.Hour}
	for i := 0; i < 17; i++ {
		mustAllow(t, b, "cache", charge(many, 1))
	}
	if n, _ := strconv.Atoi(srv.Do("HSTRLEN", state, b.bucketKey("cache", "many"))); n > 40+15*24 {
		t.Fatalf("cache of 17 admissions: %d bytes, want at most 15 pending entries", n)
	}
	full := mustAllow(t, b, "cache", charge(units, 1))
	srv.Do("DEL", log) // the log lost its first entry: 3 pending ones count
	if d := mustAllow(t, b, "cache", charge(units, 1)); d.Remaining["units"] != 0 {
		t.Fatalf("after the log lost an entry: remaining %d, want 0", d.Remaining["units"])
	}
	// A refund moves the pending entries to the log and drops the cache
	// (full is no longer the newest, so it stays; the newest one goes, the
	// one before it, still pending, stays).
	srv.Do("DEL", state, log)
	mustAllow(t, b, "cache", charge(units, 1))
	mustAllow(t, b, "cache", charge(units, 1))
	last := mustAllow(t, b, "cache", charge(units, 2))
	mustRefund(t, b, "cache", full.Reservation)
	mustRefund(t, b, "cache", last.Reservation)
	if d := mustAllow(t, b, "cache", charge(units, 1)); d.Remaining["units"] != 1 {
		t.Fatalf("after a refund of 2 of 4 units: remaining %d, want 1", d.Remaining["units"])
	}
	// Entries older than a short window but inside a longer one: the
	// cache built for the short window must not hide them.
	short := Bucket{Name: "w", Limit: 4, Window: 200 * time.Millisecond}
	long := Bucket{Name: "w", Limit: 4, Window: time.Hour}
	mustAllow(t, b, "cache", charge(short, 2))
	time.Sleep(300 * time.Millisecond)
	mustAllow(t, b, "cache", charge(short, 1))
	mustDeny(t, b, "cache", charge(long, 2), "w")
}
