package serve

import (
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/trendfetch/trendfetch/internal/pgtest"
	"github.com/trendfetch/trendfetch/internal/quota/redistest"
	"github.com/trendfetch/trendfetch/internal/redisconn"
	"github.com/trendfetch/trendfetch/internal/store"
	"github.com/trendfetch/trendfetch/internal/store/storetest"
)

// benchVideos is the store size of the search benchmarks (docs/design.md §9's
// target: 200k videos).
const benchVideos = 200_000

var (
	benchOnce sync.Once
	benchDB   string
)

// benchStore is filledStore plus 200k synthetic videos whose text is drawn
// from the store benchmarks' Zipf vocabulary (storetest: title ~60 bytes,
// 10 tags, description ~500 bytes), inserted in one transaction (the FTS
// triggers index them) and optimized as a long-lived database would be;
// built once per process in a temp dir.
func benchStore(b *testing.B) string {
	benchOnce.Do(func() {
		db, _ := filledStore(&onceTB{TB: b, dir: packageTempDir(b, "serve-bench")})
		st, err := store.Open(context.Background(), db)
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		tx, err := st.DB().Begin()
		if err != nil {
			b.Fatal(err)
		}
		ins, err := tx.Prepare(`INSERT INTO videos (id, title, description, channel_id, channel_title, tags, first_seen_at)
VALUES (?, ?, ?, ?, ?, ?, '2026-01-01T00:00:00.000000Z')`)
		if err != nil {
			b.Fatal(err)
		}
		for i := range benchVideos {
			ch := strconv.Itoa(i % 5000)
			if _, err := ins.Exec("bench-"+strconv.Itoa(i), benchVocab.Text(60), benchVocab.Text(500),
				"UCbench"+ch, "Bench Channel "+ch, strings.Join(benchVocab.Tags(10), "\n")); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		for _, q := range []string{
			`INSERT INTO videos_fts (videos_fts) VALUES ('optimize')`,
			`INSERT INTO videos_tri (videos_tri) VALUES ('optimize')`,
		} {
			if _, err := st.DB().Exec(q); err != nil {
				b.Fatal(err)
			}
		}
		benchDB = db
	})
	if benchDB == "" {
		b.Fatal("bench store not built")
	}
	return benchDB
}

// benchVocab is the store benchmarks' vocabulary (same seed and size).
var benchVocab = storetest.NewVocab(42, 30_000)

// searchURLs are /v1/search URLs of two-word queries of mid-frequency
// words (storetest.TwoWordQueries), used round-robin.
func searchURLs(base string) []string {
	var urls []string
	for _, q := range benchVocab.TwoWordQueries(7, 64) {
		urls = append(urls, base+"/v1/search?limit=20&q="+url.QueryEscape(q))
	}
	return urls
}

// benchServer serves the bench store; limited adds the 60/min memory limiter
// with a limit too high to deny.
func benchServer(b *testing.B, limited bool) string {
	return serveDB(b, benchStore(b), limited)
}

// serveDB is benchServer over the database db (a SQLite path or a
// PostgreSQL URL), opened read-only as serve opens it.
func serveDB(b *testing.B, db string, limited bool) string {
	st, err := store.OpenReadOnly(context.Background(), db)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	o := Options{Store: st, Log: zerolog.Nop()}
	if limited {
		rl := NewCounter(math.MaxInt32, time.Minute, nil)
		o.RateLimit = RateLimit{Limiter: rl, Limit: math.MaxInt32, Window: time.Minute, Key: "ip"}
	}
	ts := httptest.NewServer(Handler(o))
	b.Cleanup(ts.Close)
	return ts.URL
}

var benchClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

func fetchOK(b *testing.B, url string) {
	resp, err := benchClient.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("%s: %d", url, resp.StatusCode)
	}
}

// sequential measures one client requesting urls round-robin: p50 and
// p99 latency per request; it returns the p50 in microseconds.
func sequential(b *testing.B, urls ...string) float64 {
	for _, u := range urls {
		fetchOK(b, u) // warm
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		fetchOK(b, urls[i%len(urls)])
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50_µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99_µs")
	return float64(lat[len(lat)/2].Microseconds())
}

// parallel32 measures 32 concurrent clients requesting urls round-robin:
// requests per second and the process's peak RSS.
func parallel32(b *testing.B, urls ...string) {
	for _, u := range urls {
		fetchOK(b, u)
	}
	b.SetParallelism(max(1, 32/runtimeProcs()))
	var next atomic.Int64
	t0 := time.Now()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			fetchOK(b, urls[int(next.Add(1))%len(urls)])
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "req/s")
	b.ReportMetric(procStatusMB("VmHWM:"), "peak_rss_MB")
	b.ReportMetric(procStatusMB("RssAnon:"), "rss_anon_MB")
}

// BenchmarkSearchOneClient and BenchmarkSearch32Clients: two-word queries
// at 200k videos (see searchURLs); compare req/s of 32 clients with
// 1e6/p50_µs of one.
func BenchmarkSearchOneClient(b *testing.B) {
	sequential(b, searchURLs(benchServer(b, true))...)
}

func BenchmarkSearch32Clients(b *testing.B) {
	parallel32(b, searchURLs(benchServer(b, true))...)
}

// BenchmarkSearchScaling measures what 32 concurrent clients gain over one,
// in the same run: each op is a 300 ms phase of one client then a 300 ms
// phase of 32, alternating, so background load hits both alike. It reports
// both rates, their ratio x32_vs_1 (run with -benchtime 10x or more), and
// the CPU the process used in each (cores_1, cores_32: CPU seconds per
// second, from getrusage): with cores_32 well under GOMAXPROCS the machine,
// not the server, limited the 32 clients.
func BenchmarkSearchScaling(b *testing.B) {
	urls := searchURLs(benchServer(b, true))
	for _, u := range urls {
		fetchOK(b, u)
	}
	const phase = 300 * time.Millisecond
	var next atomic.Int64
	var cpu1, cpu32 time.Duration
	rate := func(clients int) (requests int64, took time.Duration) {
		var n atomic.Int64
		var wg sync.WaitGroup
		c0 := cpuTime()
		defer func() {
			if clients == 1 {
				cpu1 += cpuTime() - c0
			} else {
				cpu32 += cpuTime() - c0
			}
		}()
		t0 := time.Now()
		for range clients {
			wg.Go(func() {
				for time.Since(t0) < phase {
					fetchOK(b, urls[int(next.Add(1))%len(urls)])
					n.Add(1)
				}
			})
		}
		wg.Wait()
		return n.Load(), time.Since(t0)
	}
	var n1, n32 int64
	var d1, d32 time.Duration
	b.ResetTimer()
	for range b.N {
		n, d := rate(1)
		n1, d1 = n1+n, d1+d
		n, d = rate(32)
		n32, d32 = n32+n, d32+d
	}
	b.StopTimer()
	r1, r32 := float64(n1)/d1.Seconds(), float64(n32)/d32.Seconds()
	b.ReportMetric(r1, "req/s_1")
	b.ReportMetric(r32, "req/s_32")
	b.ReportMetric(r32/r1, "x32_vs_1")
	b.ReportMetric(cpu1.Seconds()/d1.Seconds(), "cores_1")
	b.ReportMetric(cpu32.Seconds()/d32.Seconds(), "cores_32")
}

// cpuTime is the user+system CPU time of this process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkChartsUSOneClient(b *testing.B) {
	sequential(b, benchServer(b, true)+"/v1/charts/US")
}

// BenchmarkChartsEngines serves /v1/charts/US to one client from the
// same captures (fillStore) on SQLite and on PostgreSQL, and reports
// under postgres its p50 over SQLite's as x-sqlite (issue 30 item 8:
// PostgreSQL p50 <= 2x SQLite's).
func BenchmarkChartsEngines(b *testing.B) {
	lite, _ := filledStore(b)
	var shared pgtest.Shared
	b.Cleanup(shared.Stop)
	pg := shared.Database(b)
	st, err := store.Open(context.Background(), pg)
	if err != nil {
		b.Fatal(err)
	}
	fillStore(b, st)
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	var p50 float64
	b.Run("sqlite", func(b *testing.B) { p50 = sequential(b, serveDB(b, lite, false)+"/v1/charts/US") })
	b.Run("postgres", func(b *testing.B) {
		if p := sequential(b, serveDB(b, pg, false)+"/v1/charts/US"); p50 > 0 {
			b.ReportMetric(p/p50, "x-sqlite")
		}
	})
}

func BenchmarkChartsUS32Clients(b *testing.B) {
	parallel32(b, benchServer(b, true)+"/v1/charts/US")
}

func BenchmarkHealthz32Clients(b *testing.B) {
	parallel32(b, benchServer(b, true)+"/healthz")
}

// BenchmarkRegionsWithAndWithoutRateLimit compares the same cheap request
// with and without the memory rate limiter: the difference of the p50s is
// what the rate-limit decision adds.
func BenchmarkRegionsWithAndWithoutRateLimit(b *testing.B) {
	for _, limited := range []bool{false, true} {
		b.Run("limited="+strconv.FormatBool(limited), func(b *testing.B) {
			sequential(b, benchServer(b, limited)+"/v1/regions")
		})
	}
}

// BenchmarkRateLimitDecision is the counter's decision alone (in memory and
// in one local redis-server), for 250 clients at 60 requests a minute.
func BenchmarkRateLimitDecision(b *testing.B) {
	counter := NewCounter(60, time.Minute, nil)
	srv := redistest.Start(b)
	rc, err := redisconn.New(srv.URL(), nil, redisconn.Sentinel{})
	if err != nil {
		b.Fatal(err)
	}
	redisCounter := NewRedisCounter(rc, 60, time.Minute)
	defer redisCounter.Close()
	for _, l := range []struct {
		name string
		rl   Limiter
	}{{"counter-memory", counter}, {"counter-redis", redisCounter}} {
		name, rl := l.name, l.rl
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			for i := range b.N {
				rl.Allow(ctx, "serve-ip-10.0."+strconv.Itoa(i%250)+".1")
			}
		})
	}
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }

// procStatusMB reads a kB field of /proc/self/status in MB (0 where
// unavailable): VmHWM is the peak RSS, memory-mapped database pages
// included (see store.ReadOnlyMmapBytes); RssAnon the process's own memory
// now.
func procStatusMB(field string) float64 {
	raw, err := os.ReadFile(filepath.Join("/proc", "self", "status"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field {
			kb, _ := strconv.Atoi(f[1])
			return float64(kb) / 1024
		}
	}
	return 0
}

// BenchmarkOtherClientUnderHeavyLoad (issue 31 item 4): client B's
// /v1/dashboard alone (idle_ms, p50) and while client A sends 4 streams of
// substring-minus-word searches, the trigram fill-up's heaviest form
// (loaded_ms), at 200k videos; ratio is loaded/idle (the target: under 2).
// Requests go to the handler directly, from two addresses. Measured on 2
// cores: 1.00 ms and 0.97 ms (ratio 0.97); with HeavyPerClient raised to
// 64, A's streams hold every heavy slot: 2.6 ms and 204 ms (ratio 80).
func BenchmarkOtherClientUnderHeavyLoad(b *testing.B) {
	st, err := store.OpenReadOnly(context.Background(), benchStore(b))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	h := Handler(Options{Store: st, Log: zerolog.Nop(),
		Regions: func(time.Time) []Region { return []Region{{Region: "US"}, {Region: "GB"}} }})
	serve := func(addr, path string) {
		req := httptest.NewRequest("GET", path, nil)
		req.RemoteAddr, req.Host = addr, "127.0.0.1"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Errorf("%s: %d %.200s", path, rec.Code, rec.Body)
		}
	}
	var heavy []string
	for _, w := range benchVocab.Words[:8] {
		if len(w) > 5 {
			heavy = append(heavy, "/v1/search?q="+url.QueryEscape(w[1:len(w)-1]+" -"+w))
		}
	}
	p50 := func() float64 {
		lat := make([]time.Duration, 0, b.N)
		for range b.N {
			t0 := time.Now()
			serve("192.0.2.2:1", "/v1/dashboard")
			lat = append(lat, time.Since(t0))
		}
		slices.Sort(lat)
		return float64(lat[len(lat)/2].Microseconds()) / 1000
	}
	serve("192.0.2.2:1", "/v1/dashboard") // warm
	b.ResetTimer()
	idle := p50()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := i; ; j++ {
				select {
				case <-stop:
					return
				default:
					serve("192.0.2.1:1", heavy[j%len(heavy)])
				}
			}
		}()
	}
	time.Sleep(100 * time.Millisecond)
	loaded := p50()
	close(stop)
	wg.Wait()
	b.ReportMetric(idle, "idle_ms")
	b.ReportMetric(loaded, "loaded_ms")
	b.ReportMetric(loaded/idle, "ratio")
}
