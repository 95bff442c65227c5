package quota

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // the Pacific quota day is the same on hosts without a zoneinfo database

	"github.com/trendfetch/trendfetch/internal/exitcode"
)

// Bucket is one quota allocation of a credential, named in config, keys and status (e.g. "units"):
// at most Limit (> 0) units admitted in any window of length Window (> 0; an exact sliding-window
// log), or in Google's quota day (from midnight America/Los_Angeles) when Calendar. A Shadow bucket
// records every admitted call but never denies: a call it would have denied is counted
// (Decision.ShadowDenied, BucketStatus.ShadowDenials).
type Bucket struct {
	Name     string
	Limit    int64
	Window   time.Duration
	Calendar bool
	Shadow   bool
}

// Charge is the cost of one call in one bucket: Units (> 0, <= its limit).
type Charge struct {
	Bucket string
	Units  int64
}

// Costs is the cost table: API method (a call site, e.g. callsite.VideosList)
// to the charges one call of it makes, atomic across the buckets charged.
type Costs map[string][]Charge

// Decision is the answer to one reservation.
type Decision struct {
	// Allowed reports whether the call was admitted and recorded in every bucket.
	Allowed bool
	// Remaining is, per bucket charged, the units left after this decision.
	Remaining map[string]int64
	// DeniedBucket names the bucket that denied ("": allowed, or a mark denied).
	DeniedBucket string
	// Exhausted reports a denial by an upstream mark (MarkExhausted) until ExhaustedUntil;
	// SiteExhausted when the mark is the call site's, not the credential's.
	Exhausted      bool
	ExhaustedUntil time.Time
	SiteExhausted  bool
	// RetryAfter is, on denial, the earliest wait after which it can succeed.
	RetryAfter time.Duration
	// Now is the backend clock at the decision (Redis TIME or local clock).
	Now time.Time
	// ClockBehind is, on a denial by an embedded backend, how far its clock
	// reads earlier than a charged bucket's newest entry (> ClockStepTolerance).
	ClockBehind time.Duration
	// Reservation is what an admitted call recorded, for Refund (zero on denial).
	Reservation Reservation
	// ShadowDenied names the shadow buckets that would have denied this
	// admitted call (nil: none); each such denial is counted in the backend.
	ShadowDenied []string
}

// Reservation identifies the log entries, one per bucket charged, that an
// admitted reservation recorded, for Refund; the zero value refunds nothing.
type Reservation struct{ entries []reservedEntry }

// reservedEntry is one bucket's entry of a reservation: its cost, its stamp
// (Unix µs) and its id (SQLite rid; Redis scores are unique).
type reservedEntry struct {
	bucket        Bucket
	units, at, id int64
}

// IsZero reports whether r identifies no entry (a denial, or the zero value).
func (r Reservation) IsZero() bool { return len(r.entries) == 0 }

// Units returns the units r charged, per bucket name (nil for the zero value).
func (r Reservation) Units() map[string]int64 {
	if r.IsZero() {
		return nil
	}
	out := make(map[string]int64, len(r.entries))
	for _, e := range r.entries {
		out[e.bucket.Name] += e.units
	}
	return out
}

// ClockStepTolerance is how far an embedded backend's clock may read before a
// bucket's newest entry before it denies (docs/quota.md, "Clock steps").
const ClockStepTolerance = 2 * time.Second

// clockStepWait is, when the clock nowUS reads more than ClockStepTolerance
// before newestUS, the wait until admissions resume and how far it is behind.
func clockStepWait(newestUS, nowUS int64) (wait, behind time.Duration) {
	back, tol := newestUS-nowUS, ClockStepTolerance.Microseconds()
	if back <= tol {
		return 0, 0
	}
	return time.Duration(back-tol) * time.Microsecond, time.Duration(back) * time.Microsecond
}

// BucketStatus is one bucket's state: units Used and Entries in the window (Remaining = Limit - Used,
// >= 0), its Oldest stamp (zero: none), the waits until a cost-1 call and a MaxCost call (the largest
// configured cost in the bucket) fit (0: now), and the units UsedToday since the last Pacific midnight.
// ShadowDenials (a shadow bucket's; nil: none) counts, per call site, the admitted calls it would have
// denied since the last Pacific midnight. Held (nil: none) is the units each host's outage reserve
// holds, by reserve id (Limiter.Hold); Remaining counts them as spent.
type BucketStatus struct {
	Bucket
	Used, Remaining, Entries, MaxCost, UsedToday int64
	Oldest                                       time.Time
	RetryAfterOne, RetryAfterMax                 time.Duration
	ShadowDenials, Held                          map[string]int64
}

// Status is what `trendfetch quota status` shows for one credential: its
// Backend (Backend.Name), whether it was Reachable (Err: why not), the status
// query's round trip Latency, the backend clock Now, the Marks in force (the
// credential's, Site "", first, then the call sites' by name) and Buckets.
type Status struct {
	Credential, Backend string
	Reachable           bool
	Err                 error
	Latency             time.Duration
	Now                 time.Time
	Marks               []Mark
	Buckets             []BucketStatus
}

// ExhaustedUntil is the end of the credential's mark, zero when none.
func (st Status) ExhaustedUntil() time.Time {
	for _, m := range st.Marks {
		if m.Site == "" {
			return m.Until
		}
	}
	return time.Time{}
}

// Mark is an upstream mark (docs/design.md §4): Google answered Why (one line of at most MaxWhy
// bytes) that the daily quota of call site Site ("": the credential, every call site) is spent, so
// its reservations are denied until Until, the next Pacific midnight after the answer.
type Mark struct {
	Site  string
	Until time.Time
	Why   string
}

// MaxWhy is the most bytes of Mark.Why a backend keeps.
const MaxWhy = 200

// Backend stores sliding-window logs and decides reservations atomically (NewRedis, NewSQLite), as
// the Limiter methods of the same names say; failures to reach it wrap ErrUnavailable.
type Backend interface {
	// Name is "redis" or "sqlite".
	Name() string
	// Reserve records one entry per charge (New's), or none; a mark of the
	// credential or of site denies.
	Reserve(ctx context.Context, credential, site string, charges []bucketCharge) (Decision, error)
	// Status reads the buckets without writing; maxCost is the largest cost per bucket.
	Status(ctx context.Context, credential string, buckets []Bucket, maxCost map[string]int64) (Status, error)
	// MarkExhausted sets m unless the same site's mark ends later.
	MarkExhausted(ctx context.Context, credential string, m Mark) error
	// Refund removes r's entries while each is the newest of its bucket.
	Refund(ctx context.Context, credential string, r Reservation) (refunded bool, err error)
	// Hold records the units reserve id spent as entries now, drops its
	// hold and holds up to each Want anew (Limiter.Hold); held[i] is hs[i]'s.
	Hold(ctx context.Context, credential, id string, hs []holdCharge, spendFor time.Duration) (held []int64, err error)
	// Reset removes every entry, mark and hold; run leases are kept.
	Reset(ctx context.Context, credential string) error
	// Close releases connections.
	Close() error
}

// bucketCharge is a charge (Units) joined with its bucket, as passed to a Backend.
type bucketCharge struct {
	Bucket
	Units int64
}

// ErrUnavailable wraps a failure to reach the backend or to get its answer
// in time; call sites apply their fail-open/fail-closed policy.
var ErrUnavailable = errors.New("quota backend unavailable")

// errUnknownMethod is returned by Reserve for a method missing from the cost table.
var errUnknownMethod = errors.New("method not in the quota cost table")

// CostError reports a charge (Units) of Method larger than its Bucket's
// Limit: a configuration error, never a throttle.
type CostError struct {
	Method, Bucket string
	Units, Limit   int64
}

// ExitCode is exitcode.Usage: a cost no bucket can ever admit: a configuration error.
func (e *CostError) ExitCode() int { return exitcode.Usage }

// Error implements error.
func (e *CostError) Error() string {
	return fmt.Sprintf("quota: %s costs %d units in bucket %q but its limit is %d: it can never be admitted", e.Method, e.Units, e.Bucket, e.Limit)
}

// Limiter reserves the weighted cost of API calls for credentials from a
// Backend, using a fixed set of buckets and a cost table.
type Limiter struct {
	backend Backend
	buckets []Bucket // in configuration order
	costs   Costs
	charges map[string][]bucketCharge // costs joined with their buckets, shared by every Reserve
	maxCost map[string]int64
}

// SettingError is a bucket or cost New refuses. Setting names it within the
// quota settings, e.g. "buckets[1].limit" or "costs.search.list.units".
type SettingError struct {
	Setting string
	Value   any
	Reason  string
}

// Error implements error: "quota: <setting> = <value>: <reason>".
func (e *SettingError) Error() string {
	return fmt.Sprintf("quota: %s = %v: %s", e.Setting, e.Value, e.Reason)
}

// New builds a Limiter, the one place buckets and costs are checked: a
// *SettingError for an invalid bucket or cost, a *CostError for a cost above
// its bucket's limit.
func New(backend Backend, buckets []Bucket, costs Costs) (*Limiter, error) {
	l := &Limiter{backend: backend, costs: costs, charges: map[string][]bucketCharge{}, maxCost: map[string]int64{}}
	byName := map[string]Bucket{}
	for i, b := range buckets {
		at := func(field string) string { return fmt.Sprintf("buckets[%d].%s", i, field) }
		switch _, dup := byName[b.Name]; {
		case b.Name == "" || reservedBucketName(b.Name) || strings.ContainsAny(b.Name, "{}"):
			return nil, &SettingError{Setting: at("name"), Value: fmt.Sprintf("%q", b.Name), Reason: "empty, or reserved by the limiter's keys"}
		case dup:
			return nil, &SettingError{Setting: at("name"), Value: b.Name, Reason: "defined twice"}
		case b.Limit <= 0:
			return nil, &SettingError{Setting: at("limit"), Value: b.Limit, Reason: "must be > 0 units"}
		case !b.Calendar && b.Window < time.Microsecond:
			return nil, &SettingError{Setting: at("window"), Value: b.Window, Reason: "must be at least 1µs (or set calendar: true)"}
		}
		byName[b.Name] = b
		l.buckets = append(l.buckets, b)
	}
	for _, m := range slices.Sorted(maps.Keys(costs)) {
		seen := map[string]bool{}
		for _, c := range costs[m] {
			b, ok := byName[c.Bucket]
			at := "costs." + m + "." + c.Bucket
			switch {
			case !ok:
				return nil, &SettingError{Setting: at, Value: c.Units, Reason: fmt.Sprintf("no bucket named %q", c.Bucket)}
			case seen[c.Bucket]:
				return nil, &SettingError{Setting: at, Value: c.Units, Reason: "charged twice"}
			case c.Units <= 0:
				return nil, &SettingError{Setting: at, Value: c.Units, Reason: "must be > 0 units"}
			}
			seen[c.Bucket] = true
			if c.Units > b.Limit {
				return nil, &CostError{Method: m, Bucket: c.Bucket, Units: c.Units, Limit: b.Limit}
			}
			l.maxCost[c.Bucket] = max(l.maxCost[c.Bucket], c.Units)
			l.charges[m] = append(l.charges[m], bucketCharge{Bucket: b, Units: c.Units})
		}
	}
	return l, nil
}

// Charges returns the charges of one call of method, or errUnknownMethod.
func (l *Limiter) Charges(method string) ([]Charge, error) {
	cs, ok := l.costs[method]
	if !ok || len(cs) == 0 {
		return nil, fmt.Errorf("%w: %q", errUnknownMethod, method)
	}
	return cs, nil
}

// Reserve reserves one call of method for credential; a denial is not an
// error. Errors: errUnknownMethod, ErrUnavailable wrapped.
func (l *Limiter) Reserve(ctx context.Context, credential, method string) (Decision, error) {
	if _, err := l.Charges(method); err != nil {
		return Decision{}, err
	}
	return l.backend.Reserve(ctx, credential, method, l.charges[method])
}

// Status reads the state of every bucket of credential. Backend failures are
// reported in Status.Reachable/Err, not as an error.
func (l *Limiter) Status(ctx context.Context, credential string) Status {
	start := time.Now()
	st, err := l.backend.Status(ctx, credential, l.buckets, l.maxCost)
	st.Credential, st.Backend, st.Latency = credential, l.backend.Name(), time.Since(start)
	st.Reachable, st.Err = err == nil, err
	return st
}

// Refund gives back the units of r, only for a call that provably never left
// the host, while its entries are still the newest (docs/quota.md, "Refund").
// Refunding twice or the zero Reservation is a no-op.
func (l *Limiter) Refund(ctx context.Context, credential string, r Reservation) (refunded bool, err error) {
	if r.IsZero() {
		return false, nil
	}
	return l.backend.Refund(ctx, credential, r)
}

// MarkExhausted marks m for credential: every reservation of credential (m.Site "") or of the call
// site m.Site is denied until m.Until, rounded up to the µs and never after the next Pacific
// midnight by the backend's clock (Redis TIME for Redis). A mark only moves later; Why is cut to
// one line of MaxWhy bytes.
func (l *Limiter) MarkExhausted(ctx context.Context, credential string, m Mark) error {
	if t := m.Until.Truncate(time.Microsecond); t.Before(m.Until) {
		m.Until = t.Add(time.Microsecond)
	}
	m.Why = strings.Join(strings.Fields(m.Why), " ")
	m.Why = strings.ToValidUTF8(m.Why[:min(len(m.Why), MaxWhy)], "") // a rune cut in two goes
	return l.backend.MarkExhausted(ctx, credential, m)
}

// markEnd is the end (Unix µs) a backend stores for a mark asked to last until: never after the
// next Pacific midnight after the backend's clock nowUS, so a caller whose clock runs days ahead
// cannot lock every host out for days (Redis clamps alike in lua/mark.lua).
func markEnd(until time.Time, nowUS int64) int64 {
	return min(until.UnixMicro(), NextPacificMidnight(time.UnixMicro(nowUS)).UnixMicro())
}

// Reset forgets every entry and mark of credential (run leases are kept).
func (l *Limiter) Reset(ctx context.Context, credential string) error {
	return l.backend.Reset(ctx, credential)
}

// Close closes the backend.
func (l *Limiter) Close() error { return l.backend.Close() }

// pacific is Google's quota clock zone (YouTube Data API docs: "daily quotas
// reset at midnight Pacific Time").
var pacific, _ = time.LoadLocation("America/Los_Angeles") // cannot fail: tzdata is linked in

// DayStart returns the start of the Google quota day containing t: the last
// midnight America/Los_Angeles at or before t (days of 23 or 25 hours at DST).
func DayStart(t time.Time) time.Time {
	p := t.In(pacific)
	return time.Date(p.Year(), p.Month(), p.Day(), 0, 0, 0, 0, pacific)
}

// NextPacificMidnight returns the first midnight America/Los_Angeles strictly after t.
func NextPacificMidnight(t time.Time) time.Time {
	p := t.In(pacific)
	return time.Date(p.Year(), p.Month(), p.Day()+1, 0, 0, 0, 0, pacific)
}
