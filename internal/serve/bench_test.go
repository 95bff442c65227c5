package serve

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/store"
)

// benchVideos is the store size of the search benchmarks (DESIGN.md §8's
// target: 200k videos).
const benchVideos = 200_000

var (
	benchOnce sync.Once
	benchDB   string
)

// benchStore is filledStore plus 200k synthetic videos inserted in bulk SQL
// (the FTS triggers index them), built once per process in a temp dir.
func benchStore(b *testing.B) string {
	benchOnce.Do(func() {
		db, _ := filledStore(&onceTB{TB: b, dir: mustTemp(b)})
		st, err := store.Open(context.Background(), db)
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		words := []string{"music", "official", "video", "live", "trailer", "game", "review", "news", "highlights", "remix", "cover", "funny", "cat", "tutorial", "vlog", "top", "best", "new", "episode", "full"}
		var sb strings.Builder
		sb.WriteString("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < " + strconv.Itoa(benchVideos) + ") ")
		sb.WriteString("INSERT INTO videos (id, title, description, channel_id, channel_title, tags, first_seen_at) SELECT 'bench-' || i, ")
		title := func(k int) string {
			return "(CASE i % 20 " + caseList(words, k) + " END)"
		}
		sb.WriteString(title(1) + " || ' ' || " + title(7) + " || ' ' || " + title(13) + " || ' #' || i, ")
		sb.WriteString("'description of bench video ' || i || ' about ' || " + title(3) + ", 'UCbench' || (i % 5000), 'Bench Channel ' || (i % 5000), " + title(11) + ", '2026-01-01T00:00:00.000000Z' FROM n")
		if _, err := st.DB().Exec(sb.String()); err != nil {
			b.Fatal(err)
		}
		benchDB = db
	})
	if benchDB == "" {
		b.Fatal("bench store not built")
	}
	return benchDB
}

func caseList(words []string, shift int) string {
	var sb strings.Builder
	for i := range words {
		sb.WriteString(" WHEN " + strconv.Itoa(i) + " THEN '" + words[(i*shift)%len(words)] + "'")
	}
	return sb.String()
}

func mustTemp(b *testing.B) string {
	d, err := os.MkdirTemp("", "serve-bench")
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// benchServer serves the bench store; limited adds the 60/min memory limiter
// with a limit too high to deny.
func benchServer(b *testing.B, limited bool) string {
	db := benchStore(b)
	st, err := store.OpenReadOnly(context.Background(), db)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	o := Options{Store: st, Log: zerolog.Nop()}
	if limited {
		rl, err := NewRateLimiter(quota.NewMemory(), 1<<40, time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		o.RateLimit = RateLimit{Limiter: rl, Limit: 1 << 40, Window: time.Minute, Key: "ip"}
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

// sequential measures one client: p50 and p99 latency per request.
func sequential(b *testing.B, url string) {
	fetchOK(b, url) // warm
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		fetchOK(b, url)
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50_µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99_µs")
}

// parallel32 measures 32 concurrent clients: requests per second and the
// process's peak RSS.
func parallel32(b *testing.B, url string) {
	fetchOK(b, url)
	b.SetParallelism(max(1, 32/runtimeProcs()))
	t0 := time.Now()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			fetchOK(b, url)
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "req/s")
	b.ReportMetric(peakRSSMB(), "peak_rss_MB")
}

func BenchmarkSearchOneClient(b *testing.B) {
	sequential(b, benchServer(b, true)+"/v1/search?q=music+video&limit=20")
}

func BenchmarkSearch32Clients(b *testing.B) {
	parallel32(b, benchServer(b, true)+"/v1/search?q=music+video&limit=20")
}

func BenchmarkChartsUSOneClient(b *testing.B) {
	sequential(b, benchServer(b, true)+"/v1/charts/US")
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

// BenchmarkRateLimitDecision is the memory limiter's decision alone, for a
// client at 60 requests a minute.
func BenchmarkRateLimitDecision(b *testing.B) {
	rl, err := NewRateLimiter(quota.NewMemory(), 60, time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		rl.Reserve(ctx, "serve-ip-10.0."+strconv.Itoa(i%250)+".1", RateMethod)
	}
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }

// peakRSSMB reads VmHWM from /proc/self/status (0 where unavailable).
func peakRSSMB() float64 {
	raw, err := os.ReadFile(filepath.Join("/proc", "self", "status"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.Atoi(f[1])
			return float64(kb) / 1024
		}
	}
	return 0
}
