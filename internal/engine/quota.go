package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/trendfetch/trendfetch/internal/fetch"
	"github.com/trendfetch/trendfetch/internal/quota"
)

// QuotaStatus reads the status of credential's buckets, changing nothing (no quota database
// yet: every bucket unused, noted); a backend that cannot be read is in it (StatusError).
func (e *Engine) QuotaStatus(ctx context.Context, credential string) (quota.Status, error) {
	if e.quotaDBMissing() {
		buckets, costs, err := e.cfg.Limits()
		st := quota.Status{Credential: credential, Backend: e.cfg.Quota.Backend, Reachable: true, Now: time.Now()}
		for _, b := range buckets {
			bs := quota.BucketStatus{Bucket: b, Remaining: b.Limit}
			for _, cs := range costs {
				for _, c := range cs {
					if c.Bucket == b.Name {
						bs.MaxCost = max(bs.MaxCost, c.Units)
					}
				}
			}
			st.Buckets = append(st.Buckets, bs)
		}
		return st, err
	}
	lim, err := e.OpenLimiter(true)
	if err != nil {
		return quota.Status{}, err
	}
	defer lim.Close()
	return lim.Status(ctx, credential), nil
}

// StatusError is the error of a failed status read (nil when st is reachable): a Redis user
// refused by ACL (*quota.AccessError, exit 2), or an unreachable backend.
func StatusError(st quota.Status) error {
	if st.Reachable {
		return nil
	}
	if acl := new(*quota.AccessError); errors.As(st.Err, acl) {
		return *acl
	}
	return fmt.Errorf("quota backend %s unreachable: %v", st.Backend, st.Err)
}

// Charge reserves count calls of method (a key of quota.costs) for the configured credential
// without calling the API, stopping at the first denial (*fetch.StopError); it returns how many.
func (e *Engine) Charge(ctx context.Context, method string, count int) (int, error) {
	lim, err := e.OpenLimiter(false)
	if err != nil {
		return 0, err
	}
	defer lim.Close()
	for i := 0; i < count; i++ {
		d, err := lim.Reserve(ctx, e.cfg.Credential, method)
		if err != nil {
			return i, fmt.Errorf("charged %d of %d calls: %w", i, count, err)
		}
		if !d.Allowed {
			return i, fetch.Denied("", method, d)
		}
	}
	return count, nil
}

// Leases returns the region leases held for every configured credential.
func (e *Engine) Leases(ctx context.Context) ([]quota.LeaseInfo, error) {
	if e.quotaDBMissing() {
		return nil, nil
	}
	lim, err := e.OpenLimiter(true)
	if err != nil {
		return nil, err
	}
	defer lim.Close()
	var all []quota.LeaseInfo
	for _, cr := range e.cfg.Credentials {
		ls, err := lim.Leases(ctx, cr.Name)
		if err != nil {
			return nil, err
		}
		all = append(all, ls...)
	}
	return all, nil
}

// CheckResult, `quota check --json`, answers whether Count calls of Method fit now (Fits), and
// if not when: FitsAt the earliest (null: now, or never), FitsBy the latest (exact when equal).
type CheckResult struct {
	Credential string        `json:"credential"`
	Method     string        `json:"method"`
	Count      int64         `json:"count"`
	Fits       bool          `json:"fits"`
	FitsAt     *time.Time    `json:"fits_at"`
	FitsBy     *time.Time    `json:"fits_by"`
	Buckets    []CheckBucket `json:"buckets"`
}

// CheckBucket is one bucket the method charges.
type CheckBucket struct {
	Name      string     `json:"name"`
	Need      int64      `json:"need"`
	Remaining int64      `json:"remaining"`
	Limit     int64      `json:"limit"`
	FitsAt    *time.Time `json:"fits_at"`
	FitsBy    *time.Time `json:"fits_by"`
}

// Check answers whether count calls of method fit the configured credential's buckets now, and
// if not when, from the limiter's Status: exact when it knows (one call of cost 1, one of the
// largest cost, a calendar bucket, an upstream mark). It reserves nothing. Errors: StatusError's.
func (e *Engine) Check(ctx context.Context, method string, count int64) (CheckResult, error) {
	st, err := e.QuotaStatus(ctx, e.cfg.Credential)
	if err == nil {
		err = StatusError(st)
	}
	if err != nil {
		return CheckResult{}, err
	}
	now, charges := st.Now, e.cfg.Quota.Costs[method] // bucket: units per call
	out := CheckResult{Credential: e.cfg.Credential, Method: method, Count: count, Fits: true}
	var at, by time.Time
	later := func(t *time.Time, v time.Time) {
		if v.After(*t) {
			*t = v
		}
	}
	for _, m := range st.Marks {
		if (m.Site == "" || m.Site == method) && m.Until.After(now) {
			out.Fits = false
			later(&at, m.Until)
			later(&by, m.Until)
		}
	}
	never := false
	for _, b := range st.Buckets {
		units, ok := charges[b.Name]
		if !ok {
			continue
		}
		cb := CheckBucket{Name: b.Name, Need: units * count, Remaining: b.Remaining, Limit: b.Limit}
		switch {
		case cb.Need > b.Limit:
			never = true
		case cb.Need > b.Remaining:
			lo, hi := fitsWhen(b, cb.Need, now)
			cb.FitsAt, cb.FitsBy = &lo, &hi
			out.Fits = false
			later(&at, lo)
			later(&by, hi)
		}
		out.Buckets = append(out.Buckets, cb)
	}
	if !out.Fits && !never {
		at, by = ceilSecond(at), ceilSecond(by) // whole seconds, rounded up: never early
		out.FitsAt, out.FitsBy = &at, &by
	}
	out.Fits = out.Fits && !never
	return out, nil
}

// fitsWhen is when need units of bucket b, more than it has left, fit (at the soonest, by the
// latest), in whole seconds rounded up: exact for a calendar bucket, one call of cost 1 and one
// of the largest cost; from the oldest entry and the window otherwise.
func fitsWhen(b quota.BucketStatus, need int64, now time.Time) (lo, hi time.Time) {
	switch {
	case b.Calendar:
		lo, hi = quota.NextPacificMidnight(now), quota.NextPacificMidnight(now)
	case need == 1 && b.RetryAfterOne > 0:
		lo, hi = now.Add(b.RetryAfterOne), now.Add(b.RetryAfterOne)
	case need == b.MaxCost && b.RetryAfterMax > 0:
		lo, hi = now.Add(b.RetryAfterMax), now.Add(b.RetryAfterMax)
	case !b.Oldest.IsZero(): // the oldest entry leaving is the soonest anything frees;
		lo, hi = b.Oldest.Add(b.Window), now.Add(b.Window) // by now + window all have left
	default:
		lo, hi = now.Add(max(b.RetryAfterOne, time.Nanosecond)), now.Add(b.Window)
	}
	return ceilSecond(lo), ceilSecond(hi)
}

// ceilSecond is t in UTC rounded up to a whole second.
func ceilSecond(t time.Time) time.Time { return t.Add(time.Second - 1).Truncate(time.Second).UTC() }

// ReleaseLease releases region's run lease of the configured credential, whatever its holder
// (confirm false: nothing), and returns it (held false: none). Errors: it changed holder meanwhile.
func (e *Engine) ReleaseLease(ctx context.Context, region string, confirm bool) (l quota.LeaseInfo, held bool, err error) {
	lim, err := e.OpenLimiter(false)
	if err != nil {
		return l, false, err
	}
	defer lim.Close()
	ls, err := lim.Leases(ctx, e.cfg.Credential)
	if err != nil {
		return l, false, err
	}
	for _, l := range ls {
		if l.Region != region {
			continue
		}
		if !confirm {
			return l, true, nil
		}
		if ok, err := lim.BreakLease(ctx, l); err != nil || !ok {
			if err == nil {
				err = fmt.Errorf("region %s of credential %q changed holder meanwhile: run `trendfetch lease list` and try again", region, l.Credential)
			}
			return l, true, err
		}
		e.log.Warn().Str("region", region).Str("credential", l.Credential).Str("holder", l.Holder).Msg("region lease released by hand")
		return l, true, nil
	}
	return l, false, nil
}
