package quota

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// holdCharge is one bucket's change of an outage reserve (Backend.Hold): the
// units Spent from it while the backend was unreachable, recorded as one entry
// now, and the units to Want held from now on.
type holdCharge struct {
	Bucket
	Spent, Want int64
}

// holdRecord is a hold of bucket by reserve id: units counted in every
// decision until untilUS (the backend's clock, Unix µs).
type holdRecord struct {
	bucket, id     string
	units, untilUS int64
}

// MaxHoldFor is the longest spendFor of Limiter.Hold.
const MaxHoldFor = 12 * time.Hour

// Hold releases and refills the outage reserve id (host name and a random suffix) of credential
// (docs/quota.md, "The outage reserve"), atomically: the units spent from it per bucket are
// recorded as entries now (they stay counted), its previous hold goes, and up to want units per
// bucket are held (what fits beside the window's units and the other holds). A hold counts in every
// decision of every host until spendFor (at most MaxHoldFor) plus the bucket's window after now
// (calendar: the Pacific midnight after now + spendFor), or the next Hold of id. It returns the
// units held per bucket.
func (l *Limiter) Hold(ctx context.Context, credential, id string, spent, want map[string]int64, spendFor time.Duration) (map[string]int64, error) {
	if spendFor <= 0 || spendFor > MaxHoldFor {
		return nil, fmt.Errorf("quota: hold for %s: want more than 0 and at most %s", spendFor, MaxHoldFor)
	}
	var hs []holdCharge
	for _, b := range l.buckets {
		if spent[b.Name] > 0 || want[b.Name] > 0 {
			hs = append(hs, holdCharge{Bucket: b, Spent: spent[b.Name], Want: min(want[b.Name], b.Limit)})
		}
	}
	held, err := l.backend.Hold(ctx, credential, id, hs, spendFor)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for i, h := range hs {
		if held[i] > 0 {
			out[h.Name] = held[i]
		}
	}
	return out, nil
}

// holdUntilUS is when a hold of b taken at nowUS, spendable for spendFor, stops counting.
func holdUntilUS(b Bucket, nowUS int64, spendFor time.Duration) int64 {
	end := nowUS + spendFor.Microseconds()
	if b.Calendar {
		return NextPacificMidnight(time.UnixMicro(end)).UnixMicro()
	}
	return end + ceilTo(b.Window, time.Microsecond)
}

// heldIn sums the units of recs holding bucket at nowUS.
func heldIn(recs []holdRecord, bucket string, nowUS int64) (units int64) {
	for _, r := range recs {
		if r.bucket == bucket && r.untilUS > nowUS {
			units += r.units
		}
	}
	return units
}

// embeddedHold is the embedded backend's Hold once the spent units are recorded: recs (every hold
// of the credential) without the expired ones and id's, plus id's new holds, each what fits beside
// window(b) (its units and holds at nowUS) and the other holds.
func embeddedHold(recs []holdRecord, id string, hs []holdCharge, nowUS int64, spendFor time.Duration,
	window func(b Bucket) (logWindow, error)) (kept []holdRecord, held []int64, err error) {
	kept = slices.DeleteFunc(slices.Clone(recs), func(r holdRecord) bool { return r.id == id || r.untilUS <= nowUS })
	held = make([]int64, len(hs))
	for i, h := range hs {
		w, err := window(h.Bucket)
		if err != nil {
			return nil, nil, err
		}
		if held[i] = max(min(h.Want, h.Limit-w.used-heldIn(kept, h.Name, nowUS)), 0); held[i] > 0 {
			kept = append(kept, holdRecord{bucket: h.Name, id: id, units: held[i], untilUS: holdUntilUS(h.Bucket, nowUS, spendFor)})
		}
	}
	return kept, held, nil
}

// addHolds sets the BucketStatus.Held of st's buckets from recs in force at st.Now
// and takes them from Remaining.
func addHolds(st *Status, recs []holdRecord) {
	for _, r := range recs {
		i := slices.IndexFunc(st.Buckets, func(b BucketStatus) bool { return b.Name == r.bucket })
		if i < 0 || r.untilUS <= st.Now.UnixMicro() {
			continue
		}
		b := &st.Buckets[i]
		if b.Held == nil {
			b.Held = map[string]int64{}
		}
		b.Held[r.id] += r.units
		b.Remaining = max(b.Remaining-r.units, 0)
	}
}
