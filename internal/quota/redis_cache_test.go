package quota

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/trendfetch/trendfetch/internal/quota/redistest"
)

// Tests of the state hash's per-bucket cache (redis_lua.go): whatever
// happens between decisions, a decision must count exactly what the log
// holds in its window at Redis TIME, and evict exactly what it may.

// logEntry is one parsed sorted-set entry of a bucket's log.
type logEntry struct {
	score, cum, cost int64
}

func readLog(t *testing.T, c redis.UniversalClient, key string) []logEntry {
	t.Helper()
	zs, err := c.ZRangeWithScores(context.Background(), key, 0, -1).Result()
	if err != nil {
		t.Fatalf("ZRANGE %s: %v", key, err)
	}
	out := make([]logEntry, 0, len(zs))
	for _, z := range zs {
		cum, cost, ok := strings.Cut(z.Member.(string), ":")
		e := logEntry{score: int64(z.Score)}
		var err1, err2 error
		e.cum, err1 = strconv.ParseInt(cum, 10, 64)
		e.cost, err2 = strconv.ParseInt(cost, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			t.Fatalf("%s: malformed member %q", key, z.Member)
		}
		out = append(out, e)
	}
	return out
}

// usedSince sums the costs of the entries with score >= lo.
func usedSince(log []logEntry, lo int64) (used int64) {
	for _, e := range log {
		if e.score >= lo {
			used += e.cost
		}
	}
	return used
}

// countBefore counts the entries with score < cutoff.
func countBefore(log []logEntry, cutoff int64) (n int) {
	for _, e := range log {
		if e.score < cutoff {
			n++
		}
	}
	return n
}

// TestRedisCacheAgreesWithLog drives one credential through a seeded random
// sequence of one- and two-bucket reservations with short, changing windows
// (a window that grows must not reuse a split found for a shorter one),
// calendar mode, a "midnight" that moves forward (so that eviction runs),
// sleeps, and the state hash deleted now and then (its caches rebuilt from
// the logs). After every decision, each bucket's Remaining must equal its
// limit minus the units the log holds in the window at the decision's Redis
// TIME, and an admitted call must have evicted exactly
// min(expired, redisEvictBatch) of the entries before the cutoff.
func TestRedisCacheAgreesWithLog(t *testing.T) {
	srv := redistest.Start(t)
	b := newTestRedis(t, srv)
	c := b.Client()
	rng := rand.New(rand.NewPCG(3, 14))

	var mids []int64
	setMidnight := func(m time.Time) {
		mids = []int64{m.Add(-24 * time.Hour).UnixMicro(), m.UnixMicro(), m.Add(24 * time.Hour).UnixMicro()}
	}
	setMidnight(time.Now())
	b.midnights = func(time.Time) []int64 { return mids }

	const cred = "cache"
	windows := []time.Duration{15 * time.Millisecond, 40 * time.Millisecond, 90 * time.Millisecond, 0}
	bucket := func(name string, limit int64) Bucket {
		w := windows[rng.IntN(len(windows))]
		return Bucket{Name: name, Limit: limit, Window: w, Calendar: w == 0}
	}
	var allowed, denied, rebuilt, evicted int
	for step := range 700 {
		if step%60 == 0 {
			setMidnight(time.Now().Add(-20 * time.Millisecond))
		}
		if rng.IntN(25) == 0 {
			c.Del(context.Background(), b.stateKey(cred))
			rebuilt++
		}
		time.Sleep(time.Duration(rng.IntN(6000)) * time.Microsecond)

		cs := charge(bucket("units", 40), []int64{1, 2, 5}[rng.IntN(3)])
		if rng.IntN(3) == 0 {
			cs = append(cs, BucketCharge{Bucket: bucket("search", 6), Units: 1})
		}
		before := make([][]logEntry, len(cs))
		for i, ch := range cs {
			before[i] = readLog(t, c, b.bucketKey(cred, ch.Name))
		}
		d := mustReserve(t, b, cred, cs)
		if d.Allowed {
			allowed++
		} else {
			denied++
		}
		now := d.Now.UnixMicro()
		lastMid := mids[0]
		for _, m := range mids {
			if m <= now {
				lastMid = m
			}
		}
		for i, ch := range cs {
			lo := now - ch.Window.Microseconds() + 1
			if ch.Calendar {
				lo = lastMid
			}
			after := readLog(t, c, b.bucketKey(cred, ch.Name))
			want := max(ch.Limit-usedSince(after, lo), 0)
			if got := d.Remaining[ch.Name]; got != want {
				t.Fatalf("step %d, bucket %s (window %v, calendar %v): Remaining %d, log says %d (allowed %v)",
					step, ch.Name, ch.Window, ch.Calendar, got, want, d.Allowed)
			}
			if !d.Allowed {
				if len(after) != len(before[i]) {
					t.Fatalf("step %d: a denial changed the log of %s (%d -> %d entries)", step, ch.Name, len(before[i]), len(after))
				}
				continue
			}
			cutoff := min(lo, lastMid)
			expired := countBefore(before[i], cutoff)
			if got, want := countBefore(after, cutoff), max(expired-redisEvictBatch, 0); got != want {
				t.Fatalf("step %d, bucket %s: %d entries before the cutoff after the decision, want %d (had %d)",
					step, ch.Name, got, want, expired)
			}
			evicted += expired - countBefore(after, cutoff)
		}
	}
	// The sequence must have exercised every path it claims to.
	if allowed < 100 || denied < 20 || rebuilt < 10 || evicted < 50 {
		t.Fatalf("weak sequence: %d allowed, %d denied, %d rebuilds, %d evicted", allowed, denied, rebuilt, evicted)
	}
	t.Logf("%d allowed, %d denied, %d state rebuilds, %d entries evicted", allowed, denied, rebuilt, evicted)
}

// TestRedisCacheLostLog: a bucket's log deleted behind the state hash's back
// (an operator's DEL, maxmemory eviction) makes the cache over-count, never
// under-count, and only until those units would have left the window.
func TestRedisCacheLostLog(t *testing.T) {
	srv := redistest.Start(t)
	b := newTestRedis(t, srv)
	units := Bucket{Name: "units", Limit: 10, Window: 300 * time.Millisecond}
	mustAllow(t, b, "lost", charge(units, 8))
	srv.Do("DEL", b.bucketKey("lost", "units"))
	d := mustDeny(t, b, "lost", charge(units, 5), "units")
	if d.Remaining["units"] != 2 {
		t.Fatalf("after the log was deleted: Remaining %d, want 2 (the cache still counts 8)", d.Remaining["units"])
	}
	if d.RetryAfter > units.Window {
		t.Fatalf("RetryAfter %v, want at most the window %v", d.RetryAfter, units.Window)
	}
	time.Sleep(d.RetryAfter + 20*time.Millisecond)
	if d := mustAllow(t, b, "lost", charge(units, 5)); d.Remaining["units"] != 5 {
		t.Fatalf("after the window: Remaining %d, want 5", d.Remaining["units"])
	}
}

// TestRedisCacheWindowGrows: a split found for a short window says nothing
// about a longer one; entries that are back inside the longer window count.
func TestRedisCacheWindowGrows(t *testing.T) {
	srv := redistest.Start(t)
	b := newTestRedis(t, srv)
	short := Bucket{Name: "units", Limit: 10, Window: 100 * time.Millisecond}
	long := Bucket{Name: "units", Limit: 10, Window: time.Hour}
	mustAllow(t, b, "grow", charge(short, 5))
	time.Sleep(150 * time.Millisecond)
	// The short window's split now puts the 5 units before it.
	if d := mustAllow(t, b, "grow", charge(short, 1)); d.Remaining["units"] != 9 {
		t.Fatalf("short window: Remaining %d, want 9", d.Remaining["units"])
	}
	if d := mustDeny(t, b, "grow", charge(long, 5), "units"); d.Remaining["units"] != 4 {
		t.Fatalf("long window: Remaining %d, want 4 (5 + 1 units in the last hour)", d.Remaining["units"])
	}
}
