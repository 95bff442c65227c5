package quota

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/trendfetch/trendfetch/internal/quota/redistest"
)

// Tests of redisRefundScript against the log and the state hash's cache
// (redis_lua.go): a refund removes exactly its entry, rewrites the later
// entries' running totals, and leaves a cache that later decisions can trust.

// redisCache reads bucket's cache field of the state hash: total, newest and
// ok=false when the field is missing.
func redisCache(t *testing.T, c redis.UniversalClient, stateKey, bucket string) (total, newest float64, ok bool) {
	t.Helper()
	v, err := c.HGet(context.Background(), stateKey, bucket).Result()
	if err == redis.Nil {
		return 0, 0, false
	}
	if err != nil || len(v) != 48 {
		t.Fatalf("HGET %s %s: %q, %v", stateKey, bucket, v, err)
	}
	f := func(i int) float64 { return math.Float64frombits(binary.LittleEndian.Uint64([]byte(v[8*i:]))) }
	return f(0), f(1), true
}

// checkCache fails unless bucket's cache field (if present) agrees with its
// log: total is the newest entry's cum (when the log is not empty), newest
// is at least its score, every entry up to split_cum is before split_lo,
// and split_next is the score of the first entry after the split.
func checkCache(t *testing.T, step int, c redis.UniversalClient, stateKey, bucket string, log []logEntry) {
	t.Helper()
	v, err := c.HGet(context.Background(), stateKey, bucket).Result()
	if err == redis.Nil || len(log) == 0 {
		return
	}
	if err != nil || len(v) != 48 {
		t.Fatalf("HGET %s %s: %q, %v", stateKey, bucket, v, err)
	}
	var f [6]int64
	for i := range f {
		f[i] = int64(math.Float64frombits(binary.LittleEndian.Uint64([]byte(v[8*i:]))))
	}
	total, newest, slo, scum, snext := f[0], f[1], f[2], f[3], f[4]
	last := log[len(log)-1]
	if total != last.cum || newest < last.score {
		t.Fatalf("step %d, %s: cache total %d newest %d; log's newest entry has cum %d, score %d", step, bucket, total, newest, last.cum, last.score)
	}
	for _, e := range log {
		if e.cum <= scum && e.score >= slo {
			t.Fatalf("step %d, %s: entry (score %d, cum %d) is not before the split (lo %d, cum %d)", step, bucket, e.score, e.cum, slo, scum)
		}
		if e.cum > scum {
			if total > scum && e.score != snext {
				t.Fatalf("step %d, %s: split_next %d, but the first entry after the split (cum %d) is scored %d", step, bucket, snext, scum, e.score)
			}
			break
		}
	}
}

// checkPrefixSums fails unless each entry's cum is the previous one's plus
// its cost, and scores strictly increase (they identify refunds).
func checkPrefixSums(t *testing.T, step int, key string, log []logEntry) {
	t.Helper()
	for i := 1; i < len(log); i++ {
		if log[i].cum != log[i-1].cum+log[i].cost {
			t.Fatalf("step %d, %s: entry %d has cum %d after cum %d, cost %d: prefix sums broken", step, key, i, log[i].cum, log[i-1].cum, log[i].cost)
		}
		if log[i].score <= log[i-1].score {
			t.Fatalf("step %d, %s: scores %d then %d: not strictly increasing", step, key, log[i-1].score, log[i].score)
		}
	}
}

// withoutEntry is log minus the entry (score, cost), the later entries'
// cum lowered by cost: what a refund of that entry must leave.
func withoutEntry(log []logEntry, score, cost int64) ([]logEntry, bool) {
	for i, e := range log {
		if e.score == score && e.cost == cost {
			out := slices.Clone(log[:i])
			for _, l := range log[i+1:] {
				out = append(out, logEntry{score: l.score, cum: l.cum - cost, cost: l.cost})
			}
			return out, true
		}
	}
	return log, false
}

// TestRedisRefundAgreesWithLog drives one credential through a seeded random
// mix of one- and two-bucket reservations and refunds of earlier ones (some
// twice, some after their window), with short windows, calendar mode, the
// state hash deleted now and then, and sleeps. After every refund each log
// is exactly the log before minus the refunded entry (later entries' cum
// lowered by its cost), or unchanged when the entry had left its window or
// was refunded before; after every decision, Remaining equals the limit
// minus what the log holds in the window, and the cache's total is the log's.
func TestRedisRefundAgreesWithLog(t *testing.T) {
	srv := redistest.Start(t)
	b := newTestRedis(t, srv)
	c := b.Client()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(13, 7))
	const cred = "refund-cache"

	windows := []time.Duration{20 * time.Millisecond, 60 * time.Millisecond, 0}
	bucket := func(name string, limit int64) Bucket {
		w := windows[rng.IntN(len(windows))]
		return Bucket{Name: name, Limit: limit, Window: w, Calendar: w == 0}
	}
	redisNow := func() int64 {
		tm, err := c.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		return tm.UnixMicro()
	}
	var admitted []Decision
	var refunds, removed, noops, rebuilt int
	for step := range 600 {
		if rng.IntN(30) == 0 {
			c.Del(ctx, b.stateKey(cred))
			rebuilt++
		}
		time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
		if len(admitted) > 0 && rng.IntN(3) == 0 {
			// Refund a recent reservation (or an older one, maybe again).
			d := admitted[len(admitted)-1-min(rng.IntN(4), len(admitted)-1)]
			before := map[string][]logEntry{}
			for _, e := range d.Reservation.entries {
				before[e.bucket.Name] = readLog(t, c, b.bucketKey(cred, e.bucket.Name))
			}
			t0 := redisNow()
			if err := b.Refund(ctx, cred, d.Reservation); err != nil {
				t.Fatalf("step %d: Refund: %v", step, err)
			}
			t1 := redisNow()
			refunds++
			for _, e := range d.Reservation.entries {
				key := b.bucketKey(cred, e.bucket.Name)
				after := readLog(t, c, key)
				checkPrefixSums(t, step, key, after)
				want, present := withoutEntry(before[e.bucket.Name], e.at, e.units)
				// In the window at the refund: sure when it still is after it.
				inWindow := e.bucket.Calendar || e.at > t1-e.bucket.Window.Microseconds()
				outside := !e.bucket.Calendar && e.at <= t0-e.bucket.Window.Microseconds()
				switch {
				case present && inWindow:
					if !slices.Equal(after, want) {
						t.Fatalf("step %d, %s: refund of (%d, %d) left\n%v\nwant\n%v", step, e.bucket.Name, e.at, e.units, after, want)
					}
					removed++
				case !present || outside:
					if !slices.Equal(after, before[e.bucket.Name]) {
						t.Fatalf("step %d, %s: a refund of an entry gone or out of the window changed the log\n%v\n->\n%v", step, e.bucket.Name, before[e.bucket.Name], after)
					}
					noops++
				}
				checkCache(t, step, c, b.stateKey(cred), e.bucket.Name, after)
				if len(after) > 0 {
					if ttl := c.PTTL(ctx, key).Val(); ttl <= 0 {
						t.Fatalf("step %d, %s: PTTL %v after a refund, want the key's TTL kept", step, key, ttl)
					}
				}
			}
			continue
		}
		cs := charge(bucket("units", 30), []int64{1, 2, 5}[rng.IntN(3)])
		if rng.IntN(3) == 0 {
			cs = append(cs, BucketCharge{Bucket: bucket("search", 5), Units: 1})
		}
		d := mustReserve(t, b, cred, cs)
		if d.Allowed {
			admitted = append(admitted, d)
			if len(d.Reservation.entries) != len(cs) {
				t.Fatalf("step %d: Reservation of %d entries for %d charges", step, len(d.Reservation.entries), len(cs))
			}
		} else if !d.Reservation.IsZero() {
			t.Fatalf("step %d: a denial carries a Reservation", step)
		}
		now := d.Now.UnixMicro()
		lastMid := PacificMidnight(d.Now).UnixMicro()
		for _, ch := range cs {
			lo := now - ch.Window.Microseconds() + 1
			if ch.Calendar {
				lo = lastMid
			}
			key := b.bucketKey(cred, ch.Name)
			log := readLog(t, c, key)
			checkPrefixSums(t, step, key, log)
			checkCache(t, step, c, b.stateKey(cred), ch.Name, log)
			if got, want := d.Remaining[ch.Name], max(ch.Limit-usedSince(log, lo), 0); got != want {
				t.Fatalf("step %d, bucket %s (window %v): Remaining %d, log says %d (allowed %v)", step, ch.Name, ch.Window, got, want, d.Allowed)
			}
		}
	}
	if len(admitted) < 150 || refunds < 100 || removed < 50 || noops < 10 || rebuilt < 5 {
		t.Fatalf("weak sequence: %d admitted, %d refunds, %d entries removed, %d no-ops, %d rebuilds", len(admitted), refunds, removed, noops, rebuilt)
	}
	t.Logf("%d admitted, %d refunds: %d entries removed, %d no-ops; %d state rebuilds", len(admitted), refunds, removed, noops, rebuilt)
}

// TestRedisRefundScoreNotReissued: a refund of the newest entry keeps the
// cache's newest score, so the next entry is scored after it even if Redis
// TIME has not moved past it (same microsecond, a clock stepped back), and a
// second refund of the first reservation cannot take the next entry.
func TestRedisRefundScoreNotReissued(t *testing.T) {
	srv := redistest.Start(t)
	b := newTestRedis(t, srv)
	units := Bucket{Name: "units", Limit: 10, Window: time.Hour}
	const cred = "reissue"
	first := mustAllow(t, b, cred, charge(units, 1))
	mustRefund(t, b, cred, first.Reservation)
	_, newest, ok := redisCache(t, b.Client(), b.stateKey(cred), "units")
	if !ok || int64(newest) != first.Reservation.entries[0].at {
		t.Fatalf("cache newest %v (present %v) after refunding the newest entry, want its score %d kept", newest, ok, first.Reservation.entries[0].at)
	}
	second := mustAllow(t, b, cred, charge(units, 1))
	if second.Reservation.entries[0].at <= first.Reservation.entries[0].at {
		t.Fatalf("second entry scored %d, not after the refunded %d", second.Reservation.entries[0].at, first.Reservation.entries[0].at)
	}
	mustRefund(t, b, cred, first.Reservation)
	if bs := mustStatus(t, b, cred, []Bucket{units}, nil).Buckets[0]; bs.Used != 1 {
		t.Fatalf("Used = %d after refunding the first reservation twice, want 1 (the second)", bs.Used)
	}
}

// TestRedisScoresUniqueWhenTimeBehind: when Redis TIME reads earlier than a
// bucket's newest entry (a promoted replica whose clock is behind), new
// entries are still scored strictly after it, one µs apart, so each
// reservation keeps its own identity: refunding one of two such calls
// twice removes exactly one.
func TestRedisScoresUniqueWhenTimeBehind(t *testing.T) {
	srv := redistest.Start(t)
	b := newTestRedis(t, srv)
	c := b.Client()
	ctx := context.Background()
	units := Bucket{Name: "units", Limit: 10, Window: time.Hour}
	const cred = "behind"
	mustAllow(t, b, cred, charge(units, 1))
	// Move the newest entry 10 s into the future, log and cache alike:
	// Redis TIME is now 10 s behind it.
	future := time.Now().Add(10 * time.Second).UnixMicro()
	key := b.bucketKey(cred, "units")
	log := readLog(t, c, key)
	c.ZAdd(ctx, key, redis.Z{Score: float64(future), Member: "0000000000000001:1"})
	c.HDel(ctx, b.stateKey(cred), "units") // rebuilt from the log
	if len(log) != 1 {
		t.Fatalf("log %v, want one entry", log)
	}
	x := mustAllow(t, b, cred, charge(units, 1))
	y := mustAllow(t, b, cred, charge(units, 1))
	if ax, ay := x.Reservation.entries[0].at, y.Reservation.entries[0].at; ax != future+1 || ay != future+2 {
		t.Fatalf("scores %d and %d while TIME is behind %d, want %d and %d", ax, ay, future, future+1, future+2)
	}
	mustRefund(t, b, cred, x.Reservation)
	mustRefund(t, b, cred, x.Reservation)
	if bs := mustStatus(t, b, cred, []Bucket{units}, nil).Buckets[0]; bs.Used != 2 || bs.Entries != 2 {
		t.Fatalf("after refunding one of two calls twice: used %d entries %d, want 2 and 2", bs.Used, bs.Entries)
	}
	checkPrefixSums(t, 0, key, readLog(t, c, key))
	// An entry is named by its score and its cost: a Reservation with the
	// right score but another cost refunds nothing.
	wrong := Reservation{entries: []reservedEntry{{bucket: units, units: 2, at: y.Reservation.entries[0].at}}}
	mustRefund(t, b, cred, wrong)
	if bs := mustStatus(t, b, cred, []Bucket{units}, nil).Buckets[0]; bs.Used != 2 {
		t.Fatalf("a refund naming the wrong cost took an entry: used %d, want 2", bs.Used)
	}
}

// TestRedisRefundBeforeSplit: an entry still inside the window its
// reservation named can sit before the cache's split (found for a shorter
// window by a later decision); refunding it must move the split down too,
// or the next decision under-counts.
func TestRedisRefundBeforeSplit(t *testing.T) {
	srv := redistest.Start(t)
	b := newTestRedis(t, srv)
	c := b.Client()
	long := Bucket{Name: "units", Limit: 10, Window: time.Hour}
	short := Bucket{Name: "units", Limit: 10, Window: 100 * time.Millisecond}
	const cred = "split"
	a := mustAllow(t, b, cred, charge(long, 1))
	time.Sleep(150 * time.Millisecond)
	mustAllow(t, b, cred, charge(short, 2)) // the split is now just before this entry
	mustRefund(t, b, cred, a.Reservation)   // inside the hour, before the split
	key := b.bucketKey(cred, "units")
	checkCache(t, 0, c, b.stateKey(cred), "units", readLog(t, c, key))
	if d := mustAllow(t, b, cred, charge(short, 3)); d.Remaining["units"] != 5 {
		t.Fatalf("Remaining %d in the short window after the refund, want 5 (2 + 3 units)", d.Remaining["units"])
	}
	if d := mustAllow(t, b, cred, charge(long, 1)); d.Remaining["units"] != 4 {
		t.Fatalf("Remaining %d in the hour after the refund, want 4 (2 + 3 + 1 units)", d.Remaining["units"])
	}
}
