package fetch_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/callsite"
	"github.com/trendfetch/trendfetch/internal/fetch"
	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/quota/redistest"
	"github.com/trendfetch/trendfetch/internal/redisconn"
	"github.com/trendfetch/trendfetch/internal/store"
)

// TestReserveWhenRedisDies: a run while Redis answers holds the outage reserve (1 unit); with
// Redis killed, a call site of policy reserve spends it and then stops cleanly, saying so; after
// Redis comes back (AOF), the next run records what was spent: the backend counts every call the
// emulator saw.
func TestReserveWhenRedisDies(t *testing.T) {
	srv := redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
	client, err := redisconn.New(srv.URL(), nil, redisconn.Sentinel{})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, quota.NewRedis(client, 0, 0), nil, func(string) callsite.Policy { return callsite.Reserve })
	f.runner.Reserve = quota.NewOutageReserve(filepath.Join(t.TempDir(), "quota-reserve.json"), map[string]int64{"units": 1}, time.Hour)
	ctx := context.Background()
	if _, err := f.runner.Run(ctx, "US", fetch.Lease{}); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	run, err := f.runner.Run(ctx, "US", fetch.Lease{})
	var stop *fetch.StopError
	if !errors.As(err, &stop) || !strings.Contains(stop.Reason, "outage reserve is spent") || run.Outcome != store.OutcomeDenied {
		t.Fatalf("run with Redis down: err %v, outcome %s; want a denial saying the outage reserve is spent", err, run.Outcome)
	}
	if got := f.emu.TotalCalls(); got != 3 || run.Units["units"] != 1 {
		t.Fatalf("emulator saw %d calls, run units %v; want 2 + 1 spent from the reserve", got, run.Units)
	}
	srv.Restart()
	if _, err := f.runner.Run(ctx, "US", fetch.Lease{}); err != nil {
		t.Fatal(err)
	}
	st := f.runner.Limiter.Status(ctx, "proj-a")
	if b := st.Buckets[0]; !st.Reachable || b.Used != int64(f.emu.TotalCalls()) || len(b.Held) != 1 {
		t.Errorf("status after recovery: %+v (err %v); want used = the emulator's %d calls, one reserve held", b, st.Err, f.emu.TotalCalls())
	}
}
