package quota

import (
	"strings"
	"testing"
	"time"
)

// TestNewChecksAlgorithm: New refuses every bucket whose algorithm
// settings the backends cannot honour, naming the bucket and the reason.
func TestNewChecksAlgorithm(t *testing.T) {
	costs := Costs{"m": {{Bucket: "b", Units: 1}}}
	for _, tc := range []struct {
		b    Bucket
		says string
	}{
		{Bucket{Name: "b", Limit: 5, Window: time.Hour, Algorithm: "gcra"}, "want log or counter"},
		{Bucket{Name: "b", Limit: 5, Window: time.Hour, Slots: 3}, "counter only"},
		{Bucket{Name: "b", Limit: 5, Calendar: true, Algorithm: AlgorithmCounter}, "calendar"},
		{Bucket{Name: "b", Limit: 5, Window: time.Hour, Algorithm: AlgorithmCounter, Slots: 1}, "want 2-3601"},
		{Bucket{Name: "b", Limit: 5, Window: time.Hour, Algorithm: AlgorithmCounter, Slots: 3602}, "want 2-3601"},
		{Bucket{Name: "b", Limit: 5, Window: time.Hour, Algorithm: AlgorithmCounter, Slots: 8}, "does not split into 7"},
		{Bucket{Name: "b", Limit: 5, Window: 2 * time.Microsecond, Algorithm: AlgorithmCounter, Slots: 4}, "does not split into 3"},
	} {
		if _, err := New(NewMemory(), []Bucket{tc.b}, costs); err == nil || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), `"b"`) {
			t.Errorf("New(%+v) = %v, want an error naming bucket \"b\" saying %q", tc.b, err, tc.says)
		}
	}
	for _, b := range []Bucket{
		{Name: "b", Limit: 5, Window: time.Hour, Algorithm: AlgorithmCounter},
		{Name: "b", Limit: 5, Window: time.Hour, Algorithm: AlgorithmCounter, Slots: 3601},
		{Name: "b", Limit: 5, Window: time.Minute, Algorithm: AlgorithmCounter, Slots: 61},
		{Name: "b", Limit: 5, Calendar: true, Algorithm: AlgorithmLog},
	} {
		if _, err := New(NewMemory(), []Bucket{b}, costs); err != nil {
			t.Errorf("New(%+v): %v", b, err)
		}
	}
}

// TestCounterRetryAfterExact: on a simulated clock, the counter's
// Retry-After is the first µs at which the same call is admitted: denied
// 1 µs before it, admitted at it; for 2 to 61 slots and several costs.
func TestCounterRetryAfterExact(t *testing.T) {
	for _, slots := range []int{2, 3, 7, 61} {
		for _, cost := range []int64{1, 7, 30} {
			b := Bucket{Name: "b", Limit: 30, Window: time.Minute, Algorithm: AlgorithmCounter, Slots: slots}
			now := simStart.Add(17 * time.Second)
			m := NewMemory(WithMemoryClock(func() time.Time { return now }))
			ctx := t.Context()
			for i := range 30 { // spread over 30 s, one call per second
				now = simStart.Add(17*time.Second + time.Duration(i)*time.Second)
				mustAllow(t, m, "c", charge(b, 1))
			}
			d := mustDeny(t, m, "c", charge(b, cost), "b")
			at := now.Add(d.RetryAfter)
			now = at.Add(-time.Microsecond)
			if d, _ := m.Reserve(ctx, "c", charge(b, cost)); d.Allowed {
				t.Fatalf("slots %d cost %d: admitted 1 µs before Retry-After", slots, cost)
			}
			now = at
			if d, _ := m.Reserve(ctx, "c", charge(b, cost)); !d.Allowed {
				t.Fatalf("slots %d cost %d: denied at Retry-After (%v)", slots, cost, d.RetryAfter)
			}
		}
	}
}
