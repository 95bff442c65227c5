package quota

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSQLiteReadOnlyCreatesNothingAndOnlyReads: the read-only backend
// refuses a missing file without creating it, reads the status another
// backend wrote, and cannot admit anything.
func TestSQLiteReadOnlyCreatesNothingAndOnlyReads(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sub")
	path := filepath.Join(dir, "quota.db")
	if _, err := NewSQLite(path, true); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("missing file: err = %v, want ErrUnavailable", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the read-only open created %s", dir)
	}
	buckets := []Bucket{{Name: "units", Limit: 10, Window: time.Hour}}
	costs := Costs{"videos.list": {{Bucket: "units", Units: 3}}}
	rw, err := NewSQLite(path, false)
	if err != nil {
		t.Fatal(err)
	}
	lim, err := New(rw, buckets, costs)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if d, err := lim.Reserve(ctx, "c", "videos.list"); err != nil || !d.Allowed {
		t.Fatalf("reserve: %+v %v", d, err)
	}
	lim.Close()

	ro, err := NewSQLite(path, true)
	if err != nil {
		t.Fatal(err)
	}
	rlim, err := New(ro, buckets, costs)
	if err != nil {
		t.Fatal(err)
	}
	defer rlim.Close()
	st := rlim.Status(ctx, "c")
	if !st.Reachable || len(st.Buckets) != 1 || st.Buckets[0].Used != 3 {
		t.Errorf("status = %+v, want 3 units used", st)
	}
	if _, err := rlim.Reserve(ctx, "c", "videos.list"); err == nil {
		t.Error("a read-only backend admitted a call")
	}
	// Every write is refused the same way (no statement prepared for it is used).
	if err := rlim.MarkExhausted(ctx, "c", Mark{Until: time.Now().Add(time.Hour)}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("MarkExhausted on a read-only backend = %v, want ErrUnavailable", err)
	}
	if err := rlim.Reset(ctx, "c"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Reset on a read-only backend = %v, want ErrUnavailable", err)
	}
	if st := rlim.Status(ctx, "c"); st.Buckets[0].Used != 3 {
		t.Errorf("after refused writes: used %d, want 3", st.Buckets[0].Used)
	}
}

// TestSQLiteReadOnlyBeforeShadowTable: a read-only open of a quota.db no
// writer has migrated to 0003 (no quota_shadow) reads the status, with no
// shadow counts (issue 41 item 3).
func TestSQLiteReadOnlyBeforeShadowTable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "quota.db")
	rw, err := NewSQLite(path, false)
	if err != nil {
		t.Fatal(err)
	}
	tight := Bucket{Name: "tight", Limit: 1, Window: time.Hour, Shadow: true}
	ctx := context.Background()
	for range 2 {
		if d, err := rw.Reserve(ctx, "c", "videos.list", charge(tight, 1)); err != nil || !d.Allowed {
			t.Fatalf("reserve: %+v %v", d, err)
		}
	}
	if st, err := rw.Status(ctx, "c", []Bucket{tight}, nil); err != nil || st.Buckets[0].ShadowDenials["videos.list"] != 1 {
		t.Fatalf("status before the drop: %+v %v, want 1 shadow denial", st, err)
	}
	if _, err := rw.(*sqliteBackend).db.ExecContext(ctx, `DROP TABLE quota_shadow`); err != nil {
		t.Fatal(err)
	}
	rw.Close()
	ro, err := NewSQLite(path, true)
	if err != nil {
		t.Fatalf("read-only open without quota_shadow: %v", err)
	}
	defer ro.Close()
	st, err := ro.Status(ctx, "c", []Bucket{tight}, nil)
	if err != nil || st.Buckets[0].Used != 2 || st.Buckets[0].ShadowDenials != nil {
		t.Fatalf("status = %+v, %v; want 2 units used and no shadow counts", st, err)
	}
}
