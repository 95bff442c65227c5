package quota

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// newTestSQLite opens a fresh quota database in a temporary directory and
// closes it on cleanup.
func newTestSQLite(t testing.TB) *sqliteBackend {
	t.Helper()
	b, err := NewSQLite(filepath.Join(t.TempDir(), "quota", "quota.db"), false)
	if err != nil {
		t.Fatalf("NewSQLite: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return b.(*sqliteBackend)
}

// fakeClock is a settable clock for WithClock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock(now time.Time) *fakeClock { return &fakeClock{now: now} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func TestSQLiteBackendSuite(t *testing.T) {
	t.Parallel()
	runBackendSuite(t, func(t *testing.T) Backend { return newTestSQLite(t) })
}

// One backend shared by every subtest, as a shared Redis would be.
func TestSQLiteBackendSuiteShared(t *testing.T) {
	t.Parallel()
	shared := newTestSQLite(t)
	runBackendSuite(t, func(*testing.T) Backend { return shared })
}

// rows counts the stored log entries of credential (all buckets).
func (s *sqliteBackend) rows(t *testing.T, credential string) int64 {
	t.Helper()
	var n int64
	if err := s.db.QueryRow(`SELECT count(*) FROM quota_log WHERE credential = ?`, credential).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// With a fake clock the Retry-After boundary is exact to the microsecond: a
// reservation at now+RetryAfter succeeds, one microsecond earlier is denied.
func TestSQLiteRetryAfterExactBoundary(t *testing.T) {
	start := time.Date(2026, 5, 4, 12, 0, 0, 123_456_000, time.UTC)
	clock := newFakeClock(start)
	b := WithClock(newTestSQLite(t), clock.Now)
	units := Bucket{Name: "units", Limit: 250, Window: 10 * time.Second}
	const cred = "exact"

	// Entries: 100 at +0, 100 at +1.5s, 50 at +2.000001s.
	mustAllow(t, b, cred, charge(units, 100))
	clock.Advance(1500 * time.Millisecond)
	mustAllow(t, b, cred, charge(units, 100))
	clock.Advance(500*time.Millisecond + time.Microsecond)
	mustAllow(t, b, cred, charge(units, 50))
	clock.Advance(3 * time.Second)

	for _, tc := range []struct {
		units int64
		want  time.Duration // after now (start + 5.000001s)
	}{
		{1, 5*time.Second - time.Microsecond},           // first entry expires at start+10s
		{100, 5*time.Second - time.Microsecond},         // frees 100
		{101, 6500*time.Millisecond - time.Microsecond}, // needs the second too
		{200, 6500*time.Millisecond - time.Microsecond}, // 200 freed exactly
		{201, 7 * time.Second},                          // needs the third (at +2.000001s)
		{250, 7 * time.Second},                          // everything
	} {
		d := mustDeny(t, b, cred, charge(units, tc.units), "units")
		if d.RetryAfter != tc.want {
			t.Errorf("cost %d: RetryAfter = %v, want %v", tc.units, d.RetryAfter, tc.want)
		}
		st := mustStatus(t, b, cred, []Bucket{units}, map[string]int64{"units": tc.units})
		if got := st.Buckets[0].RetryAfterMax; got != tc.want {
			t.Errorf("cost %d: Status.RetryAfterMax = %v, want %v", tc.units, got, tc.want)
		}
		if got := st.Buckets[0].RetryAfterOne; got != 5*time.Second-time.Microsecond {
			t.Errorf("RetryAfterOne = %v, want %v", got, 5*time.Second-time.Microsecond)
		}
	}

	now := clock.Now()
	d := mustDeny(t, b, cred, charge(units, 101), "units")
	clock.Set(now.Add(d.RetryAfter - time.Microsecond))
	mustDeny(t, b, cred, charge(units, 101), "units")
	clock.Set(now.Add(d.RetryAfter))
	if d := mustAllow(t, b, cred, charge(units, 101)); d.Remaining["units"] != 250-50-101 {
		t.Fatalf("Remaining = %d, want %d", d.Remaining["units"], 250-50-101)
	}
}

// TestSQLiteRetryAfterIsExact: with a stepped clock, a reservation at
// exactly now + Retry-After is admitted and one a microsecond earlier is not.
func TestSQLiteRetryAfterIsExact(t *testing.T) {
	clock := newFakeClock(time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC))
	m := WithClock(newTestSQLite(t), clock.Now)
	b := Bucket{Name: "requests", Limit: 3, Window: time.Minute}
	cs := []bucketCharge{{Bucket: b, Units: 1}}
	ctx := context.Background()
	for i := range 3 {
		if d, err := m.Reserve(ctx, "ip-1", "", cs); err != nil || !d.Allowed {
			t.Fatalf("reservation %d: %+v, %v", i+1, d, err)
		}
		clock.Advance(10 * time.Second)
	}
	d, _ := m.Reserve(ctx, "ip-1", "", cs)
	if d.Allowed || d.DeniedBucket != "requests" || d.RetryAfter != 30*time.Second {
		t.Fatalf("4th: %+v, want denied with Retry-After 30s (the first entry leaves the window)", d)
	}
	start := clock.Now()
	clock.Set(start.Add(d.RetryAfter - time.Microsecond))
	if d, _ := m.Reserve(ctx, "ip-1", "", cs); d.Allowed {
		t.Error("admitted a microsecond before Retry-After")
	}
	clock.Set(start.Add(d.RetryAfter))
	if d, _ := m.Reserve(ctx, "ip-1", "", cs); !d.Allowed {
		t.Errorf("denied at Retry-After: %+v", d)
	}
	// Other credentials have their own log.
	if d, _ := m.Reserve(ctx, "ip-2", "", cs); !d.Allowed {
		t.Errorf("another credential denied: %+v", d)
	}
}

// TestSQLiteStatusCreatesNothing: reading the status of a credential never
// seen writes no row for it (serve may be asked about any key).
func TestSQLiteStatusCreatesNothing(t *testing.T) {
	s := newTestSQLite(t)
	if _, err := s.Status(context.Background(), "never-seen", []Bucket{{Name: "units", Limit: 1, Window: time.Minute}}, nil); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"quota_log", "quota_exhausted", "quota_shadow", "quota_hold"} {
		var n int
		if err := s.db.QueryRow(`SELECT count(*) FROM ` + table).Scan(&n); err != nil || n != 0 {
			t.Errorf("%s: %d rows after a Status (%v), want 0", table, n, err)
		}
	}
}

func TestSQLiteCalendarAcrossDST(t *testing.T) {
	for _, tc := range []struct {
		name string
		now  time.Time
		want time.Duration
	}{
		// 2026-03-08 is 23 hours long in Los Angeles: from 01:00 PST, 22 h remain.
		{"spring forward", time.Date(2026, 3, 8, 1, 0, 0, 0, pacific), 22 * time.Hour},
		// 2026-11-01 is 25 hours long: from 00:30 PDT, 24h30m remain.
		{"fall back", time.Date(2026, 11, 1, 0, 30, 0, 0, pacific), 24*time.Hour + 30*time.Minute},
		{"ordinary", time.Date(2026, 6, 1, 23, 59, 59, 999_999_000, pacific), time.Microsecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock(tc.now)
			b := WithClock(newTestSQLite(t), clock.Now)
			daily := Bucket{Name: "daily", Limit: 1, Calendar: true}
			mustAllow(t, b, "c", charge(daily, 1))
			d := mustDeny(t, b, "c", charge(daily, 1), "daily")
			if d.RetryAfter != tc.want {
				t.Fatalf("RetryAfter = %v, want %v", d.RetryAfter, tc.want)
			}
			clock.Advance(tc.want - time.Microsecond)
			mustDeny(t, b, "c", charge(daily, 1), "daily")
			clock.Advance(time.Microsecond)
			mustAllow(t, b, "c", charge(daily, 1))
		})
	}
}

// Entries of the current Pacific day are kept after a short window passes,
// so UsedToday stays exact; older ones are evicted on the next admission.
func TestSQLiteUsedTodayAndEviction(t *testing.T) {
	day := time.Date(2026, 7, 14, 0, 0, 0, 0, pacific)
	clock := newFakeClock(day.Add(-30 * time.Minute)) // 23:30 the day before
	b := WithClock(newTestSQLite(t), clock.Now)
	units := Bucket{Name: "units", Limit: 10, Window: 10 * time.Minute}
	const cred = "today"

	mustAllow(t, b, cred, charge(units, 5)) // yesterday
	clock.Set(day.Add(time.Hour))
	mustAllow(t, b, cred, charge(units, 2)) // evicts yesterday's entry
	if n := b.rows(t, cred); n != 1 {
		t.Fatalf("rows = %d after eviction, want 1", n)
	}
	clock.Advance(time.Hour)
	mustAllow(t, b, cred, charge(units, 3)) // the 01:00 entry is out of the window but kept
	if n := b.rows(t, cred); n != 2 {
		t.Fatalf("rows = %d, want 2 (today's entries are kept)", n)
	}
	clock.Advance(time.Hour)
	st := mustStatus(t, b, cred, []Bucket{units}, nil)
	if bs := st.Buckets[0]; bs.Used != 0 || bs.Entries != 0 || bs.UsedToday != 5 {
		t.Fatalf("Status = %+v, want used 0, entries 0, used today 5", bs)
	}
	clock.Set(day.Add(24*time.Hour + time.Minute)) // next day
	mustAllow(t, b, cred, charge(units, 1))
	if n := b.rows(t, cred); n != 1 {
		t.Fatalf("rows = %d the next day, want 1", n)
	}
	if bs := mustStatus(t, b, cred, []Bucket{units}, nil).Buckets[0]; bs.Used != 1 || bs.UsedToday != 1 {
		t.Fatalf("Status = %+v, want used 1, used today 1", bs)
	}
}

// A clock stepping back never lets more through than the limit: see
// TestEmbeddedClockStepBack (embedded_test.go).

func TestSQLiteMarkExhaustedOnlyMovesLater(t *testing.T) {
	start := time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)
	clock := newFakeClock(start)
	b := WithClock(newTestSQLite(t), clock.Now)
	units := Bucket{Name: "units", Limit: 3, Window: time.Minute}
	ctx := context.Background()
	if err := b.MarkExhausted(ctx, "c", Mark{Until: start.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := b.MarkExhausted(ctx, "c", Mark{Until: start.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	d := mustReserve(t, b, "c", charge(units, 1))
	if !d.Exhausted || d.RetryAfter != time.Hour || !d.ExhaustedUntil.Equal(start.Add(time.Hour)) {
		t.Fatalf("decision = %+v, want exhausted for 1h", d)
	}
	// Exhausted and full: wait for the later of the two.
	clock.Set(start.Add(59 * time.Minute))
	if err := b.Reset(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	mustAllow(t, b, "c", charge(units, 3))
	if err := b.MarkExhausted(ctx, "c", Mark{Until: start.Add(59*time.Minute + time.Second)}); err != nil {
		t.Fatal(err)
	}
	d = mustReserve(t, b, "c", charge(units, 1))
	if !d.Exhausted || d.RetryAfter != time.Minute || d.DeniedBucket != "" {
		t.Fatalf("decision = %+v, want exhausted, retry after the window (1m)", d)
	}
	clock.Advance(time.Second)
	mustDeny(t, b, "c", charge(units, 1), "units")
}

func TestSQLiteUnavailable(t *testing.T) {
	b, err := NewSQLite(filepath.Join(t.TempDir(), "q.db"), false)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	units := Bucket{Name: "units", Limit: 3, Window: time.Minute}
	ctx := context.Background()
	if _, err := b.Reserve(ctx, "c", "", charge(units, 1)); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Reserve on a closed backend = %v, want ErrUnavailable", err)
	}
	if _, err := b.Status(ctx, "c", []Bucket{units}, nil); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Status on a closed backend = %v, want ErrUnavailable", err)
	}
	if err := b.MarkExhausted(ctx, "c", Mark{Until: time.Now()}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("MarkExhausted on a closed backend = %v, want ErrUnavailable", err)
	}
	if err := b.Reset(ctx, "c"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Reset on a closed backend = %v, want ErrUnavailable", err)
	}

	// A path that cannot be created.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewSQLite(filepath.Join(file, "sub", "q.db"), false); !errors.Is(err, ErrUnavailable) {
		t.Errorf("NewSQLite under a file = %v, want ErrUnavailable", err)
	}

	// A cancelled context is both unavailable and cancelled.
	b2 := newTestSQLite(t)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b2.Reserve(cctx, "c", "", charge(units, 1)); !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Errorf("Reserve with a cancelled context = %v, want ErrUnavailable and context.Canceled", err)
	}
}

// Opening creates the directory (0o700) and the schema once; reopening an
// existing database is cheap (quota status must start in < 30 ms).
func TestSQLiteOpen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "trendfetch")
	path := filepath.Join(dir, "quota.db")
	b, err := NewSQLite(path, false)
	if err != nil {
		t.Fatal(err)
	}
	mustAllow(t, b, "c", charge(Bucket{Name: "units", Limit: 3, Window: time.Minute}, 2))
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o700 {
		t.Errorf("directory mode = %o, want 700", perm)
	}

	b, err = NewSQLite(path, false)
	if err != nil {
		t.Fatal(err)
	}
	st := mustStatus(t, b, "c", []Bucket{{Name: "units", Limit: 3, Window: time.Minute}}, nil)
	b.Close()
	if st.Buckets[0].Used != 2 {
		t.Fatalf("after reopen: used %d, want 2", st.Buckets[0].Used)
	}

	var mode string
	b, _ = NewSQLite(path, false)
	defer b.Close()
	if err := b.(*sqliteBackend).db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q (%v), want wal", mode, err)
	}
}

// Goroutines sharing one backend and goroutines with their own backend on
// the same file admit exactly the limit.
func TestSQLiteConcurrentExact(t *testing.T) {
	path := filepath.Join(t.TempDir(), "q.db")
	units := Bucket{Name: "units", Limit: 300, Window: time.Hour}
	var mu sync.Mutex
	var admitted int64
	var wg sync.WaitGroup
	for i := range 4 {
		b, err := NewSQLite(path, false)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		for j := range 3 {
			wg.Go(func() {
				cost := int64(1 + (i+j)%3*4) // 1, 5, 9
				for {
					d, err := b.Reserve(context.Background(), "c", "", charge(units, cost))
					if err != nil {
						t.Error(err)
						return
					}
					if !d.Allowed {
						if cost == 1 {
							return
						}
						cost = 1
						continue
					}
					mu.Lock()
					admitted += cost
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if admitted != 300 {
		t.Fatalf("admitted %d units, want exactly 300", admitted)
	}
}

func BenchmarkSQLiteReserve(b *testing.B) {
	for _, cost := range []int64{1, 100} {
		b.Run(map[int64]string{1: "cost1", 100: "cost100"}[cost], func(b *testing.B) {
			be := newTestSQLite(b)
			units := Bucket{Name: "units", Limit: 1 << 50, Window: time.Hour}
			cs := charge(units, cost)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				d, err := be.Reserve(ctx, "bench", "", cs)
				if err != nil || !d.Allowed {
					b.Fatalf("Reserve: %v %+v", err, d)
				}
			}
		})
	}
	// A full window: every call is a denial with a Retry-After lookup.
	b.Run("denied", func(b *testing.B) {
		be := newTestSQLite(b)
		units := Bucket{Name: "units", Limit: 9500, Window: time.Hour}
		ctx := context.Background()
		for range 9500 {
			if _, err := be.Reserve(ctx, "bench", "", charge(units, 1)); err != nil {
				b.Fatal(err)
			}
		}
		cs := charge(units, 100)
		for b.Loop() {
			d, err := be.Reserve(ctx, "bench", "", cs)
			if err != nil || d.Allowed {
				b.Fatalf("Reserve: %v %+v", err, d)
			}
		}
	})
}
