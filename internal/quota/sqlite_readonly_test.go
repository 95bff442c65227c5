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
