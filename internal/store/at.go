package store

import (
	"errors"
	"time"
)

// ParseAt reads a point in time as the CLI (--at, --until) and the read
// API (?at=) take it: an RFC 3339 time (2026-03-02T08:00:00Z), or a UTC date
// (2026-03-02) meaning the end of that day. The result is UTC.
func ParseAt(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	if d, err := time.Parse(time.DateOnly, s); err == nil {
		return d.Add(24*time.Hour - time.Microsecond), nil
	}
	return time.Time{}, errors.New("want an RFC 3339 time (2026-03-02T08:00:00Z) or a date (2026-03-02)")
}
