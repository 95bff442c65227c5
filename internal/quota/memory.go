package quota

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// MemoryBackend is a Backend held in process memory: the same
// sliding-window log as the SQLite and Redis backends (one entry per
// admitted call with its units, microsecond timestamps from the local
// clock), for one process only. `trendfetch serve` uses it to rate-limit
// clients of a single instance; several instances share one budget per
// client through Redis instead. Nothing survives a restart.
//
// Memory: a bucket keeps the entries of its window and of the current
// Pacific day (for UsedToday), at most Limit entries per window; a
// credential whose entries have all expired is dropped by a sweep every
// memorySweepEvery reservations, so memory stays bounded by the active
// clients. Decisions cost O(entries in the window) of the bucket.
//
// The clock is the local clock, with the SQLite backend's rules for clock
// steps (doc.go, "Clock steps"; ClockStepTolerance). Refund removes a
// reservation's entries by their ids, in O(entries of the bucket).
type MemoryBackend struct {
	mu      sync.Mutex
	clock   func() time.Time
	creds   map[string]*memoryCredential
	reserve int   // reservations since the last sweep
	lastID  int64 // the id of the newest entry recorded (ids start at 1)
}

// memorySweepEvery is how many reservations pass between sweeps of idle
// credentials.
const memorySweepEvery = 1024

type memoryCredential struct {
	logs      map[string]*memoryLog     // by bucket name
	counters  map[string]*memoryCounter // counter buckets, by name
	exhausted int64                     // µs; 0 = none
}

// counter returns the counters of b, new ones if there are none yet or if
// b's number of slots changed (its usage is then forgotten).
func (cr *memoryCredential) counter(b Bucket) *memoryCounter {
	mc := cr.counters[b.Name]
	if !mc.fitsBucket(b) {
		mc = newMemoryCounter(b)
		if cr.counters == nil {
			cr.counters = map[string]*memoryCounter{}
		}
		cr.counters[b.Name] = mc
	}
	return mc
}

// memoryLog is one bucket's log, oldest first.
type memoryLog struct {
	ts    []int64 // µs, non-decreasing
	units []int64
	ids   []int64 // unique per backend, increasing: the entry's identity for Refund
}

// MemoryOption configures NewMemory.
type MemoryOption func(*MemoryBackend)

// WithMemoryClock makes the backend read time from now instead of
// time.Now (tests step it to check Retry-After exactly).
func WithMemoryClock(now func() time.Time) MemoryOption {
	return func(m *MemoryBackend) { m.clock = now }
}

// NewMemory returns an empty in-memory backend.
func NewMemory(opts ...MemoryOption) *MemoryBackend {
	m := &MemoryBackend{clock: time.Now, creds: map[string]*memoryCredential{}}
	for _, o := range opts {
		o(m)
	}
	return m
}

// Name implements Backend.
func (m *MemoryBackend) Name() string { return "memory" }

// Close implements Backend; it frees nothing (the garbage collector does).
func (m *MemoryBackend) Close() error { return nil }

// window returns the units and entries of l with ts > cutoff, and the
// index of the first such entry.
func (l *memoryLog) window(cutoff int64) (used, entries int64, first int) {
	first = len(l.ts)
	for i := len(l.ts) - 1; i >= 0 && l.ts[i] > cutoff; i-- {
		used += l.units[i]
		entries++
		first = i
	}
	return used, entries, first
}

// retryAfter returns how long after nowUS a call of units fits in b (0 when
// it fits now), with the rule of the other backends: the entry that frees
// the last needed unit stops counting at exactly ts + window; a calendar
// bucket frees everything at the next Pacific midnight.
func (l *memoryLog) retryAfter(b Bucket, units, nowUS int64) time.Duration {
	cutoff := sqliteCutoffUS(b, nowUS)
	used, _, first := l.window(cutoff)
	need := used + units - b.Limit
	if need <= 0 || units > b.Limit {
		return 0
	}
	if b.Calendar {
		return time.Duration(NextPacificMidnight(time.UnixMicro(nowUS)).UnixMicro()-nowUS) * time.Microsecond
	}
	freed := int64(0)
	for i := first; i < len(l.ts); i++ {
		freed += l.units[i]
		if freed >= need {
			return time.Duration(l.ts[i]+sqliteWindowUS(b.Window)-nowUS) * time.Microsecond
		}
	}
	return 0 // unreachable: the window holds used >= need units
}

// evict drops entries out of b's window that are also before the current
// Pacific day (kept for UsedToday).
func (l *memoryLog) evict(b Bucket, nowUS int64) {
	cutoff := min(sqliteCutoffUS(b, nowUS), PacificMidnight(time.UnixMicro(nowUS)).UnixMicro()-1)
	n := 0
	for n < len(l.ts) && l.ts[n] <= cutoff {
		n++
	}
	if n > 0 {
		l.ts = append(l.ts[:0], l.ts[n:]...)
		l.units = append(l.units[:0], l.units[n:]...)
		l.ids = append(l.ids[:0], l.ids[n:]...)
	}
}

// Reserve implements Backend under one mutex: it admits only if every
// charge fits its bucket (used + units <= limit) and the credential is not
// marked exhausted, then records one entry per bucket. Denials write
// nothing; RetryAfter, DeniedBucket and the refusal while the clock is
// behind a bucket's newest entry (Decision.ClockBehind) follow the SQLite
// backend's rules. A charge above its bucket's limit returns a *CostError.
// It never returns ErrUnavailable.
func (m *MemoryBackend) Reserve(ctx context.Context, credential string, charges []BucketCharge) (Decision, error) {
	for _, c := range charges {
		if c.Units <= 0 {
			return Decision{}, fmt.Errorf("quota: charge of %d units in bucket %q: must be > 0", c.Units, c.Name)
		}
		if c.Units > c.Limit {
			return Decision{}, &CostError{Bucket: c.Name, Units: c.Units, Limit: c.Limit}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	nowUS := m.clock().UnixMicro()
	if m.reserve++; m.reserve >= memorySweepEvery {
		m.reserve = 0
		m.sweep(nowUS)
	}
	d := Decision{Now: time.UnixMicro(nowUS), Remaining: make(map[string]int64, len(charges))}
	cr := m.creds[credential]
	if cr == nil {
		cr = &memoryCredential{logs: map[string]*memoryLog{}}
		m.creds[credential] = cr
	}
	if cr.exhausted > nowUS {
		d.Exhausted = true
		d.ExhaustedUntil = time.UnixMicro(cr.exhausted)
		d.RetryAfter = time.Duration(cr.exhausted-nowUS) * time.Microsecond
	}
	denied, deniedRA := "", time.Duration(0)
	logs := make([]*memoryLog, len(charges))
	for i, c := range charges {
		if c.IsCounter() {
			mc := cr.counter(c.Bucket)
			ra, behind := clockStepWait(mc.newest, nowUS)
			fits := false
			if behind > 0 {
				d.ClockBehind = max(d.ClockBehind, behind)
			} else {
				var w counterWindow
				w, fits, ra = mc.decide(c.Bucket, c.Units, nowUS)
				d.Remaining[c.Name] = max(c.Limit-w.used(), 0)
			}
			if !fits && (denied == "" || ra > deniedRA) {
				denied, deniedRA = c.Name, ra
			}
			continue
		}
		l := cr.logs[c.Name]
		if l == nil {
			l = &memoryLog{}
			cr.logs[c.Name] = l
		}
		logs[i] = l
		used, _, _ := l.window(sqliteCutoffUS(c.Bucket, nowUS))
		d.Remaining[c.Name] = max(c.Limit-used, 0)
		if n := len(l.ts); n > 0 {
			if ra, behind := clockStepWait(l.ts[n-1], nowUS); behind > 0 {
				d.ClockBehind = max(d.ClockBehind, behind)
				if denied == "" || ra > deniedRA {
					denied, deniedRA = c.Name, ra
				}
				continue
			}
		}
		if used+c.Units <= c.Limit {
			continue
		}
		if ra := l.retryAfter(c.Bucket, c.Units, nowUS); denied == "" || ra > deniedRA {
			denied, deniedRA = c.Name, ra
		}
	}
	if denied != "" {
		d.RetryAfter = max(d.RetryAfter, deniedRA)
		if !d.Exhausted {
			d.DeniedBucket = denied
		}
	}
	if d.Exhausted || denied != "" {
		return d, nil
	}
	d.Reservation.refunded = newCounterMark(charges)
	for i, c := range charges {
		if c.IsCounter() {
			mc := cr.counters[c.Name]
			at := max(nowUS, mc.newest)
			mc.add(c.Bucket, at, c.Units)
			d.Remaining[c.Name] = max(d.Remaining[c.Name]-c.Units, 0)
			d.Reservation.entries = append(d.Reservation.entries, reservedEntry{bucket: c.Bucket, units: c.Units, at: at})
			continue
		}
		l := logs[i]
		ts := nowUS
		if n := len(l.ts); n > 0 {
			ts = max(ts, l.ts[n-1]) // never before the newest entry
		}
		m.lastID++
		l.ts = append(l.ts, ts)
		l.units = append(l.units, c.Units)
		l.ids = append(l.ids, m.lastID)
		d.Remaining[c.Name] -= c.Units
		l.evict(c.Bucket, nowUS)
		d.Reservation.entries = append(d.Reservation.entries, reservedEntry{bucket: c.Bucket, units: c.Units, at: ts, id: m.lastID})
	}
	cr.exhausted = 0
	d.Allowed = true
	return d, nil
}

// Refund implements Backend under the mutex: it removes each entry of r
// (found by its id) that is still in its bucket's window at the backend
// clock; entries already gone or out of the window are skipped. It never
// returns an error.
func (m *MemoryBackend) Refund(ctx context.Context, credential string, r Reservation) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cr := m.creds[credential]
	if cr == nil {
		return nil
	}
	nowUS := m.clock().UnixMicro()
	claimed, _ := r.claimRefund()
	for _, e := range r.entries {
		if e.bucket.IsCounter() {
			if mc := cr.counters[e.bucket.Name]; claimed && mc.fitsBucket(e.bucket) {
				mc.refund(e.bucket, e.at, e.units, nowUS)
			}
			continue
		}
		l := cr.logs[e.bucket.Name]
		if l == nil || e.id == 0 || e.at <= sqliteCutoffUS(e.bucket, nowUS) {
			continue
		}
		i, found := slices.BinarySearch(l.ids, e.id)
		if !found {
			continue
		}
		l.ts = slices.Delete(l.ts, i, i+1)
		l.units = slices.Delete(l.units, i, i+1)
		l.ids = slices.Delete(l.ids, i, i+1)
	}
	return nil
}

// sweep drops credentials with no entry younger than a day and no marker.
func (m *MemoryBackend) sweep(nowUS int64) {
	dayAgo := nowUS - (25 * time.Hour).Microseconds()
	for name, cr := range m.creds {
		if cr.exhausted > nowUS {
			continue
		}
		idle := true
		for _, l := range cr.logs {
			if n := len(l.ts); n > 0 && l.ts[n-1] > dayAgo {
				idle = false
				break
			}
		}
		for _, mc := range cr.counters {
			if mc.newest > dayAgo {
				idle = false
			}
		}
		if idle {
			delete(m.creds, name)
		}
	}
}

// Status implements Backend: it reads the buckets without admitting or
// evicting anything. It never returns an error.
func (m *MemoryBackend) Status(ctx context.Context, credential string, buckets []Bucket, maxCost map[string]int64) (Status, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	nowUS := m.clock().UnixMicro()
	st := Status{Credential: credential, Backend: m.Name(), Now: time.UnixMicro(nowUS)}
	cr := m.creds[credential]
	if cr != nil && cr.exhausted > nowUS {
		st.ExhaustedUntil = time.UnixMicro(cr.exhausted)
	}
	midnightUS := PacificMidnight(st.Now).UnixMicro()
	for _, b := range buckets {
		if b.IsCounter() {
			mc := newMemoryCounter(b)
			if cr != nil && cr.counters[b.Name].fitsBucket(b) {
				mc = cr.counters[b.Name]
			}
			st.Buckets = append(st.Buckets, counterStatus(b, mc.window(b, nowUS), maxCost[b.Name], midnightUS))
			continue
		}
		l := &memoryLog{}
		if cr != nil && cr.logs[b.Name] != nil {
			l = cr.logs[b.Name]
		}
		used, entries, first := l.window(sqliteCutoffUS(b, nowUS))
		bs := BucketStatus{Bucket: b, Used: used, Remaining: max(b.Limit-used, 0), Entries: entries, MaxCost: max(maxCost[b.Name], 1)}
		if first < len(l.ts) {
			bs.Oldest = time.UnixMicro(l.ts[first])
		}
		bs.RetryAfterOne = l.retryAfter(b, 1, nowUS)
		bs.RetryAfterMax = l.retryAfter(b, bs.MaxCost, nowUS)
		bs.UsedToday, _, _ = l.window(midnightUS - 1)
		st.Buckets = append(st.Buckets, bs)
	}
	return st, nil
}

// MarkExhausted implements Backend: reservations of credential are denied
// until until (rounded up to the microsecond); a marker only moves later.
func (m *MemoryBackend) MarkExhausted(ctx context.Context, credential string, until time.Time) error {
	untilUS := until.UnixMicro()
	if until.Sub(time.UnixMicro(untilUS)) > 0 {
		untilUS++
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cr := m.creds[credential]
	if cr == nil {
		cr = &memoryCredential{logs: map[string]*memoryLog{}}
		m.creds[credential] = cr
	}
	cr.exhausted = max(cr.exhausted, untilUS)
	return nil
}

// Reset implements Backend: it forgets every entry and the exhaustion
// marker of credential.
func (m *MemoryBackend) Reset(ctx context.Context, credential string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.creds, credential)
	return nil
}

var _ Backend = (*MemoryBackend)(nil)
