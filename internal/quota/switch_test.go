package quota

import (
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/quota/redistest"
)

// runSwitchSuite checks what switch.go promises the persistent backends:
// changing a bucket's algorithm, or a counter's slots, carries its usage
// over instead of starting it empty. One bucket goes log -> counter (61
// slots) -> log -> counter (7 slots) -> counter (61 slots) in real time
// (window one hour: nothing leaves it during the test), and at every step
// Status shows the usage so far and Reserve decides on it; the old form is
// deleted once converted (a switch back counts it once, not twice).
func runSwitchSuite(t *testing.T, b Backend) {
	t.Helper()
	cred := suiteCredential(t, b)
	log := Bucket{Name: "sw", Limit: 100, Window: time.Hour}
	counter := log
	counter.Algorithm, counter.Slots = AlgorithmCounter, 61 // 1-minute counters
	coarse := counter
	coarse.Slots = 7 // 10-minute counters

	used := func(step string, bk Bucket, want int64) BucketStatus {
		t.Helper()
		st := mustStatus(t, b, cred, []Bucket{bk}, map[string]int64{bk.Name: 5})
		bs := st.Buckets[0]
		if bs.Used != want || bs.Remaining != bk.Limit-want {
			t.Fatalf("%s: Status used %d, remaining %d; want %d, %d (the usage of the old form carried over)", step, bs.Used, bs.Remaining, want, bk.Limit-want)
		}
		return bs
	}

	for range 3 {
		mustAllow(t, b, cred, charge(log, 10))
	}
	used("log", log, 30)

	// log -> counter: the entries go to the counters of their timestamps.
	used("log -> counter, before any Reserve", counter, 30)
	mustDeny(t, b, cred, charge(counter, 71), log.Name)
	if d := mustAllow(t, b, cred, charge(counter, 70)); d.Remaining[log.Name] != 0 {
		t.Fatalf("log -> counter: Remaining %d after 30 + 70 units, want 0", d.Remaining[log.Name])
	}
	used("log -> counter, converted", counter, 100)

	// counter -> log: 100 units, stamped at the end of their counters (at
	// most now), leave an hour after that, not before.
	bs := used("counter -> log, before any Reserve", log, 100)
	if bs.Entries < 1 || bs.RetryAfterOne < 58*time.Minute || bs.RetryAfterOne > time.Hour {
		t.Fatalf("counter -> log: Status entries %d, RetryAfterOne %v; want >= 1 and within the minute before an hour", bs.Entries, bs.RetryAfterOne)
	}
	d := mustDeny(t, b, cred, charge(log, 1), log.Name)
	if d.RetryAfter < 58*time.Minute || d.RetryAfter > time.Hour {
		t.Fatalf("counter -> log: RetryAfter %v, want within the minute before an hour", d.RetryAfter)
	}
	used("counter -> log, after a denial", log, 100)

	// counter slots 61 -> 7 (or log -> counter again, where the denial
	// above converted: Redis), and 7 -> 61.
	used("-> 7 slots, before any Reserve", coarse, 100)
	mustDeny(t, b, cred, charge(coarse, 1), log.Name)
	used("-> 7 slots, after a denial", coarse, 100)
	used("7 -> 61 slots, before any Reserve", counter, 100)
	mustDeny(t, b, cred, charge(counter, 1), log.Name)
	used("7 -> 61 slots", counter, 100)
}

func TestSQLiteSwitchForm(t *testing.T) {
	t.Parallel()
	runSwitchSuite(t, newTestSQLite(t))
}

// TestRedisSwitchForm also checks that every key the conversions wrote
// expires (the server is this test's own).
func TestRedisSwitchForm(t *testing.T) {
	t.Parallel()
	b := newTestRedis(t, redistest.Start(t))
	runSwitchSuite(t, b)
	// A credential whose only bucket was a counter has no state hash
	// until its conversion to a log writes one.
	log := Bucket{Name: "only", Limit: 10, Window: time.Hour}
	counter := log
	counter.Algorithm = AlgorithmCounter
	mustAllow(t, b, "counter-only", charge(counter, 10))
	mustDeny(t, b, "counter-only", charge(log, 1), log.Name)
	ctx := testCtx(t)
	keys, err := b.Client().Keys(ctx, "*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("KEYS *: %v %v", keys, err)
	}
	for _, k := range keys {
		if ttl, err := b.Client().PTTL(ctx, k).Result(); err != nil || ttl <= 0 {
			t.Errorf("key %s: PTTL %v %v, want a TTL", k, ttl, err)
		}
	}
}
