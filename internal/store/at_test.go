package store

import (
	"testing"
	"time"
)

func TestParseAt(t *testing.T) {
	for in, want := range map[string]time.Time{
		"2026-03-02T08:00:00Z":      time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC),
		"2026-03-02T09:00:00+01:00": time.Date(2026, 3, 2, 8, 0, 0, 0, time.UTC),
		"2026-03-02":                time.Date(2026, 3, 2, 23, 59, 59, 999999000, time.UTC),
	} {
		if got, err := ParseAt(in); err != nil || !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("ParseAt(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"yesterday", "2026-3-2", ""} {
		if _, err := ParseAt(in); err == nil {
			t.Errorf("ParseAt(%q) accepted", in)
		}
	}
}
