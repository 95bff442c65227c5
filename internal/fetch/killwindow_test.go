package fetch_test

import (
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/callsite"
	"github.com/trendfetch/trendfetch/internal/fetch"
	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/quota/redistest"
	"github.com/trendfetch/trendfetch/internal/redisconn"
	"github.com/trendfetch/trendfetch/internal/store"
)

// replyGate is a TCP proxy to target that calls before(), under a lock,
// ahead of passing on each chunk of a reply: the client is then still
// waiting for its answer while the server has already acted on the command,
// the state a SIGKILL landing right after the server's write would leave.
func replyGate(t *testing.T, target string, before func()) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			go func() { io.Copy(s, c); s.Close() }()
			go func() {
				defer c.Close()
				buf := make([]byte, 64<<10)
				for {
					n, err := s.Read(buf)
					if n > 0 {
						mu.Lock()
						before()
						mu.Unlock()
						if _, werr := c.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// TestKilledRunNeverShowsFewerUnitsThanTheLimiter (issue 31 item 10): at
// every moment a kill could land, right after each answer of the quota
// backend (a real redis-server behind replyGate) and before the run goes
// on, the run record shows at least the units the limiter holds for the
// run, and at most one call's cost (1 unit) more; after a denial the record
// matches the limiter again.
func TestKilledRunNeverShowsFewerUnitsThanTheLimiter(t *testing.T) {
	srv := redistest.Start(t)
	direct, err := redisconn.New(srv.URL(), nil, redisconn.Sentinel{})
	if err != nil {
		t.Fatal(err)
	}
	// 3 units: US's two pages are admitted, then GB's first page; its
	// second is denied.
	buckets := []quota.Bucket{{Name: "units", Limit: 3, Window: time.Hour}}
	view, err := quota.New(quota.NewRedis(direct, 0, 0), buckets, quota.Costs{callsite.VideosList: {{Bucket: "units", Units: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()

	var fp atomic.Pointer[fixture]
	var checks, worst int
	check := func() {
		f := fp.Load()
		if f == nil {
			return
		}
		ctx := context.Background()
		st := view.Status(ctx, "proj-a")
		if !st.Reachable {
			t.Errorf("status: %v", st.Err)
			return
		}
		runs, err := f.store.Runs(ctx, 0)
		if err != nil {
			t.Error(err)
			return
		}
		var recorded int64
		for _, r := range runs {
			recorded += r.Units["units"]
		}
		held := st.Buckets[0].Used
		checks++
		if recorded < held || recorded > held+1 {
			worst++
			t.Errorf("a kill now would leave the runs showing %d units while the limiter holds %d (want %d or %d)", recorded, held, held, held+1)
		}
	}
	gate := replyGate(t, srv.Addr, check)
	c, err := redisconn.New("redis://"+gate+"/0", nil, redisconn.Sentinel{})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, quota.NewRedis(c, 0, 0), buckets, nil)
	f.emu.SetChart("GB", youtubetest.Sample())
	fp.Store(f)
	ctx := context.Background()
	if run, err := f.runner.Run(ctx, "US", fetch.Lease{}); err != nil || run.Units["units"] != 2 {
		t.Fatalf("US: %+v %v, want success with 2 units", run, err)
	}
	run, err := f.runner.Run(ctx, "GB", fetch.Lease{})
	if run.Outcome != store.OutcomeDenied {
		t.Fatalf("GB: %+v %v, want denied", run, err)
	}
	check()
	if used := view.Status(ctx, "proj-a").Buckets[0].Used; run.Units["units"] != used-2 {
		t.Errorf("the denied run records %d units, the limiter holds %d for it", run.Units["units"], used-2)
	}
	if checks < 5 {
		t.Errorf("only %d backend answers checked", checks)
	}
	t.Logf("%d backend answers checked, %d left the record short or over", checks, worst)
}
