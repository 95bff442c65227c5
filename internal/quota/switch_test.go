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

// TestCounterChunksKeepEveryUnit: counters that end at or after now (the
// current one, and any from the future after a clock step back) are all
// stamped now, and none of their units is lost; older ones keep their own
// last µs, in order, until appended after a newer log entry (restamp).
func TestCounterChunksKeepEveryUnit(t *testing.T) {
	const span, now = 100, 1050 // now is in counter 10
	got := counterChunks([]oldCounter{
		{slot: 12, span: span, units: 4}, // from the future
		{slot: 10, span: span, units: 3}, // the current counter
		{slot: 8, span: span, units: 2},
		{slot: 9, span: span, units: 0},     // empty: no chunk
		{slot: 7, span: 2 * span, units: 1}, // another geometry: ends at 1599, after now
	}, now)
	var sum int64
	for i, ch := range got {
		sum += ch.units
		if i > 0 && ch.at < got[i-1].at {
			t.Fatalf("chunks %v: not ascending", got)
		}
	}
	if sum != 10 || len(got) != 4 || got[0] != (usageChunk{at: 899, units: 2}) || got[3].at != now {
		t.Fatalf("chunks %v: want 4 chunks of 10 units, the first {899 2}, the last at now", got)
	}
	if r := restamp(got, 1000); r[0].at != 1000 || r[1].at != now || r[0].units != 2 {
		t.Fatalf("restamp(%v, 1000) = %v: want stamps before the log's newest (1000) moved to it, later ones kept", got, r)
	}
}

// TestSQLiteSwitchTiming pins when carried-over units leave, on a fake
// clock: a counter's units, once its bucket is a log, count until the end
// of their counter + window (Retry-After says so, and they are gone one µs
// later); a log's entries, once its bucket is a counter, sit in the
// counter of their moment.
func TestSQLiteSwitchTiming(t *testing.T) {
	start := time.Date(2026, 5, 4, 12, 0, 30, 0, time.UTC) // 30 s into a minute
	clock := newFakeClock(start)
	b := newTestSQLite(t, WithClock(clock.Now))
	counter := Bucket{Name: "t", Limit: 10, Window: 10 * time.Minute, Algorithm: AlgorithmCounter, Slots: 11} // 1-minute counters
	log := Bucket{Name: "t", Limit: 10, Window: 10 * time.Minute}
	mustAllow(t, b, "c", charge(counter, 10))

	// counter -> log, 5 minutes later: the 10 units are stamped at the
	// counter's last µs, 12:00:59.999999, and leave at 12:10:59.999999.
	clock.Advance(5 * time.Minute)
	end := start.Add(30*time.Second - time.Microsecond)
	d := mustDeny(t, b, "c", charge(log, 1), log.Name)
	if want := end.Add(log.Window).Sub(clock.Now()); d.RetryAfter != want {
		t.Fatalf("counter -> log: RetryAfter %v, want %v (the counter's end + window)", d.RetryAfter, want)
	}
	clock.Set(end.Add(log.Window).Add(-time.Microsecond))
	mustDeny(t, b, "c", charge(log, 1), log.Name)
	clock.Set(end.Add(log.Window))
	if d := mustAllow(t, b, "c", charge(log, 4)); d.Remaining[log.Name] != 6 {
		t.Fatalf("counter -> log, after the carried units left: Remaining %d, want 6", d.Remaining[log.Name])
	}

	// log -> counter: the 4 units, admitted at 12:10:59.999999, are in
	// the counter of 12:10; 9 minutes later it is the oldest of the window,
	// weighted by what is left of it (less than 1/60 after 59 s: 1 unit,
	// rounded up), and a minute later gone.
	clock.Advance(9*time.Minute + 59*time.Second)
	if bs := mustStatus(t, b, "c", []Bucket{counter}, nil).Buckets[0]; bs.Used != 1 {
		t.Fatalf("log -> counter, in the oldest counter: used %d, want 1 (4 units weighted by under 1/60, rounded up)", bs.Used)
	}
	clock.Advance(time.Minute)
	if bs := mustStatus(t, b, "c", []Bucket{counter}, nil).Buckets[0]; bs.Used != 0 {
		t.Fatalf("log -> counter, a window later: used %d, want 0", bs.Used)
	}
}
