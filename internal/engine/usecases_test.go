package engine

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/exitcode"
	"github.com/trendfetch/trendfetch/internal/fetch"
	"github.com/trendfetch/trendfetch/internal/fetch/youtubetest"
	"github.com/trendfetch/trendfetch/internal/store"
)

// TestChargeCheck: `quota charge` and `quota check` in-process on a real quota database: calls
// that fit are admitted and counted; Check then answers from the same buckets (fits, or not now
// and when, or never when the calls exceed a bucket's limit), reserving nothing.
func TestChargeCheck(t *testing.T) {
	ctx := context.Background()
	e, _, _ := newTestEngine(t, store.PolicyKeep, "US")
	e.cfg.Quota.Buckets[0].Limit = 100 // units (search.list costs 100)
	n, err := e.Charge(ctx, "videos.list", 98)
	if err != nil || n != 98 {
		t.Fatalf("Charge 98: %d, %v", n, err)
	}
	check := func(count int64) CheckResult {
		t.Helper()
		res, err := e.Check(ctx, "videos.list", count)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := check(2); !res.Fits || res.FitsAt != nil || len(res.Buckets) == 0 || res.Buckets[0].Remaining != 2 {
		t.Errorf("Check 2 after 98 of 100: %+v, want fits now with 2 remaining", res)
	}
	res := check(3)
	if res.Fits || res.FitsAt == nil || res.FitsBy == nil || !res.FitsAt.After(time.Now()) || res.FitsBy.Before(*res.FitsAt) {
		t.Errorf("Check 3 after 98 of 100: %+v, want not now, with a later fits_at <= fits_by", res)
	}
	if res := check(101); res.Fits || res.FitsAt != nil {
		t.Errorf("Check 101 of a limit of 100: %+v, want never (fits false, fits_at null)", res)
	}
	if res := check(2); !res.Fits {
		t.Errorf("Check reserved units: %+v", res)
	}
	n, err = e.Charge(ctx, "videos.list", 5)
	var stop *fetch.StopError
	if n != 2 || !errors.As(err, &stop) || exitcode.Of(ctx, err) != exitcode.TempFail {
		t.Errorf("Charge 5 with 2 left: %d, %v; want 2 charged, then a denial (exit 75)", n, err)
	}
}

// TestLeaseListRelease: a lease a run holds is listed (Leases) and, asked without confirm, left
// alone; released with confirm, the region runs again; a region without a lease is none.
func TestLeaseListRelease(t *testing.T) {
	ctx := context.Background()
	e, _, _ := newTestEngine(t, store.PolicyKeep, "US")
	lim, err := e.OpenLimiter(false)
	if err != nil {
		t.Fatal(err)
	}
	defer lim.Close()
	held, err := lim.AcquireLease(ctx, e.cfg.Credential, "US", time.Minute, "host-b pid 7")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release(context.WithoutCancel(ctx))
	ls, err := e.Leases(ctx)
	if err != nil || len(ls) != 1 || ls[0].Region != "US" || ls[0].Holder != "host-b pid 7" {
		t.Fatalf("Leases: %+v, %v; want US held by host-b pid 7", ls, err)
	}
	if l, ok, err := e.ReleaseLease(ctx, "US", false); err != nil || !ok || l.Holder != "host-b pid 7" {
		t.Errorf("ReleaseLease unconfirmed: %+v %v %v", l, ok, err)
	}
	if _, err := lim.AcquireLease(ctx, e.cfg.Credential, "US", time.Minute, "me"); err == nil {
		t.Fatal("an unconfirmed release freed the lease")
	}
	if _, ok, err := e.ReleaseLease(ctx, "US", true); err != nil || !ok {
		t.Fatalf("ReleaseLease confirmed: %v %v", ok, err)
	}
	again, err := lim.AcquireLease(ctx, e.cfg.Credential, "US", time.Minute, "me")
	if err != nil {
		t.Fatalf("after the release: %v", err)
	}
	defer again.Release(context.WithoutCancel(ctx))
	if _, ok, err := e.ReleaseLease(ctx, "GB", true); ok || err != nil {
		t.Errorf("ReleaseLease of a region without a lease: %v %v, want none", ok, err)
	}
}

// TestPruneUseCase: Prune in-process on a real SQLite file after a run: a dry run counts and
// deletes nothing, --older-than deletes the capture older than the cut-off; the policy in force
// (youtube, 30 days) judged at a date keeps what is younger.
func TestPruneUseCase(t *testing.T) {
	ctx := context.Background()
	e, _, logs := newTestEngine(t, store.PolicyYouTube, "US")
	r := openRunner(t, e)
	if err := r.RunRegions(ctx, []string{"US"}); err != nil {
		t.Fatalf("run: %v\n%s", err, logs)
	}
	kept, err := e.Prune(ctx, PruneRequest{AsOf: time.Now().Add(24 * time.Hour)})
	if err != nil || kept.Policy != store.PolicyYouTube || kept.Report.Captures != 0 {
		t.Errorf("policy a day later: %+v, %v; want youtube, nothing removed", kept, err)
	}
	dry, err := e.Prune(ctx, PruneRequest{AsOf: time.Now().Add(time.Hour), OlderThan: time.Minute, DryRun: true})
	if err != nil || dry.Report.Captures != 1 || dry.Before.IsZero() {
		t.Fatalf("dry run: %+v, %v; want 1 capture counted", dry, err)
	}
	done, err := e.Prune(ctx, PruneRequest{AsOf: time.Now().Add(time.Hour), OlderThan: time.Minute})
	if err != nil || done.Report != dry.Report {
		t.Fatalf("prune: %+v, %v; want what the dry run counted, %+v", done, err, dry.Report)
	}
	if again, err := e.Prune(ctx, PruneRequest{AsOf: time.Now().Add(time.Hour), OlderThan: time.Minute, DryRun: true}); err != nil || again.Report.Captures != 0 {
		t.Errorf("after prune: %+v, %v; want nothing left to remove", again, err)
	}
}

// TestCopyFrom: copy refuses a SQLite destination, a PostgreSQL source and a path without a
// database (each a *SettingError naming the setting, exit 2); a SQLite dataset with a run is
// copied into PostgreSQL (not under -short).
func TestCopyFrom(t *testing.T) {
	ctx := context.Background()
	e, _, logs := newTestEngine(t, store.PolicyKeep, "US")
	if err := openRunner(t, e).RunRegions(ctx, []string{"US"}); err != nil {
		t.Fatalf("run: %v\n%s", err, logs)
	}
	src := e.cfg.Database
	for _, c := range []struct{ database, from, setting string }{
		{src, src, "database"},
		{"postgres://u@127.0.0.1:1/x", "postgres://u:secret@h/x", "--from"},
		{"postgres://u@127.0.0.1:1/x", filepath.Join(t.TempDir(), "none.db"), "--from "},
	} {
		e.cfg.Database = c.database
		_, err := e.CopyFrom(ctx, c.from)
		var se *SettingError
		if !errors.As(err, &se) || !strings.HasPrefix(se.Setting, c.setting) || exitcode.Of(ctx, err) != exitcode.Usage || strings.Contains(err.Error(), "secret") {
			t.Errorf("CopyFrom(%q) into %q: %v, want a *SettingError of %s (exit 2), no password", c.from, c.database, err, c.setting)
		}
	}
	e.cfg.Database = pg.Database(t)
	copied, err := e.CopyFrom(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]int64{}
	for _, c := range copied {
		rows[c.Table] = c.Rows
	}
	if rows["runs"] != 1 || rows["videos"] != youtubetest.SampleSize {
		t.Errorf("copied %v, want 1 run and %d videos", rows, youtubetest.SampleSize)
	}
}
