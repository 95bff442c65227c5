package quota

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/trendfetch/trendfetch/internal/quota/redistest"
	"github.com/trendfetch/trendfetch/internal/redisconn"
)

// Replicated Redis (issue 13, docs/design.md §4 "Durability"): the Sentinel
// failover client and quota.redis.wait_replicas, against real redis-server
// and redis-sentinel processes (internal/quota/redistest).

// sentinelPassword is the password of the servers of the Sentinel tests;
// the backend gets it from the URL only.
const sentinelPassword = "sentinel-test-pw"

// newSentinelBackend builds the backend as cmd/trendfetch does for
// quota.redis.sentinel: the URL gives password and db 2, and its host
// (which does not exist) is ignored.
func newSentinelBackend(t *testing.T, g *redistest.Sentinel) *redisBackend {
	t.Helper()
	c, err := redisconn.New("redis://:"+sentinelPassword+"@ignored.invalid:1/2", nil, redisconn.Sentinel{Master: g.Name, Addrs: g.Addrs()})
	if err != nil {
		t.Fatal(err)
	}
	b := NewRedis(c, 0, 0).(*redisBackend)
	t.Cleanup(func() { b.Close() })
	return b
}

// masterOf returns the master address Sentinel s of g reports, or "" when
// it does not answer.
func masterOf(g *redistest.Sentinel, s *redistest.Server) string {
	sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer sc.Close()
	if a, err := sc.GetMasterAddrByName(context.Background(), g.Name).Result(); err == nil && len(a) == 2 {
		return a[0] + ":" + a[1]
	}
	return ""
}

// masterAddr returns the master address the first answering Sentinel of g
// reports, or "".
func masterAddr(g *redistest.Sentinel) string {
	for _, s := range g.Sentinels {
		if a := masterOf(g, s); a != "" {
			return a
		}
	}
	return ""
}

// serverAt returns the master or replica process of g listening on addr, or nil.
func serverAt(g *redistest.Sentinel, addr string) *redistest.Server {
	for _, s := range append([]*redistest.Server{g.Master}, g.Replicas...) {
		if s.Addr == addr {
			return s
		}
	}
	return nil
}

// waitFailover waits until every Sentinel of g names the same master other
// than old and that server answers ROLE as master, and returns it (failing
// the test after timeout).
func waitFailover(t *testing.T, g *redistest.Sentinel, old string, timeout time.Duration) *redistest.Server {
	t.Helper()
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		addr := masterOf(g, g.Sentinels[0])
		agreed := addr != "" && addr != old && !slices.ContainsFunc(g.Sentinels, func(s *redistest.Server) bool { return masterOf(g, s) != addr })
		if promoted := serverAt(g, addr); agreed && promoted != nil {
			rc := redis.NewClient(&redis.Options{Addr: addr, Password: sentinelPassword, MaxRetries: -1})
			role, err := rc.Do(context.Background(), "ROLE").Slice()
			rc.Close()
			if err == nil && len(role) > 0 && role[0] == "master" {
				return promoted
			}
		}
	}
	t.Fatalf("no Sentinel failover away from %s within %s", old, timeout)
	return nil
}

// outcome is one reservation of a run across a failover.
type outcome struct {
	allowed, denied bool
	err             error
	at              time.Time // when Reserve returned (local clock)
	d               Decision
}

// reserveUntil reserves cost 1 in bucket every few milliseconds until a
// reservation is denied, or until timeout, and returns every outcome in
// order. after is called after each reservation with the outcomes so far,
// on the test goroutine (to kill, freeze or restart servers). A denial
// before killed() reports true fails the test: the limit is reached only
// after the failover.
func reserveUntil(t *testing.T, b *redisBackend, cred string, bucket Bucket, killed func() bool, timeout time.Duration, after func([]outcome)) []outcome {
	t.Helper()
	var out []outcome
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		d, err := b.Reserve(ctx, cred, "", charge(bucket, 1))
		cancel()
		o := outcome{allowed: err == nil && d.Allowed, denied: err == nil && !d.Allowed, err: err, at: time.Now(), d: d}
		out = append(out, o)
		if err != nil && !errors.Is(err, ErrUnavailable) {
			t.Fatalf("reservation %d: %v, want a decision or ErrUnavailable", len(out), err)
		}
		if o.denied {
			if !killed() {
				t.Fatalf("reservation %d denied (%q) before the master was killed; limit %d reached too early", len(out), d.DeniedBucket, bucket.Limit)
			}
			return out
		}
		after(out)
		time.Sleep(3 * time.Millisecond)
	}
	t.Fatalf("no denial after the failover within %s (%s)", timeout, summarize(out))
	return nil
}

// resumed returns the time of the first admission at or after since.
func resumed(out []outcome, since time.Time) time.Time {
	for _, o := range out {
		if o.allowed && !o.at.Before(since) {
			return o.at
		}
	}
	return time.Time{}
}

// summarize counts outcomes for failure messages and logs.
func summarize(out []outcome) string {
	var a, d, u int
	for _, o := range out {
		switch {
		case o.allowed:
			a++
		case o.denied:
			d++
		default:
			u++
		}
	}
	return fmt.Sprintf("%d reservations: %d admitted, %d denied, %d unavailable", len(out), a, d, u)
}

// usedOn counts the bucket's entries on srv (db 2), read with redis-cli
// from the server itself, not through the backend.
func usedOn(t *testing.T, srv *redistest.Server, key string) (entries int) {
	t.Helper()
	return entriesOn(t, srv.Do, "2", key, "+inf")
}

// entriesOn counts the entries of the bucket log key scored at most max
// ("+inf": all) with do (redis-cli on one server) in db: those of the log
// and those still pending in the bucket's cache (lua/reserve.lua).
func entriesOn(t *testing.T, do func(args ...string) string, db, key, max string) int {
	t.Helper()
	state := key[:strings.LastIndex(key, ":")] + ":state"
	n, err := strconv.Atoi(do("-n", db, "EVAL_RO", entriesScript, "2", key, state, max))
	if err != nil {
		t.Fatalf("entries of %s: %v", key, err)
	}
	return n
}

// entriesScript counts a log's entries scored at most ARGV[1] and those
// pending in its cache (KEYS: the log, the state hash).
const entriesScript = `local n, c = redis.call('ZCOUNT', KEYS[1], '-inf', ARGV[1]), redis.call('HGET', KEYS[2], KEYS[1])
for j = 1, c and (#c - 40) / 24 or 0 do
  if struct.unpack('<d', c, 17 + 24 * j) <= tonumber(ARGV[1]) then n = n + 1 end
end
return n`

// The two failover tests do not run in parallel with other tests: the
// Sentinels keep probing the killed master's port, and a server of another
// test started on it meanwhile would be reconfigured by them.

// TestRedisSentinelFailover: a master, a replica and three Sentinels; the
// master is killed in the middle of a run of reservations made through the
// failover client (redisconn.New with a Sentinel). While no master
// is reachable the reservations fail with ErrUnavailable (the call site's
// policy applies); after the Sentinels promote the replica they continue on
// it without any reconnection by the caller, and the run is admitted until
// the promoted master holds exactly the limit, then denied with a
// Retry-After. Replication here is asynchronous (wait_replicas 0), so the
// test does not require every earlier admission to survive; it reports how
// many did not.
func TestRedisSentinelFailover(t *testing.T) {
	g := redistest.StartSentinel(t, 1, 3, sentinelPassword, "")
	b := newSentinelBackend(t, g)
	cred := fmt.Sprintf("sentinel-failover-%d", time.Now().UnixNano())
	units := Bucket{Name: "units", Limit: 40, Window: time.Hour}
	oldMaster := g.Master.Addr

	var killedAt time.Time
	killDone := make(chan struct{})
	out := reserveUntil(t, b, cred, units, func() bool { return !killedAt.IsZero() }, 30*time.Second, func(out []outcome) {
		if killedAt.IsZero() && len(out) == 10 {
			// Killed while the next reservations are under way.
			killedAt = time.Now()
			go func() {
				defer close(killDone)
				g.Master.Kill()
			}()
		}
	})
	<-killDone
	promoted := waitFailover(t, g, oldMaster, 20*time.Second)

	var before, unavailable, after int
	for _, o := range out {
		switch {
		case o.allowed && o.at.Before(killedAt):
			before++
		case o.allowed:
			after++
		case o.err != nil:
			unavailable++
			if o.at.Before(killedAt) {
				t.Errorf("reservation failed before the master was killed: %v", o.err)
			}
		}
	}
	if before != 10 || after == 0 {
		t.Fatalf("admitted %d before the kill (want 10) and %d after the promotion (want > 0); %s", before, after, summarize(out))
	}
	last := out[len(out)-1]
	if !last.denied || last.d.DeniedBucket != units.Name || last.d.RetryAfter <= 0 {
		t.Fatalf("last reservation %+v, want a denial by %q with a Retry-After", last.d, units.Name)
	}
	// The promoted master holds exactly the limit: the limiter decided on
	// it as on any master once the Sentinels switched.
	key := b.bucketKey(cred, units.Name)
	entries := usedOn(t, promoted, key)
	if entries != int(units.Limit) {
		t.Fatalf("promoted master %s holds %d entries, want the limit %d", promoted.Addr, entries, units.Limit)
	}
	st := mustStatus(t, b, cred, []Bucket{units}, nil)
	if st.Buckets[0].Used != units.Limit {
		t.Fatalf("Status through the failover client: used %d, want %d", st.Buckets[0].Used, units.Limit)
	}
	// Entries from before the kill that are on the promoted master; the
	// rest were admitted by the old master and lost with it.
	carried := entries - after
	t.Logf("master killed after 10 admissions; admissions resumed on %s %.1fs later; %s; %d of the 10 earlier admissions carried over (async replication, wait_replicas 0)",
		promoted.Addr, resumed(out, killedAt).Sub(killedAt).Seconds(), summarize(out), carried)
}

// TestRedisSentinelWaitReplicasNothingLost is the adversarial run of issue
// 13 with quota.redis.wait_replicas 1: a master, its replica and three
// Sentinels; 10 admissions; then the replica is cut off (frozen and its link
// killed with CLIENT KILL TYPE replica), so every further admission is
// recorded on the master but WAIT confirms it on no replica: Reserve returns
// ErrUnavailable/errNotReplicated (the call site's policy applies) and the
// entry stays. The master is killed in the middle of these reservations,
// the replica thawed and promoted, and the old master restarted empty as
// the new master's replica. Every admission made before the kill is on the
// promoted master, the run continues, and over the whole run no more calls
// are admitted than the limit (without WAIT, the admissions of the cut-off
// phase are lost with the old master and admitted again).
func TestRedisSentinelWaitReplicasNothingLost(t *testing.T) {
	g := redistest.StartSentinel(t, 1, 3, sentinelPassword, "")
	b := NewRedis(newSentinelBackend(t, g).client, 1, time.Second).(*redisBackend) // confirmations arrive on a loaded machine too
	cred := fmt.Sprintf("sentinel-wait-%d", time.Now().UnixNano())
	units := Bucket{Name: "units", Limit: 40, Window: time.Hour}
	master, replica := g.Master, g.Replicas[0]
	key := b.bucketKey(cred, units.Name)

	var cutAt, killedAt, lastPoll time.Time
	var promoted *redistest.Server
	var lastBeforeCut Decision
	killDone := make(chan struct{})
	thawed, rejoined := false, false
	out := reserveUntil(t, b, cred, units, func() bool { return !killedAt.IsZero() }, 40*time.Second, func(out []outcome) {
		o := out[len(out)-1]
		switch {
		case cutAt.IsZero() && len(out) == 10:
			if !o.allowed {
				t.Fatalf("reservation 10 with a healthy replica: %+v %v", o.d, o.err)
			}
			lastBeforeCut = o.d
			replica.Freeze()
			master.Do("CLIENT", "KILL", "TYPE", "replica")
			cutAt = time.Now()
		case !cutAt.IsZero() && killedAt.IsZero() && len(out) == 15:
			// Killed while the next reservations are under way.
			killedAt = time.Now()
			go func() {
				defer close(killDone)
				master.Kill()
			}()
		case !killedAt.IsZero() && !thawed:
			<-killDone
			replica.Thaw()
			thawed = true
		case thawed && !rejoined && time.Since(lastPoll) > 100*time.Millisecond:
			lastPoll = time.Now()
			if addr := masterAddr(g); addr != "" && addr != master.Addr {
				promoted = serverAt(g, addr)
				// The old master comes back empty and replicates the new
				// one, as an operator (or, later, the Sentinels) would do.
				master.Restart()
				master.Do("REPLICAOF", "127.0.0.1", strings.TrimPrefix(addr, "127.0.0.1:"))
				rejoined = true
			}
		}
	})
	// The Sentinels' first choice (a loaded machine may see later
	// failovers, between servers that hold the same data by then).
	if promoted != replica {
		t.Fatalf("promoted %v, want the replica %s", promoted, replica.Addr)
	}

	var admitted, cutOffAdmitted, notReplicated int
	for _, o := range out {
		if o.allowed {
			admitted++
			if !o.at.Before(cutAt) && o.at.Before(killedAt) {
				cutOffAdmitted++
			}
		}
		if o.err != nil && !cutAt.IsZero() && o.at.After(cutAt) && o.at.Before(killedAt) {
			if !errors.Is(o.err, errNotReplicated) {
				t.Errorf("reservation with the replica cut off: %v, want errNotReplicated", o.err)
			}
			notReplicated++
		}
	}
	if cutOffAdmitted != 0 || notReplicated != 5 {
		t.Errorf("with the replica cut off: %d admitted, %d not replicated; want 0 and 5 (%s)", cutOffAdmitted, notReplicated, summarize(out))
	}
	// Nothing admitted is lost: the 10 admissions before the cut are on the
	// promoted master (scored by Redis TIME up to the 10th decision's).
	if n := entriesOn(t, promoted.Do, "2", key, strconv.FormatInt(lastBeforeCut.Now.UnixMicro(), 10)); n != 10 {
		t.Fatalf("promoted master holds %d of the 10 admissions made before the cut, want all 10", n)
	}
	if admitted > int(units.Limit) {
		t.Errorf("%d calls admitted across the failover, limit %d (%s)", admitted, units.Limit, summarize(out))
	}
	if entries := usedOn(t, promoted, key); entries != int(units.Limit) {
		t.Fatalf("promoted master holds %d entries at the final denial, want %d", entries, units.Limit)
	}
	t.Logf("cut off at 10 admissions, killed after 5 unconfirmed; admissions resumed %.1fs after the kill; %s; %d admitted in all (limit %d)",
		resumed(out, killedAt).Sub(killedAt).Seconds(), summarize(out), admitted, units.Limit)
}

// TestRedisWaitReplicas: a master and one replica, no Sentinel. With
// wait_replicas 1 an admission is confirmed by the replica. With the replica
// frozen (still connected, acknowledging nothing: WAIT on any connection
// but the one that wrote would count it) and then stopped, Reserve returns
// ErrUnavailable and errNotReplicated after about wait_timeout, and the
// entry stays on the master. A denial never waits. wait_replicas 2 with one
// replica never admits.
func TestRedisWaitReplicas(t *testing.T) {
	t.Parallel()
	master := redistest.Start(t, "--repl-diskless-sync-delay", "0")
	replica := redistest.Start(t, "--replicaof", "127.0.0.1", strconv.Itoa(master.Port))
	master.WaitReplicasOnline(1)
	const waitTimeout = time.Second // confirmations must arrive on a loaded machine too
	b := NewRedis(newTestRedis(t, master).client, 1, waitTimeout).(*redisBackend)
	units := Bucket{Name: "units", Limit: 5, Window: time.Hour}
	cred := suiteCredential(t, b)
	key := b.bucketKey(cred, units.Name)

	mustAllow(t, b, cred, charge(units, 1))
	if n := entriesOn(t, replica.Do, "0", key, "+inf"); n != 1 {
		t.Fatalf("replica holds %d entries right after a confirmed admission, want 1", n)
	}

	// wait_replicas 2 with one replica: recorded, not confirmed.
	two := NewRedis(b.client, 2, waitTimeout)
	if _, err := two.Reserve(testCtx(t), cred, "", charge(units, 1)); !errors.Is(err, ErrUnavailable) || !errors.Is(err, errNotReplicated) {
		t.Fatalf("wait_replicas 2 with one replica: %v, want ErrUnavailable and errNotReplicated", err)
	}

	unconfirmed := func(state string) {
		t.Helper()
		start := time.Now()
		d, err := b.Reserve(testCtx(t), cred, "", charge(units, 1))
		took := time.Since(start)
		if !errors.Is(err, ErrUnavailable) || !errors.Is(err, errNotReplicated) || d.Allowed {
			t.Fatalf("replica %s: %+v, %v; want no admission and ErrUnavailable + errNotReplicated", state, d, err)
		}
		if took < waitTimeout || took > waitTimeout+2*time.Second {
			t.Errorf("replica %s: unconfirmed admission took %s, want about wait_timeout %s", state, took, waitTimeout)
		}
		t.Logf("replica %s: %v (after %s)", state, err, took.Round(time.Millisecond))
	}
	replica.Freeze()
	unconfirmed("frozen")
	replica.Thaw()
	master.WaitReplicasOnline(1)
	mustAllow(t, b, cred, charge(units, 1))
	replica.Kill()
	unconfirmed("stopped")
	if n := entriesOn(t, master.Do, "0", key, "+inf"); n != 5 {
		t.Fatalf("master holds %d entries, want 5: unconfirmed entries stay (over-counting is the safe side)", n)
	}

	start := time.Now()
	mustDeny(t, b, cred, charge(units, 1), units.Name)
	if took := time.Since(start); took >= waitTimeout {
		t.Errorf("a denial took %s: denials must not wait for replicas", took)
	}
}

// TestRedisClusterWaitReplicas: on Redis Cluster, WAIT runs on the master
// of the credential's slot, on the connection that ran the script. One
// master of three gets a replica: a credential on that master is admitted
// with wait_replicas 1 (WAIT sent to any other master, which has no
// replica, would confirm nothing), and one on a master without a replica is
// recorded but not confirmed.
func TestRedisClusterWaitReplicas(t *testing.T) {
	t.Parallel()
	skipIfShort(t, "starts a Redis Cluster")
	cl := startCluster(t, 3)
	b := newTestRedisCluster(t, cl)
	cc := b.client.(*redis.ClusterClient)
	ctx := testCtx(t)
	masterOf := func(cred string) *redistest.Server {
		t.Helper()
		node, err := cc.MasterForKey(ctx, b.stateKey(cred))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range cl.Nodes {
			if n.Addr == node.Options().Addr {
				return n
			}
		}
		t.Fatalf("no node %s", node.Options().Addr)
		return nil
	}
	withReplica := masterOf("cluster-wait-0")
	replica := cl.addReplica(t, withReplica)
	var onIt, elsewhere string
	for i := 0; onIt == "" || elsewhere == ""; i++ {
		cred := fmt.Sprintf("cluster-wait-%d", i)
		if masterOf(cred) == withReplica {
			onIt = cmp.Or(onIt, cred)
		} else {
			elsewhere = cmp.Or(elsewhere, cred)
		}
	}
	// A generous timeout: this test is about routing, and a loaded machine
	// may delay the replica's acknowledgement.
	w := NewRedis(b.client, 1, time.Second).(*redisBackend)
	units := Bucket{Name: "units", Limit: 5, Window: time.Hour}
	for range 3 {
		mustAllow(t, w, onIt, charge(units, 1))
	}
	// Read the replica itself (READONLY: a Cluster replica redirects reads
	// of its slots to the master otherwise).
	rc := redis.NewClient(&redis.Options{Addr: replica.Addr})
	defer rc.Close()
	conn := rc.Conn()
	defer conn.Close()
	if err := conn.ReadOnly(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := conn.EvalRO(ctx, entriesScript, []string{w.bucketKey(onIt, units.Name), w.stateKey(onIt)}, "+inf").Int(); err != nil || n != 3 {
		t.Fatalf("replica holds %d entries of %s (%v), want 3", n, onIt, err)
	}
	_, err := w.Reserve(ctx, elsewhere, "", charge(units, 1))
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, errNotReplicated) {
		t.Fatalf("credential on a master without replica: %v, want ErrUnavailable and errNotReplicated", err)
	}
	t.Cleanup(func() { _ = b.Reset(context.Background(), onIt); _ = b.Reset(context.Background(), elsewhere) })
}

// TestRedisSentinelAuth: Sentinels that require a password of their own
// (requirepass in sentinel.conf, distinct from the master's) are reached
// with redisconn.Sentinel.Password; without it, or with a wrong one, no master is
// found and Reserve fails with ErrUnavailable, its error quoting neither
// password.
func TestRedisSentinelAuth(t *testing.T) {
	const sentinelPW = "only-the-sentinels-know"
	g := redistest.StartSentinel(t, 0, 1, sentinelPassword, sentinelPW)
	units := Bucket{Name: "units", Limit: 10, Window: time.Hour}
	reserve := func(password string) (Decision, error) {
		c, err := redisconn.New("redis://:"+sentinelPassword+"@ignored.invalid:1/2?dial_timeout=1s", nil,
			redisconn.Sentinel{Master: g.Name, Addrs: g.Addrs(), Password: password})
		if err != nil {
			t.Fatal(err)
		}
		b := NewRedis(c, 0, 0)
		defer b.Close()
		return b.Reserve(testCtx(t), "sentinel-auth", "", charge(units, 1))
	}
	for _, tc := range []struct {
		name, password string
	}{
		{"no sentinel password", ""},
		{"wrong sentinel password", "wrong-" + sentinelPW},
		{"the master's password", sentinelPassword},
	} {
		d, err := reserve(tc.password)
		var access *AccessError
		if !errors.As(err, &access) || d.Allowed {
			t.Fatalf("%s: %+v %v, want an *AccessError (a configuration error)", tc.name, d, err)
		}
		if strings.Contains(err.Error(), sentinelPW) || strings.Contains(err.Error(), sentinelPassword) {
			t.Fatalf("%s: the error quotes a password: %v", tc.name, err)
		}
		t.Logf("%s: %v", tc.name, err)
	}
	d, err := reserve(sentinelPW)
	if err != nil || !d.Allowed {
		t.Fatalf("with the Sentinels' password: %+v %v", d, err)
	}
	if n := entriesOn(t, g.Master.Do, "2", "trendfetch:{sentinel-auth}:units", "+inf"); n != 1 {
		t.Fatalf("the master holds %d entries, want 1", n)
	}
}

// BenchmarkRedisWaitReplicas measures what wait_replicas 1 adds to an
// admission: a local master and one replica, one decision without and one
// with WAIT interleaved in every iteration (so both see the same load),
// cost 1, limit 2^40 so that every decision admits. Metrics: p50 of each
// in µs and their ratio.
//
//	go test ./internal/quota -run '^$' -bench BenchmarkRedisWaitReplicas -benchtime 3000x -count 3
func BenchmarkRedisWaitReplicas(b *testing.B) {
	master := redistest.Start(b, "--repl-diskless-sync-delay", "0")
	redistest.Start(b, "--replicaof", "127.0.0.1", strconv.Itoa(master.Port))
	master.WaitReplicasOnline(1)
	plain := newTestRedis(b, master)
	waiting := NewRedis(plain.client, 1, time.Second).(*redisBackend)
	units := Bucket{Name: "units", Limit: 1 << 40, Window: time.Hour}
	cred := fmt.Sprintf("bench-wait-%d", time.Now().UnixNano())
	ctx := context.Background()
	p0, p1 := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
	for i := 0; i < b.N; i++ {
		for _, tc := range []struct {
			b   *redisBackend
			out *[]time.Duration
		}{{plain, &p0}, {waiting, &p1}} {
			start := time.Now()
			d, err := tc.b.Reserve(ctx, cred, "", charge(units, 1))
			*tc.out = append(*tc.out, time.Since(start))
			if err != nil || !d.Allowed {
				b.Fatalf("reserve: %+v %v", d, err)
			}
		}
	}
	if b.N == 0 {
		return
	}
	slices.Sort(p0)
	slices.Sort(p1)
	m0, m1 := p0[len(p0)/2], p1[len(p1)/2]
	b.ReportMetric(float64(m0.Microseconds()), "p50-wait0-µs")
	b.ReportMetric(float64(m1.Microseconds()), "p50-wait1-µs")
	b.ReportMetric(float64(m1)/float64(m0), "x_wait0")
	_ = plain.Reset(ctx, cred)
}
