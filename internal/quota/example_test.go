package quota_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/trendfetch/trendfetch/internal/quota"
)

// The default buckets of docs/design.md §4 on the embedded backend, with a fixed
// clock so that the output is stable.
func Example() {
	dir, err := os.MkdirTemp("", "quota-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)

	now := time.Date(2026, 6, 2, 9, 0, 0, 0, time.UTC) // 02:00 in Los Angeles
	backend, err := quota.NewSQLite(filepath.Join(dir, "quota.db"), false)
	if err != nil {
		panic(err)
	}
	quota.WithClock(backend, func() time.Time { return now })
	limiter, err := quota.New(backend,
		[]quota.Bucket{
			{Name: "units", Limit: 9500, Window: 24 * time.Hour},
			{Name: "search", Limit: 2, Window: 24 * time.Hour},
		},
		quota.Costs{
			"search.list": {{Bucket: "units", Units: 100}, {Bucket: "search", Units: 1}},
			"videos.list": {{Bucket: "units", Units: 1}},
		})
	if err != nil {
		panic(err)
	}
	defer limiter.Close()

	ctx := context.Background()
	for _, method := range []string{"videos.list", "search.list", "search.list", "search.list"} {
		d, err := limiter.Reserve(ctx, "my-project", method)
		if err != nil {
			panic(err)
		}
		if d.Allowed {
			fmt.Printf("%s: allowed, units left %d\n", method, d.Remaining["units"])
		} else {
			fmt.Printf("%s: denied by %q, retry after %v\n", method, d.DeniedBucket, d.RetryAfter)
		}
	}

	st := limiter.Status(ctx, "my-project")
	for _, b := range st.Buckets {
		fmt.Printf("%s: used %d of %d in %d calls, today %d\n", b.Name, b.Used, b.Limit, b.Entries, b.UsedToday)
	}
	// Output:
	// videos.list: allowed, units left 9499
	// search.list: allowed, units left 9399
	// search.list: allowed, units left 9299
	// search.list: denied by "search", retry after 24h0m0s
	// units: used 201 of 9500 in 3 calls, today 201
	// search: used 2 of 2 in 2 calls, today 2
}

// A cost larger than its bucket's limit is a configuration error, reported
// before any call is made.
func ExampleCostError() {
	_, err := quota.New(nil,
		[]quota.Bucket{{Name: "search", Limit: 95, Window: 24 * time.Hour}},
		quota.Costs{"search.list": {{Bucket: "search", Units: 100}}})
	fmt.Println(err)
	// Output:
	// quota: search.list costs 100 units in bucket "search" but its limit is 95: it can never be admitted
}

// The Google quota day is 23 hours long when DST starts.
func ExampleNextPacificMidnight() {
	t := time.Date(2026, 3, 8, 7, 30, 0, 0, time.UTC) // 23:30 PST, March 7
	start := quota.NextPacificMidnight(t)
	end := quota.NextPacificMidnight(start)
	fmt.Println(start.UTC(), end.UTC(), end.Sub(start))
	// Output:
	// 2026-03-08 08:00:00 +0000 UTC 2026-03-09 07:00:00 +0000 UTC 23h0m0s
}
