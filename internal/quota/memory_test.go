package quota

import (
	"context"
	"testing"
	"time"
)

func TestMemoryBackendSuite(t *testing.T) {
	runBackendSuite(t, func(*testing.T) Backend { return NewMemory(time.Now) })
}

// TestMemoryRetryAfterIsExact: with a stepped clock, a reservation at
// exactly now + Retry-After is admitted and one a microsecond earlier is not.
func TestMemoryRetryAfterIsExact(t *testing.T) {
	now := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	m := NewMemory(func() time.Time { return now })
	b := Bucket{Name: "requests", Limit: 3, Window: time.Minute}
	cs := []bucketCharge{{Bucket: b, Units: 1}}
	ctx := context.Background()
	for i := range 3 {
		if d, err := m.Reserve(ctx, "ip-1", "", cs); err != nil || !d.Allowed {
			t.Fatalf("reservation %d: %+v, %v", i+1, d, err)
		}
		now = now.Add(10 * time.Second)
	}
	d, _ := m.Reserve(ctx, "ip-1", "", cs)
	if d.Allowed || d.DeniedBucket != "requests" || d.RetryAfter != 30*time.Second {
		t.Fatalf("4th: %+v, want denied with Retry-After 30s (the first entry leaves the window)", d)
	}
	start := now
	now = start.Add(d.RetryAfter - time.Microsecond)
	if d, _ := m.Reserve(ctx, "ip-1", "", cs); d.Allowed {
		t.Error("admitted a microsecond before Retry-After")
	}
	now = start.Add(d.RetryAfter)
	if d, _ := m.Reserve(ctx, "ip-1", "", cs); !d.Allowed {
		t.Errorf("denied at Retry-After: %+v", d)
	}
	// Other clients have their own log.
	if d, _ := m.Reserve(ctx, "ip-2", "", cs); !d.Allowed {
		t.Errorf("another credential denied: %+v", d)
	}
}

// TestMemorySweepDropsIdleCredentials keeps memory bounded by the active
// clients.
func TestMemorySweepDropsIdleCredentials(t *testing.T) {
	now := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	m := NewMemory(func() time.Time { return now }).(*memoryBackend)
	cs := []bucketCharge{{Bucket: Bucket{Name: "requests", Limit: 60, Window: time.Minute}, Units: 1}}
	for i := range memorySweepEvery {
		m.Reserve(context.Background(), "client-"+string(rune('a'+i%26))+time.Duration(i).String(), "", cs)
	}
	now = now.Add(26 * time.Hour)
	for range memorySweepEvery {
		m.Reserve(context.Background(), "active", "", cs)
	}
	m.mu.Lock()
	n := len(m.creds)
	m.mu.Unlock()
	if n != 1 {
		t.Errorf("%d credentials kept after a day idle, want 1 (the active one)", n)
	}
}

// TestMemoryStatusCreatesNothing: reading the status of a client never
// seen keeps no state for it (serve may be asked about any key).
func TestMemoryStatusCreatesNothing(t *testing.T) {
	m := NewMemory(time.Now).(*memoryBackend)
	if _, err := m.Status(context.Background(), "never-seen", []Bucket{{Name: "units", Limit: 1, Window: time.Minute}}, nil); err != nil {
		t.Fatal(err)
	}
	if len(m.creds) != 0 {
		t.Fatalf("%d credentials kept after a Status, want 0", len(m.creds))
	}
}
