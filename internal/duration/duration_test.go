package duration

import (
	"errors"
	"testing"
	"time"
)

func TestParseDurationAndAge(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"90s": 90 * time.Second, "2h30m": 150 * time.Minute, "1d": 24 * time.Hour, "90d": 90 * 24 * time.Hour,
		"1d12h": 36 * time.Hour, "0d": 0, "500ms": 500 * time.Millisecond,
	} {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "d", "1.5d", "-1d", "2 days", "1d-1h", "abc"} {
		if _, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) accepted", in)
		}
	}
	for _, in := range []string{"1m", "6m", "1h30m"} {
		if _, err := ParseAge(in); !errors.Is(err, ErrAmbiguousMinutes) {
			t.Errorf("ParseAge(%q) = %v, want ErrAmbiguousMinutes", in, err)
		}
	}
	if got, err := ParseAge("90d"); err != nil || got != 90*24*time.Hour {
		t.Errorf("ParseAge(90d) = %v, %v", got, err)
	}
}
