package quota

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// memoryBackend is a Backend held in process memory: the same
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
// steps (doc.go, "Clock steps"; ClockStepTolerance); the decision is
// decide's, like SQLite's.
type memoryBackend struct {
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
	logs      map[string]*memoryLog // by bucket name
	exhausted int64                 // µs; 0 = none
}

// memoryLog is one bucket's log, oldest first.
type memoryLog struct {
	ts    []int64 // µs, non-decreasing
	units []int64
	ids   []int64 // unique per backend, increasing: the entry's identity for Refund
}

// memoryOption configures NewMemory.
type memoryOption func(*memoryBackend)

// WithMemoryClock makes the backend read time from now instead of
// time.Now (tests step it to check Retry-After exactly).
func WithMemoryClock(now func() time.Time) memoryOption {
	return func(m *memoryBackend) { m.clock = now }
}

// NewMemory returns an empty in-memory backend.
func NewMemory(opts ...memoryOption) *memoryBackend {
	m := &memoryBackend{clock: time.Now, creds: map[string]*memoryCredential{}}
	for _, o := range opts {
		o(m)
	}
	return m
}

// credential returns the state of name, created empty if needed.
func (m *memoryBackend) credential(name string) *memoryCredential {
	cr := m.creds[name]
	if cr == nil {
		cr = &memoryCredential{logs: map[string]*memoryLog{}}
		m.creds[name] = cr
	}
	return cr
}

// Name implements Backend.
func (m *memoryBackend) Name() string { return "memory" }

// Close implements Backend; it frees nothing (the garbage collector does).
func (m *memoryBackend) Close() error { return nil }

// window is l's window at cutoff (entries with a stamp > cutoff), for decide.
func (l *memoryLog) window(cutoff int64) logWindow {
	w := logWindow{}
	first := len(l.ts)
	for i := len(l.ts) - 1; i >= 0 && l.ts[i] > cutoff; i-- {
		w.used += l.units[i]
		w.entries++
		first = i
	}
	if first < len(l.ts) {
		w.oldest = l.ts[first]
	}
	if n := len(l.ts); n > 0 {
		w.newest = l.ts[n-1]
	}
	w.freeing = func(need int64) (int64, error) {
		freed := int64(0)
		for i := first; i < len(l.ts); i++ {
			if freed += l.units[i]; freed >= need {
				return l.ts[i], nil
			}
		}
		return 0, fmt.Errorf("the window holds fewer than %d units", need)
	}
	return w
}

// evict drops entries out of b's window that are also before the current
// Pacific day (kept for UsedToday).
func (l *memoryLog) evict(b Bucket, nowUS int64) {
	cutoff := evictCutoffUS(b, nowUS)
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

// Reserve implements Backend under one mutex with decide, then records one
// entry per bucket. Denials write nothing. It never returns an error.
func (m *memoryBackend) Reserve(ctx context.Context, credential string, charges []bucketCharge) (Decision, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	nowUS := m.clock().UnixMicro()
	if m.reserve++; m.reserve >= memorySweepEvery {
		m.reserve = 0
		m.sweep(nowUS)
	}
	cr := m.credential(credential)
	logs := make([]*memoryLog, len(charges))
	windows := make([]logWindow, len(charges))
	for i, c := range charges {
		if logs[i] = cr.logs[c.Name]; logs[i] == nil {
			logs[i] = &memoryLog{}
			cr.logs[c.Name] = logs[i]
		}
		windows[i] = logs[i].window(windowCutoffUS(c.Bucket, nowUS))
	}
	d, err := decide(charges, windows, nowUS, cr.exhausted)
	if err != nil || !d.Allowed {
		return d, err
	}
	for i, c := range charges {
		l := logs[i]
		ts := max(nowUS, windows[i].newest) // never before the newest entry
		m.lastID++
		l.ts = append(l.ts, ts)
		l.units = append(l.units, c.Units)
		l.ids = append(l.ids, m.lastID)
		l.evict(c.Bucket, nowUS)
		d.Reservation.entries = append(d.Reservation.entries, reservedEntry{bucket: c.Bucket, units: c.Units, at: ts, id: m.lastID})
	}
	cr.exhausted = 0
	return d, nil
}

// Refund implements Backend under the mutex: it removes the entries of r
// when each is still the newest of its bucket (else none). It never
// returns an error.
func (m *memoryBackend) Refund(ctx context.Context, credential string, r Reservation) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cr := m.creds[credential]
	if cr == nil || r.IsZero() {
		return false, nil
	}
	for _, e := range r.entries {
		if l := cr.logs[e.bucket.Name]; l == nil || len(l.ids) == 0 || l.ids[len(l.ids)-1] != e.id {
			return false, nil
		}
	}
	for _, e := range r.entries {
		l := cr.logs[e.bucket.Name]
		n := len(l.ids) - 1
		l.ts, l.units, l.ids = l.ts[:n], l.units[:n], l.ids[:n]
	}
	return true, nil
}

// sweep drops credentials with no entry younger than a day and no marker.
func (m *memoryBackend) sweep(nowUS int64) {
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
		if idle {
			delete(m.creds, name)
		}
	}
}

// Status implements Backend: it reads the buckets without admitting or
// evicting anything. It never returns an error.
func (m *memoryBackend) Status(ctx context.Context, credential string, buckets []Bucket, maxCost map[string]int64) (Status, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	nowUS := m.clock().UnixMicro()
	st := Status{Credential: credential, Backend: m.Name(), Now: time.UnixMicro(nowUS)}
	cr := m.creds[credential]
	if cr != nil && cr.exhausted > nowUS {
		st.ExhaustedUntil = time.UnixMicro(cr.exhausted)
	}
	midnightUS := pacificMidnight(st.Now).UnixMicro()
	for _, b := range buckets {
		l := &memoryLog{}
		if cr != nil && cr.logs[b.Name] != nil {
			l = cr.logs[b.Name]
		}
		bs, err := bucketStatus(b, l.window(windowCutoffUS(b, nowUS)), maxCost[b.Name], l.window(midnightUS-1).used, nowUS)
		if err != nil {
			return st, err
		}
		st.Buckets = append(st.Buckets, bs)
	}
	return st, nil
}

// MarkExhausted implements Backend.
func (m *memoryBackend) MarkExhausted(ctx context.Context, credential string, until time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cr := m.credential(credential)
	cr.exhausted = max(cr.exhausted, until.UnixMicro())
	return nil
}

// Reset implements Backend: it forgets every entry and the exhaustion
// marker of credential.
func (m *memoryBackend) Reset(ctx context.Context, credential string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.creds, credential)
	return nil
}

var _ Backend = (*memoryBackend)(nil)
