package quota

import (
	"fmt"
	"sync/atomic"
	"time"
)

// Algorithm selects how a bucket counts the units of its window.
type Algorithm string

const (
	// AlgorithmLog is the exact weighted sliding-window log: one entry per
	// admitted call, exact admission, exact Retry-After (DESIGN.md §4
	// "Sliding-window log"). It is the default; "" means log.
	AlgorithmLog Algorithm = "log"
	// AlgorithmCounter is the sliding-window counter (the seed note's
	// "Sliding Window Counter", DESIGN.md §4): fixed sub-window counters and
	// an estimate of the rolling count, O(Slots) memory whatever the limit
	// and the call rate. It is approximate; doc.go ("Sliding-window
	// counter") states the bound and the measured error.
	AlgorithmCounter Algorithm = "counter"
)

// Bounds of Bucket.Slots for a counter bucket.
const (
	// DefaultCounterSlots is the number of counters of a counter bucket
	// whose Slots is 0: the seed note's two fixed windows (previous and
	// current), each a whole window long.
	DefaultCounterSlots = 2
	// MinCounterSlots and MaxCounterSlots bound Bucket.Slots (counters per
	// bucket, one more than the sub-windows of a window): 3601 gives a
	// one-hour window 1-second sub-windows, the seed article's "1-second
	// hash fields summed over the trailing window" (61 a one-minute one).
	MinCounterSlots = 2
	MaxCounterSlots = 3601
)

// IsCounter reports whether b uses AlgorithmCounter.
func (b Bucket) IsCounter() bool { return b.Algorithm == AlgorithmCounter }

// CounterSlots returns the number of counters a counter bucket keeps
// (Slots, or DefaultCounterSlots when 0); 0 for a log bucket.
func (b Bucket) CounterSlots() int {
	if !b.IsCounter() {
		return 0
	}
	if b.Slots == 0 {
		return DefaultCounterSlots
	}
	return b.Slots
}

// SubWindow returns the length of one counter of a counter bucket,
// Window/(CounterSlots()-1); 0 for a log bucket.
func (b Bucket) SubWindow() time.Duration {
	n := b.CounterSlots()
	if n < 2 {
		return 0
	}
	return b.Window / time.Duration(n-1)
}

// CheckAlgorithm reports a bucket whose algorithm settings are invalid: an
// unknown algorithm, Slots on a log bucket, Slots outside
// MinCounterSlots..MaxCounterSlots, a counter on a calendar bucket, or a
// window that Slots-1 sub-windows cannot split into whole microseconds. The
// error is an *AlgorithmError naming the setting; nil when valid.
func (b Bucket) CheckAlgorithm() error {
	bad := func(setting string, value any, format string, args ...any) error {
		return &AlgorithmError{Bucket: b.Name, Setting: setting, Value: value, Reason: fmt.Sprintf(format, args...)}
	}
	switch b.Algorithm {
	case "", AlgorithmLog:
		if b.Slots != 0 {
			return bad("slots", b.Slots, "applies to algorithm: counter only")
		}
		return nil
	case AlgorithmCounter:
	default:
		return bad("algorithm", b.Algorithm, "want log or counter")
	}
	if b.Calendar {
		return bad("algorithm", b.Algorithm, "cannot be combined with calendar: true (a Pacific day is counted by the log)")
	}
	n := b.CounterSlots()
	if n < MinCounterSlots || n > MaxCounterSlots {
		return bad("slots", n, "want %d-%d counters", MinCounterSlots, MaxCounterSlots)
	}
	if us := b.Window.Microseconds(); b.Window%time.Microsecond != 0 || us%int64(n-1) != 0 || us/int64(n-1) < 1 {
		return bad("slots", n, "window %s does not split into %d sub-windows of whole microseconds", b.Window, n-1)
	}
	return nil
}

// AlgorithmError is Bucket.CheckAlgorithm's error: Setting ("algorithm" or
// "slots") of bucket Bucket has Value, which is invalid for Reason.
type AlgorithmError struct {
	Bucket, Setting string
	Value           any
	Reason          string
}

// Error implements error: quota: bucket "<name>": <setting> <value>: <reason>.
func (e *AlgorithmError) Error() string {
	return fmt.Sprintf("quota: bucket %q: %s %v: %s", e.Bucket, e.Setting, e.Value, e.Reason)
}

// counterSpec is the geometry of a counter bucket: n counters, each slotUS
// µs long, aligned to the Unix epoch (counter j covers
// [j*slotUS, (j+1)*slotUS) µs).
type counterSpec struct {
	n      int
	slotUS int64
}

func counterSpecOf(b Bucket) counterSpec {
	return counterSpec{n: b.CounterSlots(), slotUS: b.SubWindow().Microseconds()}
}

// slot returns the index of the counter containing t (Unix µs, >= 0) and
// t's offset into it.
func (cs counterSpec) slot(t int64) (j, r int64) {
	return t / cs.slotUS, t % cs.slotUS
}

// counterWindow is what a counter bucket's counters say at a moment now:
// u[i] holds the units of counter c-n+1+i, where c is the counter
// containing now (u[n-1] is the current counter, u[0] the oldest, which the
// window only partly covers).
type counterWindow struct {
	cs  counterSpec
	now int64 // Unix µs
	u   []int64
}

// The estimate. The window at now is (now-W, now] with W = (n-1)*slotUS,
// like the log's (an entry stamped now-W is out). It covers counters
// c-n+2..c whole and the last ov = slotUS-1-r µs of counter c-n+1, r being
// now's offset into counter c. The units of counter c-n+1 are assumed
// evenly spread over it (the seed note's assumption), so they count with
// the weight ov/slotUS:
//
//	estimate = full + old*ov/slotUS, full = u[1]+...+u[n-1], old = u[0]
//
// With n = 2 this is the seed note's "previous x overlap + current". The
// weighted part is computed in IEEE doubles as (old*ov)/slotUS, the same
// operations in Go and in the Redis Lua script, so every backend decides
// alike.

// parts returns full and the oldest counter's units and overlap (µs).
func (w counterWindow) parts() (full, old, ov int64) {
	for _, v := range w.u[1:] {
		full += v
	}
	_, r := w.cs.slot(w.now)
	return full, w.u[0], w.cs.slotUS - 1 - r
}

// weighted is old*ov/slotUS in doubles (see the estimate above).
func (cs counterSpec) weighted(old, ov int64) float64 {
	return float64(old) * float64(ov) / float64(cs.slotUS)
}

// fits reports whether cost more units fit under limit at w.now:
// full + cost + old*ov/slotUS <= limit.
func (w counterWindow) fits(limit, cost int64) bool {
	full, old, ov := w.parts()
	return w.cs.weighted(old, ov) <= float64(limit-full-cost)
}

// used is the estimate rounded up to whole units (never under-reported).
func (w counterWindow) used() int64 {
	full, old, ov := w.parts()
	return full + ceilInt(w.cs.weighted(old, ov))
}

func ceilInt(x float64) int64 {
	i := int64(x)
	if float64(i) < x {
		i++
	}
	return i
}

// retryUS returns the µs after w.now at which a call of cost first fits
// (0 if it fits now), assuming nothing else is admitted meanwhile: the
// estimate's Retry-After. Without admissions the estimate never grows: it
// falls linearly inside a counter as the oldest one's overlap shrinks, and
// steps down when a counter leaves the window, so the first moment it fits
// is found counter by counter (at most n of them) and, inside one, solved
// from the weighted part with the same predicate as fits (never early). A
// cost above limit never fits: 0.
func (w counterWindow) retryUS(limit, cost int64) int64 {
	if cost > limit || w.fits(limit, cost) {
		return 0
	}
	cs := w.cs
	c, r := cs.slot(w.now)
	n := cs.n
	for k := 0; k < n; k++ { // the current counter is c+k; counters > c are empty
		old := w.u[k]
		var full int64
		for _, v := range w.u[k+1:] {
			full += v
		}
		room := limit - full - cost
		if room < 0 {
			continue
		}
		r0 := int64(0)
		if k == 0 {
			r0 = r
		}
		ok := func(rr int64) bool { return cs.weighted(old, cs.slotUS-1-rr) <= float64(room) }
		rr := r0
		if old > 0 {
			// the largest overlap that fits, floor(room*slotUS/old), at
			// most slotUS-1 (compared as a double first: no int64 overflow)
			ovMax := cs.slotUS - 1
			if f := float64(room) * float64(cs.slotUS) / float64(old); f < float64(ovMax) {
				ovMax = int64(f)
			}
			rr = max(r0, cs.slotUS-1-ovMax)
		}
		for rr < cs.slotUS-1 && !ok(rr) {
			rr++
		}
		for rr > r0 && ok(rr-1) {
			rr--
		}
		return (c+int64(k))*cs.slotUS + rr - w.now
	}
	// Unreachable: in counter c+n-1 only counter c is left, at weight 0 by
	// its last µs, and cost <= limit.
	return int64(n) * cs.slotUS
}

// usedSince is the units of the counters w holds that start at or
// after midnightUS: UsedToday of a counter bucket, a lower bound (the
// counter straddling midnight and older ones are not counted).
func (w counterWindow) usedSince(midnightUS int64) (used int64) {
	c, _ := w.cs.slot(w.now)
	for i, v := range w.u {
		if (c-int64(w.cs.n-1)+int64(i))*w.cs.slotUS >= midnightUS {
			used += v
		}
	}
	return used
}

// counterDecide decides cost in counter bucket b from its window w, read
// at w.now >= nowUS (the latest stamp, when the clock reads a little
// earlier): whether it fits, and if not, the Retry-After (at least 1 µs).
func counterDecide(w counterWindow, b Bucket, cost, nowUS int64) (fits bool, retryAfter time.Duration) {
	if w.fits(b.Limit, cost) {
		return true, 0
	}
	return false, time.Duration(max(w.retryUS(b.Limit, cost)+w.now-nowUS, 1)) * time.Microsecond
}

// claimRefund marks r refunded when it charged a counter bucket and
// reports whether this call may give its units back: a counter cannot tell
// one call's units from another's, so the Reservation (every copy of it
// shares the mark) remembers the refund. A Refund that fails without
// having changed anything must call release (one that may have applied
// must not). Reservations of log buckets only are always claimable: their
// entries are found by identity.
func (r Reservation) claimRefund() (ok bool, release func()) {
	if r.refunded == nil {
		return true, func() {}
	}
	if !r.refunded.CompareAndSwap(false, true) {
		return false, func() {}
	}
	return true, func() { r.refunded.Store(false) }
}

// newCounterMark returns the refund mark of a Reservation that charges a
// counter bucket (see claimRefund), nil otherwise.
func newCounterMark(charges []BucketCharge) *atomic.Bool {
	for _, c := range charges {
		if c.IsCounter() {
			return new(atomic.Bool)
		}
	}
	return nil
}

// counterStatus is the BucketStatus of counter bucket b from its window w
// at the status's moment: Used is the estimate rounded up, the Retry-After
// figures are the estimate's (counterWindow.retryUS), UsedToday is a lower
// bound (counterWindow.usedSince), and Entries and Oldest are unknown to a
// counter (0 and the zero time). maxCost <= 0 counts as 1.
func counterStatus(b Bucket, w counterWindow, maxCost, midnightUS int64) BucketStatus {
	used := w.used()
	bs := BucketStatus{Bucket: b, Used: used, Remaining: max(b.Limit-used, 0), MaxCost: max(maxCost, 1)}
	bs.RetryAfterOne = time.Duration(w.retryUS(b.Limit, 1)) * time.Microsecond
	bs.RetryAfterMax = time.Duration(w.retryUS(b.Limit, bs.MaxCost)) * time.Microsecond
	bs.UsedToday = w.usedSince(midnightUS)
	return bs
}
