package quota

import (
	"testing"
	"time"
)

// The suite's counter cases (runBackendSuite runs them under "counter").
// Their buckets name their algorithm and slots, so they also cover N > 2.

// suiteCounterRetryAfter: a counter bucket's Retry-After is the estimate's
// and never early: just before it the call is still denied, just after it
// admitted; Status reports the same wait.
func suiteCounterRetryAfter(t *testing.T, b Backend, cred string) {
	for _, slots := range []int{2, 4} {
		const window = 1500 * time.Millisecond
		units := Bucket{Name: "units" + string(rune('0'+slots)), Limit: 10, Window: window, Algorithm: AlgorithmCounter, Slots: slots}
		for range 10 {
			mustAllow(t, b, cred, charge(units, 1))
		}
		d := mustDeny(t, b, cred, charge(units, 1), units.Name)
		got := time.Now()
		if d.RetryAfter > window+units.SubWindow() {
			t.Fatalf("slots %d: RetryAfter = %v, want <= window + one sub-window (%v)", slots, d.RetryAfter, window+units.SubWindow())
		}
		st := mustStatus(t, b, cred, []Bucket{units}, map[string]int64{units.Name: 1})
		approx(t, "Status RetryAfterOne", st.Buckets[0].RetryAfterOne, d.RetryAfter-st.Now.Sub(d.Now), 2*time.Millisecond)
		if d.RetryAfter > 40*time.Millisecond {
			time.Sleep(time.Until(got.Add(d.RetryAfter - 30*time.Millisecond)))
			mustDeny(t, b, cred, charge(units, 1), units.Name)
		}
		time.Sleep(time.Until(got.Add(d.RetryAfter + 3*time.Millisecond)))
		mustAllow(t, b, cred, charge(units, 1))
	}
}

// suiteCounterStatus: Status of a counter bucket reports the estimate
// (whole units, rounded up), no entries or oldest entry, and reads without
// writing.
func suiteCounterStatus(t *testing.T, b Backend, cred string) {
	units := Bucket{Name: "units", Limit: 10, Window: time.Hour, Algorithm: AlgorithmCounter, Slots: 3}
	buckets := []Bucket{units}
	maxCost := map[string]int64{"units": 5}
	empty := mustStatus(t, b, cred, buckets, maxCost).Buckets[0]
	if empty.Used != 0 || empty.Remaining != 10 || empty.Entries != 0 || !empty.Oldest.IsZero() ||
		empty.RetryAfterOne != 0 || empty.RetryAfterMax != 0 || empty.UsedToday != 0 || empty.MaxCost != 5 {
		t.Fatalf("empty counter Status = %+v", empty)
	}
	if empty.Algorithm != AlgorithmCounter || empty.Slots != 3 {
		t.Fatalf("Status bucket = %+v, want algorithm counter with 3 slots", empty.Bucket)
	}
	mustAllow(t, b, cred, charge(units, 3))
	mustAllow(t, b, cred, charge(units, 4))
	st := mustStatus(t, b, cred, buckets, maxCost)
	bs := st.Buckets[0]
	if bs.Used != 7 || bs.Remaining != 3 || bs.Entries != 0 || !bs.Oldest.IsZero() || bs.RetryAfterOne != 0 {
		t.Fatalf("counter Status = %+v, want used 7 remaining 3, no entries", bs)
	}
	// A cost-5 call waits until the counter holding the 7 units leaves the
	// window far enough: within the window and one sub-window.
	if bs.RetryAfterMax <= 0 || bs.RetryAfterMax > time.Hour+units.SubWindow() {
		t.Fatalf("RetryAfterMax = %v, want in (0, %v]", bs.RetryAfterMax, time.Hour+units.SubWindow())
	}
	if !nearMidnight(st.Now) && bs.UsedToday != 7 {
		t.Fatalf("UsedToday = %d, want 7", bs.UsedToday)
	}
	for range 10 {
		if again := mustStatus(t, b, cred, buckets, maxCost); stateOf(again) != stateOf(st) {
			t.Fatalf("Status changed the state:\nfirst %s\nlater %s", stateOf(st), stateOf(again))
		}
	}
	mustAllow(t, b, cred, charge(units, 3))
	d := mustDeny(t, b, cred, charge(units, 1), "units")
	if d.Remaining["units"] != 0 {
		t.Fatalf("Remaining = %d when full, want 0", d.Remaining["units"])
	}
}

// suiteCounterRefund: a refund gives a counter bucket its units back once;
// refunding the reservation again (or a copy of it) gives nothing more.
func suiteCounterRefund(t *testing.T, b Backend, cred string) {
	units := Bucket{Name: "units", Limit: 3, Window: time.Hour, Algorithm: AlgorithmCounter}
	daily := Bucket{Name: "daily", Limit: 100, Calendar: true}
	first := mustAllow(t, b, cred, charge(units, 2, daily, int64(2)))
	mustAllow(t, b, cred, charge(units, 1, daily, int64(1)))
	mustDeny(t, b, cred, charge(units, 1), "units")
	copied := first.Reservation
	mustRefund(t, b, cred, first.Reservation)
	st := mustStatus(t, b, cred, []Bucket{units, daily}, nil)
	if u, dl := st.Buckets[0], st.Buckets[1]; u.Used != 1 || dl.Used != 1 {
		t.Fatalf("after the refund: units used %d, daily used %d; want 1 and 1", u.Used, dl.Used)
	}
	mustRefund(t, b, cred, first.Reservation)
	mustRefund(t, b, cred, copied)
	if again := mustStatus(t, b, cred, []Bucket{units, daily}, nil); stateOf(again) != stateOf(st) {
		t.Fatalf("refunding twice changed the state:\nbefore %s\nafter  %s", stateOf(st), stateOf(again))
	}
	mustAllow(t, b, cred, charge(units, 2))
	mustDeny(t, b, cred, charge(units, 1), "units")
}
