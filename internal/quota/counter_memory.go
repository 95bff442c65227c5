package quota

import "time"

// memoryCounter is one counter bucket of the memory backend: a ring of n
// counters, position j mod n holding counter j (a position whose stored
// index is not j holds an older counter, i.e. 0 for j). O(n) memory.
type memoryCounter struct {
	spanUS int64   // the sub-window length the ring was made for
	slot   []int64 // counter index at each position; -1 = never used
	units  []int64
	newest int64 // the latest stamp recorded (Unix µs), for clock steps
}

func newMemoryCounter(b Bucket) *memoryCounter {
	n := b.CounterSlots()
	c := &memoryCounter{spanUS: b.SubWindow().Microseconds(), slot: make([]int64, n), units: make([]int64, n)}
	for i := range c.slot {
		c.slot[i] = -1
	}
	return c
}

// window returns the counters of b at nowUS (see counterWindow).
func (mc *memoryCounter) window(b Bucket, nowUS int64) counterWindow {
	w := counterWindow{cs: counterSpecOf(b), now: nowUS, u: make([]int64, len(mc.slot))}
	c, _ := w.cs.slot(nowUS)
	n := int64(w.cs.n)
	for i := range w.u {
		j := c - n + 1 + int64(i)
		if p := j % n; j >= 0 && mc.slot[p] == j {
			w.u[i] = mc.units[p]
		}
	}
	return w
}

// fitsBucket reports whether mc was made for b's configuration (slots, span).
func (mc *memoryCounter) fitsBucket(b Bucket) bool {
	return mc != nil && len(mc.slot) == b.CounterSlots() && mc.spanUS == b.SubWindow().Microseconds()
}

// add records units at ts (Unix µs) in the counter containing ts.
func (mc *memoryCounter) add(b Bucket, ts, units int64) {
	j, _ := counterSpecOf(b).slot(ts)
	p := j % int64(len(mc.slot))
	if mc.slot[p] != j {
		mc.slot[p], mc.units[p] = j, 0
	}
	mc.units[p] += units
	mc.newest = max(mc.newest, ts)
}

// refund takes units recorded at at back from its counter, when that
// counter is still kept and at is still in the window at nowUS.
func (mc *memoryCounter) refund(b Bucket, at, units, nowUS int64) {
	if at <= nowUS-b.Window.Microseconds() {
		return
	}
	j, _ := counterSpecOf(b).slot(at)
	if p := j % int64(len(mc.slot)); mc.slot[p] == j {
		mc.units[p] = max(mc.units[p]-units, 0)
	}
}

// decide is the read half of a counter bucket's reservation in the memory
// backend: the window at the decision's moment (the clock, or the newest
// stamp if the clock reads up to ClockStepTolerance earlier), whether cost
// fits, and if not its Retry-After (counterDecide).
func (mc *memoryCounter) decide(b Bucket, cost, nowUS int64) (counterWindow, bool, time.Duration) {
	w := mc.window(b, max(nowUS, mc.newest))
	fits, ra := counterDecide(w, b, cost, nowUS)
	return w, fits, ra
}
