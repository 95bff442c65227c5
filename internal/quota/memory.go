package quota

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// memoryBackend is a Backend in one process's memory (serve's per-client limiter of one
// instance), deciding with decide on the local clock (docs/quota.md, "Data layout").
type memoryBackend struct {
	mu      sync.Mutex
	clock   func() time.Time
	creds   map[string]*memoryCredential
	reserve int   // reservations since the last sweep
	lastID  int64 // the id of the newest entry recorded (ids start at 1)
}

// memorySweepEvery is how many reservations pass between sweeps of idle credentials.
const memorySweepEvery = 1024

// memoryCredential is one credential's logs, marks, would-be denials and holds.
type memoryCredential struct {
	logs   map[string][]memoryEntry   // by bucket name, oldest first
	marks  map[string]Mark            // by site ("": the credential's)
	shadow map[[2]string]memoryShadow // by shadow bucket and call site
	holds  []holdRecord
}

// memoryShadow is the would-be denials n of the Pacific day starting at dayUS.
type memoryShadow struct{ dayUS, n int64 }

// dropMarks forgets the marks over at nowUS.
func (cr *memoryCredential) dropMarks(nowUS int64) {
	for site, m := range cr.marks {
		if m.Until.UnixMicro() <= nowUS {
			delete(cr.marks, site)
		}
	}
}

// memoryEntry is one entry of a bucket's log: stamp (µs, non-decreasing),
// cost and id (unique per backend, for Refund).
type memoryEntry struct{ ts, units, id int64 }

// NewMemory returns an empty in-memory backend deciding by the clock now
// (time.Now, or a test's).
func NewMemory(now func() time.Time) Backend {
	return &memoryBackend{clock: now, creds: map[string]*memoryCredential{}}
}

// credential returns the state of name, created empty if needed.
func (m *memoryBackend) credential(name string) *memoryCredential {
	cr := m.creds[name]
	if cr == nil {
		cr = &memoryCredential{logs: map[string][]memoryEntry{}, marks: map[string]Mark{}, shadow: map[[2]string]memoryShadow{}}
		m.creds[name] = cr
	}
	return cr
}

// Name implements Backend.
func (m *memoryBackend) Name() string { return "memory" }

// Close implements Backend; it frees nothing.
func (m *memoryBackend) Close() error { return nil }

// memoryWindow is the window of log at cutoff (entries stamped > cutoff).
func memoryWindow(log []memoryEntry, cutoff int64) logWindow {
	first := len(log)
	for first > 0 && log[first-1].ts > cutoff {
		first--
	}
	w := logWindow{entries: int64(len(log) - first)}
	for _, e := range log[first:] {
		w.used += e.units
	}
	if first < len(log) {
		w.oldest = log[first].ts
	}
	if len(log) > 0 {
		w.newest = log[len(log)-1].ts
	}
	w.freeing = func(need int64) (int64, error) {
		freed := int64(0)
		for _, e := range log[first:] {
			if freed += e.units; freed >= need {
				return e.ts, nil
			}
		}
		return 0, fmt.Errorf("the window holds fewer than %d units", need)
	}
	return w
}

// Reserve implements Backend under the mutex; it never returns an error.
func (m *memoryBackend) Reserve(ctx context.Context, credential, site string, charges []bucketCharge) (Decision, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	nowUS := m.clock().UnixMicro()
	if m.reserve++; m.reserve >= memorySweepEvery {
		m.reserve = 0
		m.sweep(nowUS)
	}
	cr := m.credential(credential)
	windows := make([]logWindow, len(charges))
	for i, c := range charges {
		windows[i] = memoryWindow(cr.logs[c.Name], windowCutoffUS(c.Bucket, nowUS))
		windows[i].held = heldIn(cr.holds, c.Name, nowUS)
	}
	cr.dropMarks(nowUS)
	d, err := decide(charges, windows, nowUS, cr.marks[""].Until.UnixMicro(), cr.marks[site].Until.UnixMicro())
	if err != nil || !d.Allowed {
		return d, err
	}
	for i, c := range charges {
		e := m.record(cr, c, windows[i].newest, nowUS)
		d.Reservation.entries = append(d.Reservation.entries, reservedEntry{bucket: c.Bucket, units: c.Units, at: e.ts, id: e.id})
	}
	day := DayStart(d.Now).UnixMicro()
	for _, b := range d.ShadowDenied {
		k := [2]string{b, site}
		if c := cr.shadow[k]; c.dayUS == day {
			cr.shadow[k] = memoryShadow{dayUS: day, n: c.n + 1}
		} else {
			cr.shadow[k] = memoryShadow{dayUS: day, n: 1}
		}
	}
	return d, nil
}

// record appends c's entry to its log of cr, stamped >= newest, and evicts what left its window.
func (m *memoryBackend) record(cr *memoryCredential, c bucketCharge, newest, nowUS int64) memoryEntry {
	m.lastID++
	e := memoryEntry{ts: max(nowUS, newest), units: c.Units, id: m.lastID}
	log := append(cr.logs[c.Name], e)
	cutoff := evictCutoffUS(c.Bucket, nowUS)
	for len(log) > 0 && log[0].ts <= cutoff {
		log = log[1:]
	}
	cr.logs[c.Name] = log
	return e
}

// Hold implements Backend under the mutex; it never returns an error.
func (m *memoryBackend) Hold(ctx context.Context, credential, id string, hs []holdCharge, spendFor time.Duration) (held []int64, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	nowUS := m.clock().UnixMicro()
	cr := m.credential(credential)
	for _, h := range hs {
		if h.Spent > 0 {
			m.record(cr, bucketCharge{Bucket: h.Bucket, Units: h.Spent}, memoryWindow(cr.logs[h.Name], 0).newest, nowUS)
		}
	}
	cr.holds, held, err = embeddedHold(cr.holds, id, hs, nowUS, spendFor, func(b Bucket) (logWindow, error) {
		return memoryWindow(cr.logs[b.Name], windowCutoffUS(b, nowUS)), nil
	})
	return held, err
}

// Refund implements Backend under the mutex; it never returns an error.
func (m *memoryBackend) Refund(ctx context.Context, credential string, r Reservation) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	cr := m.creds[credential]
	if cr == nil || r.IsZero() {
		return false, nil
	}
	for _, e := range r.entries {
		if log := cr.logs[e.bucket.Name]; len(log) == 0 || log[len(log)-1].id != e.id {
			return false, nil
		}
	}
	for _, e := range r.entries {
		log := cr.logs[e.bucket.Name]
		cr.logs[e.bucket.Name] = log[:len(log)-1]
	}
	return true, nil
}

// sweep drops credentials with no entry in the last 25 h and no mark.
func (m *memoryBackend) sweep(nowUS int64) {
	dayAgo := nowUS - (25 * time.Hour).Microseconds()
	for name, cr := range m.creds {
		cr.dropMarks(nowUS)
		idle := len(cr.marks) == 0 && !slices.ContainsFunc(cr.holds, func(r holdRecord) bool { return r.untilUS > nowUS })
		for _, log := range cr.logs {
			if len(log) > 0 && log[len(log)-1].ts > dayAgo {
				idle = false
			}
		}
		if idle {
			delete(m.creds, name)
		}
	}
}

// Status implements Backend.
func (m *memoryBackend) Status(ctx context.Context, credential string, buckets []Bucket, maxCost map[string]int64) (Status, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	nowUS := m.clock().UnixMicro()
	cr := m.creds[credential]
	if cr == nil {
		cr = &memoryCredential{} // read only: nothing is created
	}
	cr.dropMarks(nowUS)
	marks := slices.Collect(maps.Values(cr.marks))
	slices.SortFunc(marks, func(a, b Mark) int { return strings.Compare(a.Site, b.Site) })
	st, err := embeddedStatus(nowUS, marks, buckets, maxCost, func(b Bucket, cutoffUS int64) (logWindow, error) {
		return memoryWindow(cr.logs[b.Name], cutoffUS), nil
	})
	var rows []shadowRow
	for k, c := range cr.shadow {
		if c.dayUS == DayStart(st.Now).UnixMicro() {
			rows = append(rows, shadowRow{bucket: k[0], site: k[1], n: c.n})
		}
	}
	addShadowDenials(&st, rows)
	addHolds(&st, cr.holds)
	return st, err
}

// MarkExhausted implements Backend.
func (m *memoryBackend) MarkExhausted(ctx context.Context, credential string, mk Mark) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cr := m.credential(credential)
	if end := markEnd(mk.Until, m.clock().UnixMicro()); end > cr.marks[mk.Site].Until.UnixMicro() {
		mk.Until = time.UnixMicro(end)
		cr.marks[mk.Site] = mk
	}
	return nil
}

// Reset implements Backend.
func (m *memoryBackend) Reset(ctx context.Context, credential string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.creds, credential)
	return nil
}
