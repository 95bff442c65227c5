package quota

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestOutageReserve: a reserve is held, spent only up to its units, kept in a 0600 file, and on
// refill its spent units become entries while the rest is held anew.
func TestOutageReserve(t *testing.T) {
	units := Bucket{Name: "units", Limit: 10, Window: time.Hour}
	tight := Bucket{Name: "tight", Limit: 1, Window: time.Hour, Shadow: true}
	l, err := New(newTestSQLite(t), []Bucket{units, tight}, Costs{"videos.list": {{Bucket: "units", Units: 2}, {Bucket: "tight", Units: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "state", "quota-reserve.json")
	r, ctx := NewOutageReserve(path, map[string]int64{"units": 5}, time.Hour), testCtx(t)
	if err := l.SpendReserve(r, "c", "videos.list"); !errors.Is(err, ErrReserveSpent) {
		t.Fatalf("SpendReserve with none held = %v, want ErrReserveSpent", err)
	}
	st, err := l.Refill(ctx, r, "c")
	if err != nil || st.Held["units"] != 5 {
		t.Fatalf("Refill = %+v, %v; want 5 units held", st, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("reserve file: %v, %v; want mode 0600", fi, err)
	}
	for range 2 {
		if err := l.SpendReserve(NewOutageReserve(path, nil, 0), "c", "videos.list"); err != nil {
			t.Fatalf("SpendReserve: %v", err)
		}
	}
	if err := l.SpendReserve(r, "c", "videos.list"); !errors.Is(err, ErrReserveSpent) {
		t.Fatalf("SpendReserve of a third call (6 > 5 units) = %v, want ErrReserveSpent", err)
	}
	if st, err := l.Refill(ctx, r, "c"); err != nil || st.Held["units"] != 5 || len(st.Spent) != 0 {
		t.Fatalf("second Refill = %+v, %v; want 5 held, nothing spent", st, err)
	}
	if got := l.Status(ctx, "c").Buckets[0]; got.Used != 4 || got.Remaining != 1 || len(got.Held) != 1 {
		t.Fatalf("status after refill: %+v; want the 4 spent units used, 5 held, 1 remaining", got)
	}
}
