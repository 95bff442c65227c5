package quota

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

// The sliding-window counter against the exact log, on a simulated clock
// (the memory and SQLite backends take one; Redis TIME cannot be moved,
// so TestRedisCounterAgreesWithMemory checks Redis on a live clock).

// simReq is one request of a simulated demand: at t µs after the start.
type simReq struct{ t, cost int64 }

// simStart is the simulation's epoch: a whole hour, so that sub-windows
// of every window used here start with it.
var simStart = time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)

// simulate runs demand against bucket b on backend newB(clock) and
// returns the admitted requests (in order) and the denied ones.
func simulate(t *testing.T, newB func(clock func() time.Time) Backend, b Bucket, demand []simReq) (admitted, denied []simReq) {
	t.Helper()
	var now time.Time
	be := newB(func() time.Time { return now })
	ctx := context.Background()
	for _, r := range demand {
		now = simStart.Add(time.Duration(r.t) * time.Microsecond)
		d, err := be.Reserve(ctx, "sim", []BucketCharge{{Bucket: b, Units: r.cost}})
		if err != nil {
			t.Fatalf("Reserve: %v", err)
		}
		if d.Allowed {
			admitted = append(admitted, r)
		} else {
			denied = append(denied, r)
		}
	}
	return admitted, denied
}

func memorySim(clock func() time.Time) Backend { return NewMemory(WithMemoryClock(clock)) }

// accuracy measures an admitted sequence against the exact rule "at most
// limit units in any window (t-W, t]":
//   - over: the most units in any window minus the limit (0 if never
//     above): over-admission;
//   - under: at a denial, the most units the exact rule still had free
//     (limit - units in the window ending then) beyond the denied cost - 1:
//     under-admission (0 if every denial was one the exact log makes too);
//   - maxSlot: the most units admitted into one sub-window of slotUS µs.
//
// With slots > 0 it also checks, decision by decision, the bound doc.go
// states for a counter of slots counters of slotUS µs: at an admission, the
// units in the window exceed the limit by at most old*(1-ov/slotUS), the
// oldest counter's units times the part of it already out of the window;
// at a denial, the exact rule's free units minus the cost are below
// old*ov/slotUS, that counter's weighted share. It returns the first
// violation as bad.
func accuracy(admitted, denied []simReq, limit, windowUS, slotUS int64, slots int) (over, under, maxSlot int64, bad string) {
	inWindow := func(t int64) (sum int64) {
		i := sort.Search(len(admitted), func(i int) bool { return admitted[i].t > t-windowUS })
		for ; i < len(admitted) && admitted[i].t <= t; i++ {
			sum += admitted[i].cost
		}
		return sum
	}
	slotOf := func(t int64) int64 { return (simStart.UnixMicro() + t) / slotUS }
	// oldest returns, at t, the units admitted before t into the oldest
	// counter (c-slots+1) and its overlap with the window, in µs.
	oldest := func(t int64) (old, ov int64) {
		c := slotOf(t)
		for _, a := range admitted {
			if a.t < t && slotOf(a.t) == c-int64(slots)+1 {
				old += a.cost
			}
		}
		return old, slotUS - 1 - (simStart.UnixMicro()+t)%slotUS
	}
	for _, a := range admitted {
		excess := inWindow(a.t) - limit
		over = max(over, excess)
		if slots > 0 && excess > 0 && bad == "" {
			if old, ov := oldest(a.t); float64(excess) > float64(old)*float64(slotUS-ov)/float64(slotUS) {
				bad = fmt.Sprintf("admission at %d µs: %d units over the limit, more than the oldest counter's %d units x %d/%d out of the window", a.t, excess, old, slotUS-ov, slotUS)
			}
		}
	}
	for _, d := range denied {
		free := limit - inWindow(d.t)
		if free >= d.cost {
			under = max(under, free-(d.cost-1))
		}
		if slots > 0 && bad == "" {
			if old, ov := oldest(d.t); float64(free-d.cost) >= float64(old)*float64(ov)/float64(slotUS) {
				bad = fmt.Sprintf("denial at %d µs with %d units free for a cost of %d: not below the oldest counter's share %d x %d/%d", d.t, free, d.cost, old, ov, slotUS)
			}
		}
	}
	slotSums := map[int64]int64{}
	for _, a := range admitted {
		slotSums[slotOf(a.t)] += a.cost
		maxSlot = max(maxSlot, slotSums[slotOf(a.t)])
	}
	return over, under, maxSlot, bad
}

// uniformDemand: one cost-1 request every gap µs for n requests.
func uniformDemand(gap, n int64) []simReq {
	out := make([]simReq, n)
	for i := range out {
		out[i] = simReq{t: int64(i) * gap, cost: 1}
	}
	return out
}

// burstyDemand: bursts of 1..maxBurst cost-1 requests 1 µs apart, the
// bursts' starts drawn uniformly over span µs (seeded).
func burstyDemand(rng *rand.Rand, bursts int, maxBurst, span int64) []simReq {
	starts := make([]int64, bursts)
	for i := range starts {
		starts[i] = rng.Int64N(span)
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
	var out []simReq
	last := int64(-1)
	for _, s := range starts {
		s = max(s, last+1)
		k := 1 + rng.Int64N(maxBurst)
		for j := range k {
			out = append(out, simReq{t: s + j, cost: 1})
		}
		last = s + k - 1
	}
	return out
}

// TestCounterAccuracy measures the counter's over- and under-admission
// against the exact rule on uniform and bursty demand, for 2 to 61 slots,
// and asserts the documented bounds (doc.go, "Sliding-window counter"):
//   - decision by decision: over-admission at most the oldest counter's
//     units times the part of it out of the window, under-admission below
//     its weighted share (accuracy);
//   - hence always: over- and under-admission are at most the units of one
//     sub-window (maxSlot), so at most the limit;
//   - uniform demand at twice the limit's rate: over-admission at most
//     limit/(slots-1) (one sub-window's share), under-admission likewise;
//   - the exact log (the same backend, algorithm log) never over-admits.
//
// The figures are logged (go test -v -run TestCounterAccuracy) and quoted
// in doc.go.
func TestCounterAccuracy(t *testing.T) {
	const (
		limit  = 600
		window = time.Minute
	)
	wUS := window.Microseconds()
	rng := rand.New(rand.NewPCG(13, 2))
	demands := []struct {
		name    string
		reqs    []simReq
		uniform bool
	}{
		// 2x the limit's rate for 5 windows.
		{"uniform", uniformDemand(wUS/(2*limit), 10*limit), true},
		// ~3x the limit per window, in bursts of up to limit/4, over 5 windows.
		{"bursty", burstyDemand(rng, 60, limit/4, 5*wUS), false},
		// bursts of up to a whole limit: the counter's worst case.
		{"bursty-large", burstyDemand(rng, 12, limit, 5*wUS), false},
	}
	for _, dm := range demands {
		logB := Bucket{Name: "b", Limit: limit, Window: window}
		adm, den := simulate(t, memorySim, logB, dm.reqs)
		if over, _, _, _ := accuracy(adm, den, limit, wUS, wUS, 0); over != 0 {
			t.Errorf("%s: the exact log over-admitted by %d", dm.name, over)
		}
		logTotal := len(adm)
		for _, slots := range []int{2, 3, 5, 13, 61} {
			b := Bucket{Name: "b", Limit: limit, Window: window, Algorithm: AlgorithmCounter, Slots: slots}
			adm, den := simulate(t, memorySim, b, dm.reqs)
			over, under, maxSlot, bad := accuracy(adm, den, limit, wUS, b.SubWindow().Microseconds(), slots)
			if bad != "" {
				t.Errorf("%s, slots %d: %s", dm.name, slots, bad)
			}
			t.Logf("%-12s slots %2d: admitted %5d (log %5d), over-admission %3d units (%.1f%% of the limit), under-admission %3d, max units in one sub-window %3d",
				dm.name, slots, len(adm), logTotal, over, 100*float64(over)/limit, under, maxSlot)
			if over > maxSlot || under > maxSlot {
				t.Errorf("%s, slots %d: over %d / under %d exceed the units of one sub-window (%d)", dm.name, slots, over, under, maxSlot)
			}
			if share := int64(limit / (slots - 1)); dm.uniform && (over > share || under > share) {
				t.Errorf("%s, slots %d: over %d / under %d exceed limit/(slots-1) = %d", dm.name, slots, over, under, share)
			}
		}
	}
}

// TestCounterBackendsAgree: the SQLite backend decides a bursty demand
// exactly as the memory backend (the same estimate in the same doubles).
func TestCounterBackendsAgree(t *testing.T) {
	const window = 10 * time.Second
	demand := burstyDemand(rand.New(rand.NewPCG(7, 7)), 40, 30, 4*window.Microseconds())
	for _, slots := range []int{2, 6} {
		b := Bucket{Name: "b", Limit: 50, Window: window, Algorithm: AlgorithmCounter, Slots: slots}
		memAdm, _ := simulate(t, memorySim, b, demand)
		sqlAdm, _ := simulate(t, func(clock func() time.Time) Backend { return newTestSQLite(t, WithClock(clock)) }, b, demand)
		if len(memAdm) != len(sqlAdm) {
			t.Fatalf("slots %d: memory admitted %d, SQLite %d", slots, len(memAdm), len(sqlAdm))
		}
		for i := range memAdm {
			if memAdm[i] != sqlAdm[i] {
				t.Fatalf("slots %d: admission %d: memory %v, SQLite %v", slots, i, memAdm[i], sqlAdm[i])
			}
		}
	}
}

// TestCounterBoundaryBurst is the seed article's boundary burst: a full
// burst just before a window boundary and another just after. A fixed
// window admits both (2x the limit within a few ms); the log admits one.
// The counter admits one burst plus what the estimate frees in the 2 ms
// between them, with any number of slots. Its own worst case is the same
// two bursts placed around the moment the first one's counter leaves the
// window (the first burst at the very end of a sub-window, the second one
// a window later): then it admits up to 2x the limit, whatever the slots,
// which is the bound documented in doc.go.
func TestCounterBoundaryBurst(t *testing.T) {
	const (
		limit  = 100
		window = time.Minute
	)
	wUS := window.Microseconds()
	burst := func(at int64) []simReq {
		out := make([]simReq, 2*limit)
		for i := range out {
			out[i] = simReq{t: at + int64(i%limit), cost: 1}
		}
		return out
	}
	// Fixed window (the article's baseline), by its definition.
	fixed := func(reqs []simReq) (n int64) {
		per := map[int64]int64{}
		for _, r := range reqs {
			if k := (simStart.UnixMicro() + r.t) / wUS; per[k]+r.cost <= limit {
				per[k] += r.cost
				n++
			}
		}
		return n
	}
	// Bursts at boundary - 1 ms and boundary + 1 ms (each limit requests
	// 1 µs apart, then limit more that must all be denied).
	boundary := 5 * wUS
	classic := append(burst(boundary-1000-limit), burst(boundary+1000)...)
	if got := fixed(classic); got != 2*limit {
		t.Fatalf("fixed window admitted %d, want %d (the article's failure)", got, 2*limit)
	}
	logAdm, _ := simulate(t, memorySim, Bucket{Name: "b", Limit: limit, Window: window}, classic)
	t.Logf("boundary burst: fixed window %d, log %d", fixed(classic), len(logAdm))
	if len(logAdm) != limit {
		t.Fatalf("log admitted %d, want %d", len(logAdm), limit)
	}
	for _, slots := range []int{2, 3, 5, 61} {
		b := Bucket{Name: "b", Limit: limit, Window: window, Algorithm: AlgorithmCounter, Slots: slots}
		adm, _ := simulate(t, memorySim, b, classic)
		// N = 2: the first burst's counter is weighted (W-1ms)/W right
		// after the boundary, so ceil(limit*1ms/W)-ish units are freed: 0
		// here; N > 2: the counter is wholly inside the window.
		t.Logf("boundary burst: counter, slots %2d: %d admitted (limit %d)", slots, len(adm), limit)
		if len(adm) > limit+limit*2000/int(wUS)+1 {
			t.Errorf("slots %d: counter admitted %d in the boundary burst, want about %d", slots, len(adm), limit)
		}
		// The counter's worst case: the first burst in the last µs of a
		// sub-window, the second one a window later, when the first
		// burst's counter is weighted almost 0 but the burst is still in
		// the window.
		sub := b.SubWindow().Microseconds()
		first := 5*wUS - limit // ends at a sub-window's last µs
		worst := append(burst(first), burst(first+wUS-sub+sub-limit-1)...)
		adm, _ = simulate(t, memorySim, b, worst)
		t.Logf("worst case:     counter, slots %2d: %d admitted within one window (limit %d)", slots, len(adm), limit)
		if len(adm) >= 2*limit {
			t.Errorf("slots %d: worst case admitted %d, want < 2x the limit", slots, len(adm))
		}
	}
}
