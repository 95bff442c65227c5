package schedule

import (
	"testing"
	"time"
)

func TestSlots(t *testing.T) {
	e := Every{Interval: 2 * time.Hour, Offset: 3 * time.Minute, Location: time.UTC}
	slots, more := Slots(e, utc("2026-03-10T10:03:00Z"), utc("2026-03-10T16:03:00Z"), 10)
	want := []string{"2026-03-10T10:03:00Z", "2026-03-10T12:03:00Z", "2026-03-10T14:03:00Z", "2026-03-10T16:03:00Z"}
	if more || len(slots) != len(want) {
		t.Fatalf("Slots = %v (more %v), want starts %v", slots, more, want)
	}
	for i, s := range slots {
		if !s[0].Equal(utc(want[i])) || !s[1].Equal(s[0].Add(2*time.Hour)) {
			t.Errorf("slot %d = %v, want %s to 2h later", i, s, want[i])
		}
	}
	if slots, more = Slots(e, utc("2026-03-10T10:03:00.001Z"), utc("2026-03-10T16:03:00Z"), 2); !more || len(slots) != 2 ||
		!slots[0][0].Equal(utc("2026-03-10T12:03:00Z")) {
		t.Errorf("Slots from just after a tick, limit 2 = %v (more %v), want 12:03 and 14:03, more", slots, more)
	}
}
