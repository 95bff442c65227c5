package quota

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/trendfetch/trendfetch/internal/quota/redistest"
)

// BenchmarkRedis measures decisions against a real local redis-server it
// starts, over one connection, sequentially (DESIGN.md §8, issue 3). Every
// sub-benchmark after Floor reports x_floor: its throughput as a ratio of the
// no-op EVALSHA floor measured in the same process (higher is better; 1.0 =
// as fast as a script that does nothing).
//
//	go test ./internal/quota -run '^$' -bench BenchmarkRedis -benchtime 3s
//
// Targets: Cost1 and Cost100 within 10% of each other and >= 0.8x floor;
// TwoBuckets >= 0.7x; Expired9000 (a decision that finds 9,000 expired
// cost-1 entries) at most 2x the time of Cost1.
func BenchmarkRedis(b *testing.B) {
	srv := redistest.Start(b)
	c, err := RedisClientFromURL(srv.URL(), nil)
	if err != nil {
		b.Fatal(err)
	}
	rb := NewRedis(c)
	b.Cleanup(func() { rb.Close() })
	ctx := context.Background()

	var floorNs float64
	ratio := func(b *testing.B) {
		if floorNs > 0 && b.N > 0 {
			b.ReportMetric(floorNs/(float64(b.Elapsed().Nanoseconds())/float64(b.N)), "x_floor")
		}
	}
	reserve := func(b *testing.B, cred string, cs []BucketCharge) {
		for i := 0; i < b.N; i++ {
			d, err := rb.Reserve(ctx, cred, cs)
			if err != nil || !d.Allowed {
				b.Fatalf("Reserve: %+v, %v", d, err)
			}
		}
	}
	big := Bucket{Name: "units", Limit: 1 << 50, Window: time.Hour}
	search := Bucket{Name: "search", Limit: 1 << 50, Window: 24 * time.Hour}

	b.Run("Floor", func(b *testing.B) {
		noop := redis.NewScript(`return 1`)
		keys := []string{rb.bucketKey("bench-floor", "units")}
		if err := noop.Load(ctx, c).Err(); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := noop.Run(ctx, c, keys).Err(); err != nil {
				b.Fatal(err)
			}
		}
		floorNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run("Cost1", func(b *testing.B) {
		cred := fmt.Sprintf("bench-c1-%d", b.N)
		reserve(b, cred, charge(big, 1))
		ratio(b)
	})
	b.Run("Cost100", func(b *testing.B) {
		cred := fmt.Sprintf("bench-c100-%d", b.N)
		reserve(b, cred, charge(big, 100))
		ratio(b)
	})
	b.Run("TwoBuckets", func(b *testing.B) {
		cred := fmt.Sprintf("bench-two-%d", b.N)
		reserve(b, cred, charge(big, 100, search, int64(1)))
		ratio(b)
	})
	b.Run("Denied", func(b *testing.B) {
		small := Bucket{Name: "units", Limit: 9500, Window: time.Hour}
		cred := fmt.Sprintf("bench-denied-%d", b.N)
		for range 95 {
			if _, err := rb.Reserve(ctx, cred, charge(small, 100)); err != nil {
				b.Fatal(err)
			}
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			d, err := rb.Reserve(ctx, cred, charge(small, 100))
			if err != nil || d.Allowed {
				b.Fatalf("Reserve: %+v, %v", d, err)
			}
		}
		ratio(b)
	})
	b.Run("Expired9000", func(b *testing.B) {
		// 9,000 cost-1 entries that left a 1 ms window (and, with "midnight"
		// moved after them, also count for nothing today: every decision may
		// evict), written in the backend's own layout before each timed
		// decision.
		tiny := Bucket{Name: "units", Limit: 1 << 50, Window: time.Millisecond}
		orig := rb.midnights
		defer func() { rb.midnights = orig }()
		cred := fmt.Sprintf("bench-expired-%d", b.N)
		key := rb.bucketKey(cred, "units")
		// Server-side fill: DEL, then 9,000 entries "<cum>:1" scored 1 µs apart.
		fill := redis.NewScript(`
redis.call('DEL', KEYS[1])
local base, args = tonumber(ARGV[1]), {}
for j = 1, 9000 do
  args[#args + 1] = string.format('%d', base + j)
  args[#args + 1] = string.format('%016d:1', j)
  if #args >= 1000 then redis.call('ZADD', KEYS[1], unpack(args)); args = {} end
end
return redis.call('ZCARD', KEYS[1])`)
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			mid := time.Now().Add(-time.Millisecond).UnixMicro()
			rb.midnights = func(time.Time) []int64 { return []int64{mid - 86_400_000_000, mid, mid + 86_400_000_000} }
			if n, err := fill.Run(ctx, c, []string{key}, time.Now().Add(-time.Second).UnixMicro()).Int64(); err != nil || n != 9000 {
				b.Fatalf("fill: %d, %v", n, err)
			}
			b.StartTimer()
			d, err := rb.Reserve(ctx, cred, charge(tiny, 1))
			if err != nil || !d.Allowed || d.Remaining["units"] != tiny.Limit-1 {
				b.Fatalf("Reserve: %+v, %v", d, err)
			}
		}
		b.StopTimer()
		if n := c.ZCard(ctx, key).Val(); n != 9000-64+1 {
			b.Fatalf("ZCARD after one decision = %d, want %d (bounded eviction)", n, 9000-64+1)
		}
		ratio(b)
	})
}
