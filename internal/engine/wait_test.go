package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/config"
	"github.com/trendfetch/trendfetch/internal/quota"
	"github.com/trendfetch/trendfetch/internal/store"
)

// TestWaitsForTheHolderOfTheSlot: a run that finds its region's lease held by another host's
// run of the same slot waits for it, then fetches nothing when that run captured the slot, or
// runs the region itself when it failed; a lease no run of another host explains is exit 3
// after the grace, and a live run of an earlier slot holding the lease exit 3 at once (issue 39 item 4).
// The same with the quota backend down (Redis at a closed port) and PostgreSQL up: the holder holds the
// region's claim in PostgreSQL.
func TestWaitsForTheHolderOfTheSlot(t *testing.T) {
	defer func(p, g time.Duration) { holderPoll, holderGrace = p, g }(holderPoll, holderGrace)
	holderPoll, holderGrace = 50*time.Millisecond, 300*time.Millisecond
	t.Run("lease", func(t *testing.T) { testWaits(t, nil) })
	t.Run("claim", func(t *testing.T) {
		url := pg.Database(t)
		testWaits(t, func(e *Engine) {
			e.cfg.Database, e.cfg.Quota.Backend, e.cfg.Quota.Redis.URL = url, "redis", "redis://127.0.0.1:1/0"
		})
	})
}

// testWaits is TestWaitsForTheHolderOfTheSlot with the engine's settings changed by set (nil: the
// default SQLite store and quota backend); with the quota backend down, holders hold the store's claim.
func testWaits(t *testing.T, set func(*Engine)) {
	ctx := context.Background()
	e, emu, logs := newTestEngine(t, store.PolicyKeep, "US")
	if set != nil {
		set(e)
	}
	e.cfg.Schedule.Every, e.cfg.Schedule.Timezone = config.Duration(24*time.Hour), "UTC"
	e.cfg.Runs.Timeout = config.Duration(10 * time.Second)
	r, err := e.OpenRunner(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	lease := func() (release func()) {
		t.Helper()
		if set != nil {
			release, err := r.store.ClaimRegion(ctx, e.cfg.Credential, "US")
			if err != nil {
				t.Fatal(err)
			}
			return release
		}
		l, err := r.limiter.AcquireLease(ctx, e.cfg.Credential, "US", time.Minute, "host-b pid 7 since 2026-12-02T00:00:00Z")
		if err != nil {
			t.Fatal(err)
		}
		return func() { l.Release(ctx) }
	}
	holder := func(started time.Time, outcome store.Outcome, after time.Duration) {
		t.Helper()
		l := lease()
		id, err := r.store.StartRun(ctx, store.Run{Credential: e.cfg.Credential, Region: "US", StartedAt: started, Host: "host-b"})
		if err != nil {
			t.Fatal(err)
		}
		time.AfterFunc(after, func() {
			if err := r.store.FinishRun(ctx, store.Run{ID: id, Outcome: outcome}); err != nil {
				t.Error(err)
			}
			l()
		})
	}
	holder(time.Now(), store.OutcomeFailed, 300*time.Millisecond)
	if err := r.RunRegions(ctx, []string{"US"}); err != nil || emu.Units("engine-test-key") == 0 {
		t.Fatalf("holder failed: %v, %d units spent; want this host's own capture", err, emu.Units("engine-test-key"))
	}
	spent := emu.Units("engine-test-key")
	holder(time.Now(), store.OutcomeSuccess, 300*time.Millisecond)
	if err := r.RunRegions(ctx, []string{"US"}); err != nil || emu.Units("engine-test-key") != spent ||
		!strings.Contains(logs.String(), "captured by host host-b, run ") || !strings.Contains(logs.String(), "waiting for it") {
		t.Fatalf("holder captured the slot: %v, %d units spent; want nil, none more, the capture named\n%s", err, emu.Units("engine-test-key")-spent, logs)
	}
	l := lease() // by hand: no run of host-b recorded
	start := time.Now()
	if err := r.RunRegions(ctx, []string{"US"}); !errors.As(err, new(*quota.LeaseHeldError)) || time.Since(start) > 2*time.Second {
		t.Errorf("a lease no run explains: %v after %s, want the held lease after the grace", err, time.Since(start))
	}
	l()
	holder(time.Now().Add(-25*time.Hour), store.OutcomeFailed, 2*time.Second) // a live run of yesterday's slot
	start = time.Now()
	if err := r.RunRegions(ctx, []string{"US"}); !errors.As(err, new(*quota.LeaseHeldError)) || time.Since(start) > time.Second {
		t.Errorf("a live run of an earlier slot: %v after %s, want the held lease at once", err, time.Since(start))
	}
	time.Sleep(2100 * time.Millisecond) // its AfterFunc ends before the store closes
}
