package quota

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/quota/redistest"
	"github.com/trendfetch/trendfetch/internal/redisconn"
)

// BenchmarkRefund measures Refund on a real redis-server and a SQLite file:
//
//	Recent       reserve a cost-1 call, then refund it (the call site's case:
//	             the refund follows its reservation by one failed dial);
//	             reserve-ns and refund-ns are the two mean times, *-p50 their
//	             medians
//
//	go test ./internal/quota -run '^$' -bench 'BenchmarkRefund/.*/Recent' -benchtime 3000x
//	go test ./internal/quota -run '^$' -bench 'BenchmarkRefund/.*/Under9000' -benchtime 3x
func BenchmarkRefund(b *testing.B) {
	ctx := context.Background()
	srv := redistest.Start(b)
	c, err := redisconn.New(srv.URL(), nil, redisconn.Sentinel{})
	if err != nil {
		b.Fatal(err)
	}
	rb := NewRedis(c, 0, 0)
	b.Cleanup(func() { rb.Close() })
	backends := map[string]Backend{"redis": rb, "sqlite": newTestSQLite(b)}
	units := Bucket{Name: "units", Limit: 1 << 40, Window: time.Hour}
	for _, name := range []string{"redis", "sqlite"} {
		be := backends[name]
		b.Run(name+"/Recent", func(b *testing.B) {
			cred := fmt.Sprintf("bench-recent-%d", time.Now().UnixNano())
			b.Cleanup(func() { be.Reset(ctx, cred) })
			res, ref := make([]time.Duration, b.N), make([]time.Duration, b.N)
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				d, err := be.Reserve(ctx, cred, "", charge(units, 1))
				t1 := time.Now()
				if err != nil || !d.Allowed {
					b.Fatalf("Reserve: %+v %v", d, err)
				}
				if _, err := be.Refund(ctx, cred, d.Reservation); err != nil {
					b.Fatal(err)
				}
				res[i], ref[i] = t1.Sub(t0), time.Since(t1)
			}
			report(b, "reserve", res)
			report(b, "refund", ref)
		})
	}
}

// report adds the mean and median of ds as <name>-ns and <name>-p50-ns.
func report(b *testing.B, name string, ds []time.Duration) {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	b.ReportMetric(float64(sum.Nanoseconds())/float64(len(ds)), name+"-ns")
	b.ReportMetric(float64(s[len(s)/2].Nanoseconds()), name+"-p50-ns")
}
