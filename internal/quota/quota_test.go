package quota

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestPacificMidnight(t *testing.T) {
	la := pacific
	for _, tc := range []struct {
		name       string
		t          time.Time
		start, end time.Time
		dayLen     time.Duration
	}{
		{
			name:   "ordinary day",
			t:      time.Date(2026, 6, 1, 15, 4, 5, 0, la),
			start:  time.Date(2026, 6, 1, 7, 0, 0, 0, time.UTC), // 00:00 PDT
			end:    time.Date(2026, 6, 2, 7, 0, 0, 0, time.UTC),
			dayLen: 24 * time.Hour,
		},
		{
			// Clocks jump from 02:00 PST to 03:00 PDT: a 23-hour day.
			name:   "spring forward 2026-03-08",
			t:      time.Date(2026, 3, 8, 12, 0, 0, 0, la),
			start:  time.Date(2026, 3, 8, 8, 0, 0, 0, time.UTC), // 00:00 PST
			end:    time.Date(2026, 3, 9, 7, 0, 0, 0, time.UTC), // 00:00 PDT
			dayLen: 23 * time.Hour,
		},
		{
			// Clocks fall back from 02:00 PDT to 01:00 PST: a 25-hour day.
			name:   "fall back 2026-11-01",
			t:      time.Date(2026, 11, 1, 12, 0, 0, 0, la),
			start:  time.Date(2026, 11, 1, 7, 0, 0, 0, time.UTC), // 00:00 PDT
			end:    time.Date(2026, 11, 2, 8, 0, 0, 0, time.UTC), // 00:00 PST
			dayLen: 25 * time.Hour,
		},
		{
			// 01:30 happens twice on 2026-11-01; both are the same quota day.
			name:   "fall back, second 01:30 (PST)",
			t:      time.Date(2026, 11, 1, 9, 30, 0, 0, time.UTC),
			start:  time.Date(2026, 11, 1, 7, 0, 0, 0, time.UTC),
			end:    time.Date(2026, 11, 2, 8, 0, 0, 0, time.UTC),
			dayLen: 25 * time.Hour,
		},
		{
			name:   "exactly midnight belongs to the new day",
			t:      time.Date(2026, 3, 9, 7, 0, 0, 0, time.UTC),
			start:  time.Date(2026, 3, 9, 7, 0, 0, 0, time.UTC),
			end:    time.Date(2026, 3, 10, 7, 0, 0, 0, time.UTC),
			dayLen: 24 * time.Hour,
		},
		{
			name:   "one microsecond before midnight",
			t:      time.Date(2026, 3, 9, 6, 59, 59, 999_999_000, time.UTC),
			start:  time.Date(2026, 3, 8, 8, 0, 0, 0, time.UTC),
			end:    time.Date(2026, 3, 9, 7, 0, 0, 0, time.UTC),
			dayLen: 23 * time.Hour,
		},
		{
			name:   "UTC input on the previous UTC date",
			t:      time.Date(2026, 1, 1, 3, 0, 0, 0, time.UTC), // 2025-12-31 19:00 PST
			start:  time.Date(2025, 12, 31, 8, 0, 0, 0, time.UTC),
			end:    time.Date(2026, 1, 1, 8, 0, 0, 0, time.UTC),
			dayLen: 24 * time.Hour,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start, end := DayStart(tc.t), NextPacificMidnight(tc.t)
			if !start.Equal(tc.start) {
				t.Errorf("DayStart(%v) = %v, want %v", tc.t, start.UTC(), tc.start)
			}
			if !end.Equal(tc.end) {
				t.Errorf("NextPacificMidnight(%v) = %v, want %v", tc.t, end.UTC(), tc.end)
			}
			if got := end.Sub(start); got != tc.dayLen {
				t.Errorf("day length = %v, want %v", got, tc.dayLen)
			}
			if !NextPacificMidnight(start.Add(-time.Nanosecond)).Equal(start) {
				t.Errorf("NextPacificMidnight just before %v is not it", start)
			}
			if !DayStart(end.Add(-time.Nanosecond)).Equal(start) {
				t.Errorf("DayStart just before the next midnight is not %v", start)
			}
		})
	}
}

// nopBackend fails the test if the limiter reaches the backend.
type nopBackend struct{ t *testing.T }

func (nopBackend) Name() string { return "nop" }
func (b nopBackend) Reserve(context.Context, string, string, []bucketCharge) (Decision, error) {
	b.t.Fatal("backend reached")
	return Decision{}, nil
}
func (b nopBackend) Status(context.Context, string, []Bucket, map[string]int64) (Status, error) {
	b.t.Fatal("backend reached")
	return Status{}, nil
}
func (nopBackend) MarkExhausted(context.Context, string, Mark) error { return nil }
func (nopBackend) Reset(context.Context, string) error               { return nil }
func (nopBackend) Hold(context.Context, string, string, []holdCharge, time.Duration) ([]int64, error) {
	return nil, nil
}
func (b nopBackend) Refund(context.Context, string, Reservation) (bool, error) {
	b.t.Fatal("backend reached")
	return false, nil
}
func (nopBackend) Close() error { return nil }

// defaultBuckets and defaultCosts are the product defaults of docs/design.md §4.
var (
	defaultBuckets = []Bucket{
		{Name: "units", Limit: 9500, Window: 24 * time.Hour},
		{Name: "search", Limit: 95, Window: 24 * time.Hour},
	}
	defaultCosts = Costs{
		"search.list":          {{Bucket: "units", Units: 100}, {Bucket: "search", Units: 1}},
		"videos.list":          {{Bucket: "units", Units: 1}},
		"channels.list":        {{Bucket: "units", Units: 1}},
		"videoCategories.list": {{Bucket: "units", Units: 1}},
	}
)

func TestNewValidation(t *testing.T) {
	hour := time.Hour
	for _, tc := range []struct {
		name    string
		buckets []Bucket
		costs   Costs
		want    string // substring of the error
	}{
		{"unknown bucket", defaultBuckets, Costs{"videos.list": {{Bucket: "unit", Units: 1}}}, `costs.videos.list.unit = 1: no bucket named "unit"`},
		{"zero limit", []Bucket{{Name: "units", Limit: 0, Window: hour}}, nil, "buckets[0].limit = 0: must be > 0"},
		{"negative limit", []Bucket{{Name: "units", Limit: -1, Window: hour}}, nil, "buckets[0].limit = -1: must be > 0"},
		{"zero window", []Bucket{{Name: "units", Limit: 1}}, nil, "buckets[0].window = 0s: must be at least 1µs"},
		{"empty name", []Bucket{{Limit: 1, Window: hour}}, nil, `buckets[0].name = "": empty`},
		{"reserved name", []Bucket{{Name: "state", Limit: 1, Window: hour}}, nil, "reserved"},
		{"duplicate bucket", []Bucket{{Name: "u", Limit: 1, Window: hour}, {Name: "u", Limit: 2, Window: hour}}, nil, "defined twice"},
		{"zero cost", defaultBuckets, Costs{"videos.list": {{Bucket: "units", Units: 0}}}, "must be > 0"},
		{"bucket charged twice", defaultBuckets, Costs{"x": {{Bucket: "units", Units: 1}, {Bucket: "units", Units: 1}}}, "twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(nopBackend{t}, tc.buckets, tc.costs)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, want an error containing %q", err, tc.want)
			}
		})
	}

	// A calendar bucket needs no window.
	if _, err := New(nopBackend{t}, []Bucket{{Name: "day", Limit: 1, Calendar: true}}, nil); err != nil {
		t.Fatalf("New(calendar bucket) = %v", err)
	}
}

// Cost > limit is a non-retryable configuration error, caught before any
// backend call: search.list at 100 units against a 95-call bucket.
func TestNewCostAboveLimit(t *testing.T) {
	costs := Costs{"search.list": {{Bucket: "units", Units: 100}, {Bucket: "search", Units: 96}}}
	_, err := New(nopBackend{t}, defaultBuckets, costs)
	var ce *CostError
	if !errors.As(err, &ce) {
		t.Fatalf("New = %v, want *CostError", err)
	}
	want := CostError{Method: "search.list", Bucket: "search", Units: 96, Limit: 95}
	if *ce != want {
		t.Fatalf("CostError = %+v, want %+v", *ce, want)
	}
	if errors.Is(err, ErrUnavailable) {
		t.Fatal("a CostError must not look like a backend outage")
	}
	if !strings.Contains(err.Error(), "can never be admitted") {
		t.Fatalf("message %q does not say why", err)
	}
	// Equal to the limit is fine.
	costs["search.list"][1].Units = 95
	if _, err := New(nopBackend{t}, defaultBuckets, costs); err != nil {
		t.Fatalf("cost == limit: %v", err)
	}
}

func TestLimiter(t *testing.T) {
	l, err := New(newTestSQLite(t), defaultBuckets, defaultCosts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := l.Reserve(ctx, "proj", "playlists.list"); !errors.Is(err, errUnknownMethod) {
		t.Fatalf("Reserve(unknown method) = %v, want errUnknownMethod", err)
	}
	d, err := l.Reserve(ctx, "proj", "search.list")
	if err != nil || !d.Allowed {
		t.Fatalf("Reserve(search.list) = %+v, %v", d, err)
	}
	if d.Remaining["units"] != 9400 || d.Remaining["search"] != 94 {
		t.Fatalf("Remaining = %v, want units 9400, search 94", d.Remaining)
	}
	if d, err := l.Reserve(ctx, "proj", "videos.list"); err != nil || d.Remaining["units"] != 9399 {
		t.Fatalf("Reserve(videos.list) = %+v, %v", d, err)
	}
	st := l.Status(ctx, "proj")
	if !st.Reachable || st.Backend != "sqlite" || st.Credential != "proj" || len(st.Buckets) != 2 {
		t.Fatalf("Status = %+v", st)
	}
	if u := st.Buckets[0]; u.Name != "units" || u.Used != 101 || u.MaxCost != 100 || u.Entries != 2 {
		t.Fatalf("units = %+v, want used 101, max cost 100, 2 entries", u)
	}
	if s := st.Buckets[1]; s.Name != "search" || s.Used != 1 || s.MaxCost != 1 {
		t.Fatalf("search = %+v, want used 1, max cost 1", s)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if st := l.Status(ctx, "proj"); st.Reachable || st.Err == nil {
		t.Fatalf("Status after Close = %+v, want unreachable with an error", st)
	}
}
