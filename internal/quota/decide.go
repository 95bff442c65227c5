package quota

import (
	"fmt"
	"slices"
	"time"
)

// logWindow is one bucket's log at now: units and entries of the window (stamps > windowCutoffUS),
// its oldest stamp and the log's newest (Unix µs, 0: none), the units held by outage reserves
// (Backend.Hold), and freeing(need), the stamp of the window's entry whose leaving frees need units
// (0 < need <= used).
type logWindow struct {
	used, entries, oldest, newest, held int64
	freeing                             func(need int64) (int64, error)
}

// ceilTo is d >= 0 in whole units, rounded up (a window or wait is never shorter than configured).
func ceilTo(d, unit time.Duration) int64 { return int64((d + unit - 1) / unit) }

// windowCutoffUS returns c such that an entry counts in b's window at nowUS
// iff its stamp > c (calendar: since the last Pacific midnight).
func windowCutoffUS(b Bucket, nowUS int64) int64 {
	if b.Calendar {
		return DayStart(time.UnixMicro(nowUS)).UnixMicro() - 1
	}
	return nowUS - ceilTo(b.Window, time.Microsecond)
}

// evictCutoffUS is the stamp at or before which b's entries matter neither
// to its window nor to today's units (UsedToday).
func evictCutoffUS(b Bucket, nowUS int64) int64 {
	return min(windowCutoffUS(b, nowUS), DayStart(time.UnixMicro(nowUS)).UnixMicro()-1)
}

// retryAfter is how long after nowUS a call of units fits b (0: now): until
// the entry freeing the last unit needed leaves (calendar, or more than the
// window frees while the holds stay: a window or the next midnight).
func (w logWindow) retryAfter(b Bucket, units, nowUS int64) (time.Duration, error) {
	need := w.used + w.held + units - b.Limit
	if need <= 0 || units > b.Limit {
		return 0, nil
	}
	if need > w.used && !b.Calendar {
		return b.Window, nil
	}
	if b.Calendar {
		return time.Duration(NextPacificMidnight(time.UnixMicro(nowUS)).UnixMicro()-nowUS) * time.Microsecond, nil
	}
	ts, err := w.freeing(need)
	if err != nil {
		return 0, err
	}
	return time.Duration(ts+ceilTo(b.Window, time.Microsecond)-nowUS) * time.Microsecond, nil
}

// decide, the embedded backend's decision (Redis decides alike in lua/reserve.lua), admits charges
// when each fits its bucket's window, neither the credential (credUS) nor the call site (siteUS) is
// marked until after nowUS (Unix µs; 0 or less: none), and no bucket's newest entry is over
// ClockStepTolerance ahead; a shadow bucket never denies (Decision.ShadowDenied). On denial RetryAfter
// is the largest wait, DeniedBucket the first bucket with it ("": a mark). The caller records entries,
// stamped >= newest.
func decide(charges []bucketCharge, logs []logWindow, nowUS, credUS, siteUS int64) (Decision, error) {
	d := Decision{Now: time.UnixMicro(nowUS), Remaining: make(map[string]int64, len(charges))}
	if exhaustedUS := max(credUS, siteUS); exhaustedUS > nowUS {
		d.Exhausted, d.ExhaustedUntil, d.SiteExhausted = true, time.UnixMicro(exhaustedUS), siteUS > credUS
		d.RetryAfter = time.Duration(exhaustedUS-nowUS) * time.Microsecond
	}
	denied, deniedRA := "", time.Duration(0)
	for i, c := range charges {
		w := logs[i]
		d.Remaining[c.Name] = max(c.Limit-w.used-w.held, 0)
		ra, behind := clockStepWait(w.newest, nowUS)
		if c.Shadow {
			continue // shadowDenied
		}
		if behind > 0 {
			d.ClockBehind = max(d.ClockBehind, behind)
		} else if w.used+w.held+c.Units <= c.Limit {
			continue
		} else if r, err := w.retryAfter(c.Bucket, c.Units, nowUS); err != nil {
			return Decision{}, fmt.Errorf("retry-after of bucket %q: %w", c.Name, err)
		} else {
			ra = r
		}
		if denied == "" || ra > deniedRA {
			denied, deniedRA = c.Name, ra
		}
	}
	d.RetryAfter = max(d.RetryAfter, deniedRA) // 0 when no bucket denied
	if !d.Exhausted {
		d.DeniedBucket = denied
	}
	d.Allowed = !d.Exhausted && denied == ""
	if d.Allowed {
		d.ShadowDenied = shadowDenied(charges, logs)
		for _, c := range charges {
			d.Remaining[c.Name] = max(d.Remaining[c.Name]-c.Units, 0) // a shadow bucket's may not fit
		}
	}
	return d, nil
}

// embeddedStatus is the Status at nowUS of buckets, with marks, from window,
// which reads a bucket's entries stamped > cutoffUS.
func embeddedStatus(nowUS int64, marks []Mark, buckets []Bucket, maxCost map[string]int64,
	window func(b Bucket, cutoffUS int64) (logWindow, error)) (Status, error) {
	st := Status{Now: time.UnixMicro(nowUS), Marks: marks}
	for _, b := range buckets {
		w, err := window(b, windowCutoffUS(b, nowUS))
		if err != nil {
			return st, err
		}
		today, err := window(b, DayStart(st.Now).UnixMicro()-1)
		if err != nil {
			return st, err
		}
		bs := BucketStatus{Bucket: b, Used: w.used, Remaining: max(b.Limit-w.used, 0), Entries: w.entries,
			MaxCost: max(maxCost[b.Name], 1), UsedToday: today.used}
		if w.oldest != 0 {
			bs.Oldest = time.UnixMicro(w.oldest)
		}
		if bs.RetryAfterOne, err = w.retryAfter(b, 1, nowUS); err == nil {
			bs.RetryAfterMax, err = w.retryAfter(b, bs.MaxCost, nowUS)
		}
		if err != nil {
			return st, err
		}
		st.Buckets = append(st.Buckets, bs)
	}
	return st, nil
}

// shadowDenied names the shadow buckets of charges that logs say would deny them.
func shadowDenied(charges []bucketCharge, logs []logWindow) (names []string) {
	for i, c := range charges {
		if c.Shadow && logs[i].used+c.Units > c.Limit {
			names = append(names, c.Name)
		}
	}
	return names
}

// shadowRow is one count of would-be denials of the current Pacific day:
// shadow bucket, call site and n (Status of every backend).
type shadowRow struct {
	bucket, site string
	n            int64
}

// addShadowDenials sets the BucketStatus.ShadowDenials of st's buckets from rows.
func addShadowDenials(st *Status, rows []shadowRow) {
	for _, r := range rows {
		i := slices.IndexFunc(st.Buckets, func(b BucketStatus) bool { return b.Name == r.bucket })
		if i < 0 || r.n <= 0 {
			continue // a bucket no longer configured
		}
		if st.Buckets[i].ShadowDenials == nil {
			st.Buckets[i].ShadowDenials = map[string]int64{}
		}
		st.Buckets[i].ShadowDenials[r.site] += r.n
	}
}
