package quota

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Bucket is one quota allocation of a credential: at most Limit units may be
// admitted in any window of length Window (a sliding-window log, exact).
// When Calendar is true the window is instead Google's quota day, which
// starts at midnight America/Los_Angeles (see pacificMidnight), and Window
// is ignored.
type Bucket struct {
	// Name identifies the bucket in config, keys and status, e.g. "units".
	Name string
	// Limit is the most units admitted within one window; must be > 0.
	Limit int64
	// Window is the sliding window length (e.g. 24h); must be > 0 unless Calendar.
	Window time.Duration
	// Calendar switches the window to the current Pacific quota day.
	Calendar bool
}

// Charge is the cost of one call in one bucket, in units.
type Charge struct {
	// Bucket names the bucket charged.
	Bucket string
	// Units is the cost in that bucket; must be > 0 and <= its limit.
	Units int64
}

// Costs is the cost table: API method (call site, e.g. callsite.VideosList) to the
// charges one call of it makes. A method may charge several buckets; the
// reservation is atomic across them. Defaults follow the YouTube Data API
// quota cost page (DESIGN.md §3, §4).
type Costs map[string][]Charge

// Decision is the answer to one reservation.
type Decision struct {
	// Allowed reports whether the call was admitted and recorded in every bucket.
	Allowed bool
	// Remaining is, per bucket charged, the units left after this decision.
	Remaining map[string]int64
	// DeniedBucket names the bucket that denied, or "" when allowed or when
	// denied by an upstream exhaustion marker.
	DeniedBucket string
	// Exhausted reports a denial because the credential was marked exhausted
	// by the upstream API (MarkExhausted) until ExhaustedUntil.
	Exhausted bool
	// ExhaustedUntil is the end of the exhaustion marker when Exhausted.
	ExhaustedUntil time.Time
	// RetryAfter is, on denial, the earliest wait after which the same
	// reservation can succeed (never early; microsecond precision).
	RetryAfter time.Duration
	// Now is the backend clock at the decision (Redis TIME or local clock).
	Now time.Time
	// ClockBehind is set on a denial by an embedded backend (SQLite,
	// memory) whose local clock reads earlier than a charged bucket's newest
	// entry by more than ClockStepTolerance: the clock was stepped back, and
	// nothing is admitted until it has caught up (RetryAfter; see doc.go,
	// "Clock steps"). It is how far behind the newest entry the clock is.
	ClockBehind time.Duration
	// Reservation identifies the entries an admitted call recorded, for
	// Refund; it is the zero Reservation on denial.
	Reservation Reservation
}

// Reservation identifies the log entries that one admitted reservation
// recorded, one per bucket it charged, so that Refund can remove exactly
// those entries and no others. It is opaque: only the kind of backend that
// issued it can read it. The zero value (a denial's) refunds nothing.
type Reservation struct {
	entries []reservedEntry
}

// reservedEntry is one bucket's entry of a reservation.
type reservedEntry struct {
	bucket Bucket
	// units is the entry's cost in bucket.
	units int64
	// at is the entry's timestamp, Unix µs (the Redis score, SQLite ts_us,
	// the memory log's ts).
	at int64
	// id is the entry's immutable identity where the backend stores one
	// (SQLite rid, memory id; never 0 there). Redis identifies an entry by
	// (bucket, at, units): its scores are unique within a bucket.
	id int64
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

// ClockStepTolerance is how far the local clock of an embedded backend
// (SQLite, memory) may read earlier than the newest entry of a bucket: a
// smaller step back is absorbed (the new entry is stamped no earlier than
// the newest), a larger one denies with Decision.ClockBehind until the
// clock has caught up (docs/quota.md, "Clock steps"). Redis decides on
// Redis TIME and is not checked.
const ClockStepTolerance = 2 * time.Second

// clockStepWait checks the local clock nowUS against the newest entry of a
// bucket, stamped newestUS (Unix µs): behind is how far the clock reads
// earlier than that entry when that exceeds ClockStepTolerance (else 0), and
// wait is how long until it no longer does, i.e. until admissions into the
// bucket resume.
func clockStepWait(newestUS, nowUS int64) (wait, behind time.Duration) {
	back, tol := newestUS-nowUS, ClockStepTolerance.Microseconds()
	if back <= tol {
		return 0, 0
	}
	return time.Duration(back-tol) * time.Microsecond, time.Duration(back) * time.Microsecond
}

// BucketStatus is the read-only state of one bucket.
type BucketStatus struct {
	Bucket
	// Used is the sum of units of entries in the current window.
	Used int64
	// Remaining is Limit - Used, never below 0.
	Remaining int64
	// Entries is the number of log entries (admitted calls) in the window.
	Entries int64
	// Oldest is the timestamp of the oldest entry in the window (zero if
	// none).
	Oldest time.Time
	// RetryAfterOne is the wait until a cost-1 call fits (0 if it fits now).
	RetryAfterOne time.Duration
	// MaxCost is the largest configured cost of any method in this bucket.
	MaxCost int64
	// RetryAfterMax is the wait until a MaxCost call fits (0 if it fits now).
	RetryAfterMax time.Duration
	// UsedToday is the sum of units recorded since the last Pacific midnight.
	UsedToday int64
}

// Status is what `trendfetch quota status` shows for one credential.
type Status struct {
	Credential string
	// Backend is "sqlite" or "redis".
	Backend string
	// Reachable reports whether the backend answered; Err holds why not
	// (an *AccessError when Redis refused the user).
	Reachable bool
	Err       error
	// Latency is the round trip of the status query.
	Latency time.Duration
	// Now is the backend clock.
	Now time.Time
	// ExhaustedUntil is set while the credential is marked exhausted upstream.
	ExhaustedUntil time.Time
	Buckets        []BucketStatus
}

// Backend stores sliding-window logs and decides reservations atomically.
// Implementations: Redis (NewRedis), the embedded SQLite backend
// (NewSQLite) and one process's memory (NewMemory).
// Every method takes the credential name (never the API key).
type Backend interface {
	// Name is "sqlite" or "redis".
	Name() string
	// Reserve admits the call only if every charge fits its bucket; either
	// every bucket records one entry with its units or none does. The caller
	// has already checked that no charge exceeds its bucket's limit. Backend
	// failures are returned wrapped in ErrUnavailable.
	Reserve(ctx context.Context, credential string, charges []bucketCharge) (Decision, error)
	// Status reads the buckets without admitting, evicting or extending anything.
	// maxCost gives, per bucket name, the largest configured cost.
	Status(ctx context.Context, credential string, buckets []Bucket, maxCost map[string]int64) (Status, error)
	// MarkExhausted denies every reservation for credential until until
	// (whole µs); a marker only moves later.
	MarkExhausted(ctx context.Context, credential string, until time.Time) error
	// Refund removes the entries of reservation r, an admitted Decision's
	// Reservation for credential, when each is still the newest of its
	// bucket, else none (they stay counted, the safe side). It is only for
	// calls that provably never left the host (DESIGN.md §4 "Refund"), and
	// idempotent; refunded reports whether the entries were removed.
	// Backend failures wrap ErrUnavailable.
	Refund(ctx context.Context, credential string, r Reservation) (refunded bool, err error)
	// Reset removes every log entry and the exhaustion marker of
	// credential; run leases are kept (they are not usage).
	Reset(ctx context.Context, credential string) error
	// Close releases connections.
	Close() error
}

// bucketCharge is a charge joined with its bucket definition, as passed to a Backend.
type bucketCharge struct {
	Bucket
	// Units is the cost of the call in this bucket.
	Units int64
}

// ErrUnavailable wraps a failure to reach the backend or to get its answer
// in time; call sites apply their fail-open/fail-closed policy when
// errors.Is(err, ErrUnavailable). (Out of memory: ErrOutOfMemory; refused
// permissions: *AccessError.)
var ErrUnavailable = errors.New("quota backend unavailable")

// errUnknownMethod is returned by Reserve for a method missing from the cost table.
var errUnknownMethod = errors.New("method not in the quota cost table")

// CostError reports a charge larger than its bucket's limit: such a call can
// never be admitted, so it is a configuration error, never a throttle.
type CostError struct {
	// Method is the API method of the cost table entry.
	Method string
	// Bucket is the bucket whose limit the charge exceeds.
	Bucket string
	// Units is the charge and Limit the bucket's limit, in units.
	Units int64
	Limit int64
}

// Error implements error.
func (e *CostError) Error() string {
	return fmt.Sprintf("quota: %s costs %d units in bucket %q but its limit is %d: it can never be admitted", e.Method, e.Units, e.Bucket, e.Limit)
}

// Limiter reserves the weighted cost of API calls for credentials from a
// Backend, using a fixed set of buckets and a cost table.
type Limiter struct {
	backend Backend
	buckets map[string]Bucket
	order   []string
	costs   Costs
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

// New builds a Limiter: the one place buckets and costs are checked
// (backends trust them). It returns a *SettingError when a bucket is
// invalid (its name, limit or window: see Bucket), when
// the cost table names an unknown bucket or a non-positive cost, or when a
// cost exceeds its bucket's limit (a *CostError).
func New(backend Backend, buckets []Bucket, costs Costs) (*Limiter, error) {
	l := &Limiter{backend: backend, buckets: map[string]Bucket{}, costs: costs, maxCost: map[string]int64{}}
	for i, b := range buckets {
		at := func(field string) string { return fmt.Sprintf("buckets[%d].%s", i, field) }
		switch _, dup := l.buckets[b.Name]; {
		case b.Name == "" || reservedBucketName(b.Name) || strings.ContainsAny(b.Name, "{}"):
			return nil, &SettingError{Setting: at("name"), Value: fmt.Sprintf("%q", b.Name), Reason: "empty, or reserved by the limiter's keys"}
		case dup:
			return nil, &SettingError{Setting: at("name"), Value: b.Name, Reason: "defined twice"}
		case b.Limit <= 0:
			return nil, &SettingError{Setting: at("limit"), Value: b.Limit, Reason: "must be > 0 units"}
		case !b.Calendar && b.Window < time.Microsecond:
			return nil, &SettingError{Setting: at("window"), Value: b.Window, Reason: "must be at least 1µs (or set calendar: true)"}
		}
		l.buckets[b.Name] = b
		l.order = append(l.order, b.Name)
	}
	methods := make([]string, 0, len(costs))
	for m := range costs {
		methods = append(methods, m)
	}
	sort.Strings(methods)
	for _, m := range methods {
		seen := map[string]bool{}
		for _, c := range costs[m] {
			b, ok := l.buckets[c.Bucket]
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
			if c.Units > l.maxCost[c.Bucket] {
				l.maxCost[c.Bucket] = c.Units
			}
		}
	}
	return l, nil
}

// Buckets returns the configured buckets in configuration order.
func (l *Limiter) Buckets() []Bucket {
	out := make([]Bucket, 0, len(l.order))
	for _, n := range l.order {
		out = append(out, l.buckets[n])
	}
	return out
}

// Charges returns the charges of one call of method, or errUnknownMethod.
func (l *Limiter) Charges(method string) ([]Charge, error) {
	cs, ok := l.costs[method]
	if !ok || len(cs) == 0 {
		return nil, fmt.Errorf("%w: %q", errUnknownMethod, method)
	}
	return cs, nil
}

// Reserve reserves one call of method for credential. It returns
// errUnknownMethod for a method missing from the cost table, and an error
// wrapping ErrUnavailable when the backend cannot decide; a denial is not an
// error (Decision.Allowed is false).
func (l *Limiter) Reserve(ctx context.Context, credential, method string) (Decision, error) {
	cs, err := l.Charges(method)
	if err != nil {
		return Decision{}, err
	}
	charges := make([]bucketCharge, len(cs))
	for i, c := range cs {
		charges[i] = bucketCharge{Bucket: l.buckets[c.Bucket], Units: c.Units}
	}
	return l.backend.Reserve(ctx, credential, charges)
}

// Status reads the state of every bucket of credential. Backend failures are
// reported in Status.Reachable/Err, not as an error.
func (l *Limiter) Status(ctx context.Context, credential string) Status {
	start := time.Now()
	st, err := l.backend.Status(ctx, credential, l.Buckets(), l.maxCost)
	st.Credential = credential
	st.Backend = l.backend.Name()
	st.Latency = time.Since(start)
	if err != nil {
		st.Reachable = false
		st.Err = err
		return st
	}
	st.Reachable = true
	return st
}

// Refund gives back the units of reservation r (Decision.Reservation of an
// admitted Reserve for credential) in every bucket it charged, when its
// entries are still the newest there (else nothing: they stay counted).
// Call it only when the call provably never left the host (DNS failure,
// connection refused: nothing of the request was written); nothing else is
// ever refunded, since Google counts every request it receives. The zero
// Reservation refunds nothing and reaches no backend; refunding twice is a
// no-op. refunded reports whether the units were given back. Backend
// failures wrap ErrUnavailable.
func (l *Limiter) Refund(ctx context.Context, credential string, r Reservation) (refunded bool, err error) {
	if r.IsZero() {
		return false, nil
	}
	return l.backend.Refund(ctx, credential, r)
}

// MarkExhausted denies every reservation of credential until until (rounded
// up to the microsecond: never early), typically the next Pacific midnight
// after Google answered 403 quotaExceeded. A marker only moves later.
func (l *Limiter) MarkExhausted(ctx context.Context, credential string, until time.Time) error {
	if t := until.Truncate(time.Microsecond); t.Before(until) {
		until = t.Add(time.Microsecond)
	}
	return l.backend.MarkExhausted(ctx, credential, until)
}

// Reset forgets every entry and the exhaustion marker of credential (run
// leases are kept).
func (l *Limiter) Reset(ctx context.Context, credential string) error {
	return l.backend.Reset(ctx, credential)
}

// Close closes the backend.
func (l *Limiter) Close() error { return l.backend.Close() }

// pacific is Google's quota clock zone; time/tzdata is linked into the binary
// (see tzdata.go) so this never depends on the host's zoneinfo.
var pacific = mustLoad("America/Los_Angeles")

func mustLoad(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return loc
}

// pacificMidnight returns the start of the Google quota day containing t:
// the last midnight America/Los_Angeles at or before t. Days are 23 or 25
// hours long at DST changes (source: YouTube Data API quota docs, "daily
// quotas reset at midnight Pacific Time").
func pacificMidnight(t time.Time) time.Time {
	p := t.In(pacific)
	return time.Date(p.Year(), p.Month(), p.Day(), 0, 0, 0, 0, pacific)
}

// NextPacificMidnight returns the first midnight America/Los_Angeles strictly after t.
func NextPacificMidnight(t time.Time) time.Time {
	p := t.In(pacific)
	return time.Date(p.Year(), p.Month(), p.Day()+1, 0, 0, 0, 0, pacific)
}
