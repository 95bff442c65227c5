package quota

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/trendfetch/trendfetch/internal/quota/redistest"
)

// seedScript is the seed article's sliding-window log as the article
// describes it (a design a user would otherwise pick): read the server
// clock, drop entries older than the window, count, and if the count plus
// the cost fits, add one member per unit and refresh the key's TTL.
//
//	KEYS[1]  the log (sorted set)
//	ARGV     window_us, limit, cost, unique member prefix
//	reply    1 admitted, 0 denied
var seedScript = redis.NewScript(`
local window_us, limit, cost, prefix = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], 0, now_us - window_us)
local count = redis.call('ZCARD', KEYS[1])
if count + cost > limit then return 0 end
for i = 1, cost do
  redis.call('ZADD', KEYS[1], now_us, prefix .. ':' .. i)
end
redis.call('PEXPIRE', KEYS[1], math.ceil(window_us / 1000))
return 1`)

// noopScript is the round trip: one EVALSHA doing nothing.
var noopScript = redis.NewScript(`return 1`)

// floorScript is the ceiling of trendfetch's design: the three redis.calls
// of its common admission (TIME, HMGET of the marker and the cache, HSET of
// the cache) with no logic around them (issue 22).
//
//	KEYS[1]  a hash
//	reply    1
var floorScript = redis.NewScript(`
local t = redis.call('TIME')
local got = redis.call('HMGET', KEYS[1], 'exhausted', 'units')
redis.call('HSET', KEYS[1], 'units', t[1] .. t[2])
return 1`)

// BenchmarkHeadToHead compares trendfetch's Redis limiter with the designs
// a user would otherwise pick, in the same process and run, over one
// connection to a local redis-server (issue 13): every iteration runs each
// decision once, in a random order, so that machine drift hits all alike.
// Every decision is admitted (limits 2^30). Reported, as p50 latencies in
// µs: noop (EVALSHA of `return 1`), floor (floorScript), seed1/seed100 (the
// seed article's script, cost 100 = 100 ZADDs, a fresh key every 50 calls),
// gcra1/gcra100 (go-redis/redis_rate), tf1/tf100 (trendfetch, one bucket), tf2b
// (trendfetch, cost 100 + 1 in two buckets), tfscript (the reserve script
// of tf1 with prebuilt KEYS and ARGV: tf1 - tfscript is Reserve's Go code);
// and the ratios the targets are stated in (>= 1 means trendfetch is at
// least as fast):
//
//	tf1_vs_seed1      seed1 / tf1      target >= 1.0
//	tf100_vs_gcra100  gcra100 / tf100  target >= 1.0
//	tf2b_vs_seed1     seed1 / tf2b     target >= 0.9
//	floor_vs_seed1    seed1 / floor    what no admission logic can beat
//
// A second pass with SLOWLOG recording every command reports the
// server-side p50 of each script (srv_*_µs, whole µs: SLOWLOG's unit).
//
//	go test ./internal/quota -run '^$' -bench HeadToHead -benchtime 6000x
func BenchmarkHeadToHead(b *testing.B) {
	srv := redistest.Start(b)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 1, MinIdleConns: 1})
	rb := NewRedis(c, 0, 0).(*redisBackend)
	b.Cleanup(func() { rb.Close() })
	ctx := context.Background()
	gcra := redis_rate.NewLimiter(c)
	gcraLimit := redis_rate.Limit{Rate: 1 << 30, Burst: 1 << 30, Period: time.Second}
	for _, s := range []*redis.Script{seedScript, noopScript, floorScript} {
		if err := s.Load(ctx, c).Err(); err != nil {
			b.Fatal(err)
		}
	}
	big := Bucket{Name: "units", Limit: 1 << 30, Window: time.Hour}
	search := Bucket{Name: "search", Limit: 1 << 30, Window: 24 * time.Hour}
	window := time.Hour.Microseconds()
	scriptCall := rb.reserveCall("bench-h2h-script", "", charge(big, 1))

	seq := 0
	seedKey := func(cost int) []string {
		// cost 100: a fresh key every 50 calls, as the issue measured.
		k := "seed:" + fmt.Sprint(cost)
		if cost > 1 {
			k += ":" + fmt.Sprint(seq/50)
		}
		return []string{k}
	}
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	// reserve runs trendfetch's Reserve.
	reserve := func(name, cred string, ch []bucketCharge) func() {
		return func() {
			if d, err := rb.Reserve(ctx, cred, "", ch); err != nil || !d.Allowed {
				b.Fatalf("%s: %+v %v", name, d, err)
			}
		}
	}
	decisions := []struct {
		name string
		run  func()
	}{
		{"noop", func() { must(noopScript.Run(ctx, c, []string{"noop"}).Err()) }},
		{"floor", func() { must(floorScript.Run(ctx, c, []string{"floor"}).Err()) }},
		{"seed1", func() {
			n, err := seedScript.Run(ctx, c, seedKey(1), window, 1<<30, 1, fmt.Sprint("m", seq)).Int()
			if err != nil || n != 1 {
				b.Fatalf("seed1: %d %v", n, err)
			}
		}},
		{"seed100", func() {
			n, err := seedScript.Run(ctx, c, seedKey(100), window, 1<<30, 100, fmt.Sprint("m", seq)).Int()
			if err != nil || n != 1 {
				b.Fatalf("seed100: %d %v", n, err)
			}
		}},
		{"gcra1", func() {
			r, err := gcra.AllowN(ctx, "gcra1", gcraLimit, 1)
			if err != nil || r.Allowed != 1 {
				b.Fatalf("gcra1: %+v %v", r, err)
			}
		}},
		{"gcra100", func() {
			r, err := gcra.AllowN(ctx, "gcra100", gcraLimit, 100)
			if err != nil || r.Allowed != 100 {
				b.Fatalf("gcra100: %+v %v", r, err)
			}
		}},
		{"tfscript", func() {
			if r, err := redisReserveScript.run(ctx, c, scriptCall).Text(); err != nil || redisUnpacked(r)[0] != 1 {
				b.Fatalf("tfscript: %v %v", r, err)
			}
		}},
		{"tf1", reserve("tf1", "bench-h2h-1", charge(big, 1))},
		{"tf100", reserve("tf100", "bench-h2h-100", charge(big, 100))},
		{"tf2b", reserve("tf2b", "bench-h2h-2b", charge(big, 100, search, int64(1)))},
	}
	// Warm every path (script caches, connection).
	for _, d := range decisions {
		d.run()
	}
	lat := make([][]time.Duration, len(decisions))
	order := make([]int, len(decisions))
	for i := range order {
		order[i] = i
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		seq = i
		rand.Shuffle(len(order), func(x, y int) { order[x], order[y] = order[y], order[x] })
		for _, k := range order {
			t0 := time.Now()
			decisions[k].run()
			lat[k] = append(lat[k], time.Since(t0))
		}
	}
	b.StopTimer()
	p50 := map[string]float64{}
	for k, d := range decisions {
		slices.Sort(lat[k])
		p50[d.name] = float64(lat[k][len(lat[k])/2].Nanoseconds()) / 1000
		b.ReportMetric(p50[d.name], d.name+"_p50_µs")
	}
	b.ReportMetric(p50["seed1"]/p50["tf1"], "tf1_vs_seed1")
	b.ReportMetric(p50["gcra100"]/p50["tf100"], "tf100_vs_gcra100")
	b.ReportMetric(p50["seed1"]/p50["tf2b"], "tf2b_vs_seed1")
	b.ReportMetric(p50["tf1"]-p50["tfscript"], "go1_µs")
	b.ReportMetric(p50["seed1"]/p50["floor"], "floor_vs_seed1")

	// Server time: SLOWLOG records every command for a pass of 1,000
	// iterations; EVALSHA entries are told apart by their first key.
	must(c.ConfigSet(ctx, "slowlog-max-len", "100000").Err())
	must(c.ConfigSet(ctx, "slowlog-log-slower-than", "0").Err())
	must(c.Do(ctx, "SLOWLOG", "RESET").Err())
	byKey := map[string]string{
		"noop": "noop", "seed:1": "seed1", "rate:gcra1": "gcra1",
		rb.stateKey("bench-h2h-1"): "tf1", rb.stateKey("bench-h2h-2b"): "tf2b",
	}
	measured := []string{"noop", "seed1", "gcra1", "tf1", "tf2b"}
	const serverPass = 1000
	for i := 0; i < serverPass; i++ {
		seq = b.N + i
		for _, k := range order {
			if slices.Contains(measured, decisions[k].name) {
				decisions[k].run()
			}
		}
	}
	logs, err := c.SlowLogGet(ctx, -1).Result()
	must(err)
	must(c.ConfigSet(ctx, "slowlog-log-slower-than", "10000").Err())
	server := map[string][]time.Duration{}
	for _, l := range logs {
		if len(l.Args) > 3 && strings.EqualFold(l.Args[0], "evalsha") {
			if name, ok := byKey[l.Args[3]]; ok {
				server[name] = append(server[name], l.Duration)
			}
		}
	}
	for _, name := range measured {
		ds := server[name]
		if len(ds) == 0 {
			b.Fatalf("SLOWLOG has no entries of %s", name)
		}
		slices.Sort(ds)
		b.ReportMetric(float64(ds[len(ds)/2].Nanoseconds())/1000, "srv_"+name+"_µs")
	}
}
