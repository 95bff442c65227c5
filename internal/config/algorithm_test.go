package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/quota"
)

// TestBucketAlgorithm: algorithm and slots reach quota.Bucket, and each
// invalid combination is one line naming the setting.
func TestBucketAlgorithm(t *testing.T) {
	c, err := Parse(strings.NewReader(`
quota:
  buckets:
    - {name: units, limit: 9500, window: 24h}
    - {name: search, limit: 95, window: 24h, algorithm: counter}
    - {name: stats, limit: 9500, window: 1h, algorithm: counter, slots: 61}
    - {name: daily, limit: 10, calendar: true, algorithm: log}
`))
	if err != nil {
		t.Fatal(err)
	}
	buckets, _, err := c.Limits()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]any{"units": {quota.Algorithm(""), 0}, "search": {quota.AlgorithmCounter, 0},
		"stats": {quota.AlgorithmCounter, 61}, "daily": {quota.AlgorithmLog, 0}}
	for _, b := range buckets {
		if w := want[b.Name]; b.Algorithm != w[0] || b.Slots != w[1] {
			t.Errorf("bucket %s: algorithm %q slots %d, want %v", b.Name, b.Algorithm, b.Slots, w)
		}
	}
	if s := buckets[2]; s.CounterSlots() != 61 || s.SubWindow() != time.Minute {
		t.Errorf("stats: %d counters of %v, want 61 of 1m", s.CounterSlots(), s.SubWindow())
	}
	if s := buckets[1]; s.CounterSlots() != 2 || s.SubWindow() != 24*time.Hour {
		t.Errorf("search: %d counters of %v, want 2 of 24h (the seed note's)", s.CounterSlots(), s.SubWindow())
	}

	for _, tc := range []struct {
		name  string
		edit  func(b *BucketConfig)
		field string
		says  string
	}{
		{"unknown algorithm", func(b *BucketConfig) { b.Algorithm = "gcra" }, "quota.buckets[1].algorithm", "want log or counter"},
		{"counter with calendar", func(b *BucketConfig) { b.Algorithm, b.Calendar = "counter", true }, "quota.buckets[1].algorithm", "calendar"},
		{"slots on a log", func(b *BucketConfig) { b.Slots = 4 }, "quota.buckets[1].slots", "counter only"},
		{"one slot", func(b *BucketConfig) { b.Algorithm, b.Slots = "counter", 1 }, "quota.buckets[1].slots", "2-3601"},
		{"too many slots", func(b *BucketConfig) { b.Algorithm, b.Slots = "counter", 3602 }, "quota.buckets[1].slots", "2-3601"},
		{"indivisible window", func(b *BucketConfig) { b.Algorithm, b.Slots = "counter", 8 }, "quota.buckets[1].slots", "does not split into 7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.edit(&c.Quota.Buckets[1])
			err := c.Validate()
			var ve *ValidationError
			if !errors.As(err, &ve) || ve.Field != tc.field || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("err = %v, want a *ValidationError on %s saying %q", err, tc.field, tc.says)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
}
