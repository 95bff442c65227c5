package fetch_test

import (
	"context"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/callsite"
	"github.com/trendfetch/trendfetch/internal/fetch"
	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/redisconn"
	"github.com/trendfetch/trendfetch/internal/store"
)

// silentRedis returns a redis:// URL of a server that accepts connections
// and never answers, with 50 ms timeouts: every call fails with
// quota.ErrUnavailable (a quota backend locked or down past its timeout).
// accepted counts the connections it took.
func silentRedis(t *testing.T) (url string, accepted *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted = &atomic.Int64{}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			mu.Lock()
			conns = append(conns, c) // held open, never answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "redis://" + ln.Addr().String() + "/0?read_timeout=50ms&write_timeout=50ms", accepted
}

// TestLeaselessRunAbandonsNothing (issue 31 item 12): a run that goes ahead
// without the region's lease (the backend unavailable: fail-open) cannot
// tell a live run of the region from a dead one, so it marks no run
// abandoned; only a lease's holder does, by the stale rule.
func TestLeaselessRunAbandonsNothing(t *testing.T) {
	url, _ := silentRedis(t)
	c, err := redisconn.New(url, nil, redisconn.Sentinel{})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, quota.NewRedis(c, 0, 0), nil, func(string) callsite.Policy { return callsite.FailOpen })
	ctx := context.Background()
	host, _ := os.Hostname()
	// Another lease-less run of the region, still running in this process.
	other, err := f.store.StartRun(ctx, store.Run{Credential: "proj-a", Region: "US", StartedAt: time.Now().Add(-time.Second),
		Units: map[string]int64{}, Outcome: store.OutcomeRunning, PID: os.Getpid(), Host: host})
	if err != nil {
		t.Fatal(err)
	}
	run, err := f.runner.Run(ctx, "US", fetch.Lease{Down: quota.ErrUnavailable})
	if err != nil || run.Outcome != store.OutcomeSuccessUnmetered {
		t.Fatalf("lease-less run: err %v, run %+v; want success_unmetered", err, run)
	}
	runs, err := f.store.Runs(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if r.ID == other && r.Outcome != store.OutcomeRunning {
			t.Errorf("the live run %d was marked %s (%s) by a run without the lease", r.ID, r.Outcome, r.Reason)
		}
	}
}
