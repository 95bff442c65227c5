package quota

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/quota/redistest"
)

// memoryUsage is MEMORY USAGE key SAMPLES 0 (every element counted), bytes.
func memoryUsage(t *testing.T, srv *redistest.Server, key string) int64 {
	t.Helper()
	out := srv.Do("MEMORY", "USAGE", key, "SAMPLES", "0")
	n, err := strconv.ParseInt(out, 10, 64)
	if err != nil {
		t.Fatalf("MEMORY USAGE %s: %q", key, out)
	}
	return n
}

// TestRedisCounterMemoryUsage: a saturated counter bucket's key has the
// same MEMORY USAGE whatever the limit (100 to 10^6 units), with every
// one of its counters written; a saturated log grows with the calls it
// holds. The figures are logged.
func TestRedisCounterMemoryUsage(t *testing.T) {
	srv := redistest.Start(t)
	b := newTestRedis(t, srv)
	ctx := context.Background()
	for _, slots := range []int{2, 8, 61} {
		var sizes []int64
		for _, limit := range []int64{100, 10_000, 1_000_000} {
			// Sub-windows of 10 ms: a cost-1 call every 10 ms (at most
			// slots+1 per window, below every limit here, so all are
			// admitted) writes every counter of the ring, then calls of
			// limit/20 saturate the bucket.
			sub := 10 * time.Millisecond
			bk := Bucket{Name: "b", Limit: limit, Window: time.Duration(slots-1) * sub, Algorithm: AlgorithmCounter, Slots: slots}
			cred := fmt.Sprintf("mem-%d-%d", slots, limit)
			key := b.counterKey(cred, bk.Name)
			reserve := func(cost int64) bool {
				d, err := b.Reserve(ctx, cred, []BucketCharge{{Bucket: bk, Units: cost}})
				if err != nil {
					t.Fatal(err)
				}
				return d.Allowed
			}
			fields := func() int64 {
				n, err := b.Client().HLen(ctx, key).Result()
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
			for deadline := time.Now().Add(10 * time.Second); fields() < int64(slots)+1; time.Sleep(sub) {
				if time.Now().After(deadline) {
					t.Fatalf("slots %d limit %d: %d fields written in 10 s, want %d counters and g", slots, limit, fields(), slots)
				}
				reserve(1)
			}
			for reserve(max(limit/20, 1)) {
			}
			if n := fields(); n != int64(slots)+1 {
				t.Fatalf("slots %d limit %d: %d fields, want %d counters and g", slots, limit, n, slots)
			}
			sizes = append(sizes, memoryUsage(t, srv, key))
		}
		t.Logf("counter, %2d slots: MEMORY USAGE %v bytes at limits 100, 10^4, 10^6", slots, sizes)
		for _, s := range sizes[1:] {
			if d := s - sizes[0]; d < -8 || d > 8 {
				t.Errorf("slots %d: MEMORY USAGE %v bytes at limits 100, 10^4, 10^6: want constant within 8 bytes", slots, sizes)
			}
		}
	}
	// The log at saturation (cost 1): one entry per call.
	var logSizes []int64
	for _, limit := range []int64{100, 1000, 10_000} {
		bk := Bucket{Name: "b", Limit: limit, Window: time.Hour}
		cred := fmt.Sprintf("log-%d", limit)
		for i := int64(0); i <= limit; i++ {
			if _, err := b.Reserve(ctx, cred, []BucketCharge{{Bucket: bk, Units: 1}}); err != nil {
				t.Fatal(err)
			}
		}
		logSizes = append(logSizes, memoryUsage(t, srv, b.bucketKey(cred, bk.Name)))
	}
	t.Logf("log: MEMORY USAGE %v bytes at limits 100, 10^3, 10^4 (cost 1; 10^6 would hold 10^6 entries)", logSizes)
	if !(logSizes[0] < logSizes[1] && logSizes[1] < logSizes[2]) {
		t.Errorf("log MEMORY USAGE %v: want growing with the limit", logSizes)
	}
}

// TestRedisCounterAgreesWithMemory is the live check of the Redis script
// against the Go estimate: a bursty demand runs against Redis on its own
// clock (TIME cannot be moved), then the same requests are replayed on the
// memory backend with its clock set to each decision's Redis TIME. Every
// decision must agree: admitted or not, remaining units, Retry-After.
func TestRedisCounterAgreesWithMemory(t *testing.T) {
	srv := redistest.Start(t)
	b := newTestRedis(t, srv)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 8))
	for _, slots := range []int{2, 5} {
		bk := Bucket{Name: "b", Limit: 20, Window: 200 * time.Millisecond, Algorithm: AlgorithmCounter, Slots: slots}
		other := Bucket{Name: "o", Limit: 1000, Window: time.Hour} // a log charged alongside
		type decision struct {
			cost int64
			d    Decision
		}
		var got []decision
		cred := fmt.Sprintf("agree-%d", slots)
		for range 60 {
			for range 1 + rng.IntN(6) {
				cost := 1 + rng.Int64N(3)
				d, err := b.Reserve(ctx, cred, []BucketCharge{{Bucket: bk, Units: cost}, {Bucket: other, Units: 1}})
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, decision{cost, d})
			}
			time.Sleep(time.Duration(rng.IntN(25)) * time.Millisecond)
		}
		var now time.Time
		m := NewMemory(WithMemoryClock(func() time.Time { return now }))
		admitted := 0
		for i, g := range got {
			now = g.d.Now
			d, err := m.Reserve(ctx, cred, []BucketCharge{{Bucket: bk, Units: g.cost}, {Bucket: other, Units: 1}})
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed != g.d.Allowed || d.Remaining["b"] != g.d.Remaining["b"] || d.RetryAfter != g.d.RetryAfter || d.DeniedBucket != g.d.DeniedBucket {
				t.Fatalf("slots %d, decision %d (cost %d at %v): Redis allowed %v remaining %d retry %v denied by %q; memory %v %d %v %q",
					slots, i, g.cost, now.Format(time.StampMicro), g.d.Allowed, g.d.Remaining["b"], g.d.RetryAfter, g.d.DeniedBucket,
					d.Allowed, d.Remaining["b"], d.RetryAfter, d.DeniedBucket)
			}
			if d.Allowed {
				admitted++
			}
		}
		t.Logf("slots %d: %d decisions (%d admitted) agree", slots, len(got), admitted)
		if admitted == 0 || admitted == len(got) {
			t.Fatalf("slots %d: %d of %d admitted: the demand did not exercise denials", slots, admitted, len(got))
		}
		st, err := b.Status(ctx, cred, []Bucket{bk}, map[string]int64{"b": 3})
		if err != nil {
			t.Fatal(err)
		}
		now = st.Now
		mst, _ := m.Status(ctx, cred, []Bucket{bk}, map[string]int64{"b": 3})
		if r, g := st.Buckets[0], mst.Buckets[0]; r.Used != g.Used || r.RetryAfterOne != g.RetryAfterOne || r.RetryAfterMax != g.RetryAfterMax || r.UsedToday != g.UsedToday {
			t.Fatalf("slots %d: Status: Redis %+v, memory %+v", slots, r, g)
		}
	}
}

// TestRedisCounterClockStepBack: counters written "in the future", as after
// Redis TIME stepped back (simulated by moving every stored counter of a
// bucket 5 or 11 counters ahead; 11 puts it in the field of the current
// counter, which the next admission overwrites), still count: the bucket
// admits only what is left of its limit, and quota status counts them as
// used. Were they ignored (or dropped by the overwrite), the bucket would
// admit its whole limit again.
func TestRedisCounterClockStepBack(t *testing.T) {
	srv := redistest.Start(t)
	b := newTestRedis(t, srv)
	ctx := context.Background()
	// 11 counters of 100 s: the test ends long before the clock reaches a
	// moved counter or leaves the current one.
	bk := Bucket{Name: "c", Limit: 5, Window: 1000 * time.Second, Algorithm: AlgorithmCounter, Slots: 11}
	for _, step := range []int64{5, 11} {
		cred := fmt.Sprintf("counter-step-%d", step)
		for i := 0; i < 3; i++ {
			if d := mustReserve(t, b, cred, charge(bk, 1)); !d.Allowed {
				t.Fatalf("step %d: call %d denied: %+v", step, i+1, d)
			}
		}
		key := b.counterKey(cred, bk.Name)
		fields, err := b.Client().HGetAll(ctx, key).Result()
		if err != nil || len(fields) == 0 {
			t.Fatalf("counters of %s: %v %v", key, fields, err)
		}
		moved := map[string]any{"g": fields["g"]} // the geometry stays
		for p, v := range fields {
			if p == "g" {
				continue
			}
			j := int64(math.Float64frombits(binary.LittleEndian.Uint64([]byte(v[:8]))))
			units := int64(math.Float64frombits(binary.LittleEndian.Uint64([]byte(v[8:]))))
			moved[strconv.FormatInt((j+step)%int64(bk.Slots), 10)] = redisPack(j+step, units)
		}
		if err := b.Client().Del(ctx, key).Err(); err != nil {
			t.Fatal(err)
		}
		if err := b.Client().HSet(ctx, key, moved).Err(); err != nil {
			t.Fatal(err)
		}
		var got []bool
		for i := 0; i < 3; i++ {
			got = append(got, mustReserve(t, b, cred, charge(bk, 1)).Allowed)
		}
		if fmt.Sprint(got) != "[true true false]" {
			t.Fatalf("step %d: after the step back admitted %v, want [true true false] (3 of 5 units still counted)", step, got)
		}
		st, err := b.Status(ctx, cred, []Bucket{bk}, nil)
		if err != nil || st.Buckets[0].Used != 5 {
			t.Fatalf("step %d: status after the step back: %+v %v, want used 5", step, st.Buckets, err)
		}
	}
}
