package quota

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// runBackendSuite is the behaviour suite every Backend must pass (docs/design.md
// §4: "Both backends pass one shared behaviour test suite"). newBackend is
// called once per subtest and may return a shared backend: each subtest uses
// its own fresh credential (see suiteCredential) and resets it on cleanup.
// The backend is not closed by the suite; newBackend registers t.Cleanup if
// it needs to. Subtests run in parallel and use real time with windows of
// 1–3 s (about 4 s in total).

// Call it from a backend's test file, e.g.
//
//	func TestSQLiteBackendSuite(t *testing.T) {
//		runBackendSuite(t, func(t *testing.T) Backend { return newTestSQLite(t) })
//	}
func runBackendSuite(t *testing.T, newBackend func(t *testing.T) Backend) {
	t.Helper()
	cases := []struct {
		name string
		run  func(t *testing.T, b Backend, cred string)
	}{
		{"AdmitsUpToLimit", suiteAdmitsUpToLimit},
		{"WeightedCosts", suiteWeightedCosts},
		{"AtomicMultiBucket", suiteAtomicMultiBucket},
		{"DenialWritesNothing", suiteDenialWritesNothing},
		{"RetryAfter", suiteRetryAfter},
		{"SlidingExpiry", suiteSlidingExpiry},
		{"BoundaryBurst", suiteBoundaryBurst},
		{"MarkExhausted", suiteMarkExhausted},
		{"MarkSite", suiteMarkSite},
		{"MarkBoundedByBackendClock", suiteMarkBoundedByBackendClock},
		{"Reset", suiteReset},
		{"StatusReadOnly", suiteStatusReadOnly},
		{"Calendar", suiteCalendar},
		{"Credentials", suiteCredentials},
		{"Refund", suiteRefund},
		{"RefundNewestOnly", suiteRefundNewestOnly},
		{"RefundConcurrent", suiteRefundConcurrent},
		{"Shadow", suiteShadow},
		{"OutageReserve", suiteOutageReserve},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := newBackend(t)
			c.run(t, b, suiteCredential(t, b))
		})
	}
}

// suiteCredential returns a credential name unique to this test and this
// run (backends may persist across runs) and resets it on cleanup.
func suiteCredential(t *testing.T, b Backend) string {
	t.Helper()
	cred := fmt.Sprintf("test:%s:%d", strings.ReplaceAll(t.Name(), "/", "."), time.Now().UnixNano())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := b.Reset(ctx, cred); err != nil {
			t.Errorf("Reset(%q) on cleanup: %v", cred, err)
		}
	})
	return cred
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// charge builds the charges of one call: pairs of bucket and units.
func charge(b Bucket, units int64, more ...any) []bucketCharge {
	cs := []bucketCharge{{Bucket: b, Units: units}}
	for i := 0; i+1 < len(more); i += 2 {
		cs = append(cs, bucketCharge{Bucket: more[i].(Bucket), Units: more[i+1].(int64)})
	}
	return cs
}

func mustReserve(t *testing.T, b Backend, cred string, cs []bucketCharge) Decision {
	t.Helper()
	d, err := b.Reserve(testCtx(t), cred, "", cs)
	if err != nil {
		t.Fatalf("Reserve(%v): %v", cs, err)
	}
	return d
}

func mustAllow(t *testing.T, b Backend, cred string, cs []bucketCharge) Decision {
	t.Helper()
	d := mustReserve(t, b, cred, cs)
	if !d.Allowed {
		t.Fatalf("Reserve(%v) denied (bucket %q, retry after %v, exhausted %v), want allowed", cs, d.DeniedBucket, d.RetryAfter, d.Exhausted)
	}
	return d
}

func mustDeny(t *testing.T, b Backend, cred string, cs []bucketCharge, bucket string) Decision {
	t.Helper()
	d := mustReserve(t, b, cred, cs)
	if d.Allowed {
		t.Fatalf("Reserve(%v) allowed (remaining %v), want denied by %q", cs, d.Remaining, bucket)
	}
	if d.DeniedBucket != bucket {
		t.Fatalf("Reserve(%v): DeniedBucket = %q, want %q", cs, d.DeniedBucket, bucket)
	}
	if d.RetryAfter <= 0 {
		t.Fatalf("Reserve(%v): denied with RetryAfter %v, want > 0", cs, d.RetryAfter)
	}
	return d
}

func mustStatus(t *testing.T, b Backend, cred string, buckets []Bucket, maxCost map[string]int64) Status {
	t.Helper()
	st, err := b.Status(testCtx(t), cred, buckets, maxCost)
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	if len(st.Buckets) != len(buckets) {
		t.Fatalf("Status: %d buckets, want %d", len(st.Buckets), len(buckets))
	}
	return st
}

// stateOf keeps the parts of a Status that depend only on what is stored
// (not on the moment it is read), to compare two Status calls.
func stateOf(st Status) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "exhausted_until=%d", st.ExhaustedUntil().UnixMicro())
	for _, b := range st.Buckets {
		oldest := int64(0)
		if !b.Oldest.IsZero() {
			oldest = b.Oldest.UnixMicro()
		}
		fmt.Fprintf(&sb, " %s{used=%d remaining=%d entries=%d oldest=%d today=%d}", b.Name, b.Used, b.Remaining, b.Entries, oldest, b.UsedToday)
	}
	return sb.String()
}

func approx(t *testing.T, what string, got, want, tol time.Duration) {
	t.Helper()
	if d := got - want; d < -tol || d > tol {
		t.Errorf("%s = %v, want %v ± %v", what, got, want, tol)
	}
}

// nearMidnight reports whether now is so close to a Pacific midnight that
// "today" figures may legitimately change during a test.
func nearMidnight(now time.Time) bool {
	return NextPacificMidnight(now).Sub(now) < time.Minute || now.Sub(DayStart(now)) < time.Minute
}

func suiteAdmitsUpToLimit(t *testing.T, b Backend, cred string) {
	units := Bucket{Name: "units", Limit: 5, Window: time.Hour}
	for i := int64(1); i <= 5; i++ {
		d := mustAllow(t, b, cred, charge(units, 1))
		if got := d.Remaining["units"]; got != 5-i {
			t.Fatalf("call %d: Remaining = %d, want %d", i, got, 5-i)
		}
		if d.Now.IsZero() {
			t.Fatalf("call %d: Decision.Now is zero", i)
		}
	}
	d := mustDeny(t, b, cred, charge(units, 1), "units")
	if d.Remaining["units"] != 0 || d.Exhausted {
		t.Fatalf("denial: Remaining = %v, Exhausted = %v; want 0, false", d.Remaining, d.Exhausted)
	}
	if d.RetryAfter > units.Window {
		t.Fatalf("RetryAfter = %v, want <= the 1h window", d.RetryAfter)
	}
	st := mustStatus(t, b, cred, []Bucket{units}, map[string]int64{"units": 1})
	if bs := st.Buckets[0]; bs.Used != 5 || bs.Remaining != 0 || bs.Entries != 5 {
		t.Fatalf("Status = %+v, want used 5, remaining 0, entries 5", bs)
	}
}

func suiteWeightedCosts(t *testing.T, b Backend, cred string) {
	// The default bucket: 9,500 units, search.list costs 100 (docs/design.md §4).
	units := Bucket{Name: "units", Limit: 9500, Window: time.Hour}
	for i := int64(1); i <= 94; i++ {
		d := mustAllow(t, b, cred, charge(units, 100))
		if got := d.Remaining["units"]; got != 9500-100*i {
			t.Fatalf("call %d: Remaining = %d, want %d", i, got, 9500-100*i)
		}
	}
	// 100 left: one more 100 fits exactly, then nothing.
	mustAllow(t, b, cred, charge(units, 99))
	d := mustDeny(t, b, cred, charge(units, 100), "units")
	if d.Remaining["units"] != 1 {
		t.Fatalf("Remaining = %d after a denied 100, want 1", d.Remaining["units"])
	}
	if d := mustAllow(t, b, cred, charge(units, 1)); d.Remaining["units"] != 0 {
		t.Fatalf("Remaining = %d at the limit, want 0", d.Remaining["units"])
	}
	mustDeny(t, b, cred, charge(units, 1), "units")
	st := mustStatus(t, b, cred, []Bucket{units}, map[string]int64{"units": 100})
	// One entry per call, whatever its cost: memory grows with calls, not units.
	if bs := st.Buckets[0]; bs.Used != 9500 || bs.Entries != 96 {
		t.Fatalf("Status = used %d entries %d, want 9500 and 96", bs.Used, bs.Entries)
	}
}

func suiteAtomicMultiBucket(t *testing.T, b Backend, cred string) {
	// search.list charges units 100 and search 1.
	units := Bucket{Name: "units", Limit: 9500, Window: time.Hour}
	search := Bucket{Name: "search", Limit: 2, Window: time.Hour}
	buckets := []Bucket{units, search}
	searchList := charge(units, 100, search, int64(1))
	mustAllow(t, b, cred, searchList)
	d := mustAllow(t, b, cred, searchList)
	if d.Remaining["units"] != 9300 || d.Remaining["search"] != 0 {
		t.Fatalf("Remaining = %v, want units 9300, search 0", d.Remaining)
	}
	before := mustStatus(t, b, cred, buckets, nil)
	d = mustDeny(t, b, cred, searchList, "search")
	if d.Remaining["units"] != 9300 {
		t.Fatalf("Remaining[units] = %d after a denial by search, want 9300", d.Remaining["units"])
	}
	after := mustStatus(t, b, cred, buckets, nil)
	if stateOf(before) != stateOf(after) {
		t.Fatalf("a denial by search changed the state:\nbefore %s\nafter  %s", stateOf(before), stateOf(after))
	}
	if u := after.Buckets[0]; u.Used != 200 || u.Entries != 2 {
		t.Fatalf("units after denial: used %d entries %d, want 200 and 2", u.Used, u.Entries)
	}

	// The other way round: units denies, search must not record.
	cred2 := cred + ":2"
	t.Cleanup(func() { b.Reset(context.Background(), cred2) })
	small := Bucket{Name: "units", Limit: 150, Window: time.Hour}
	search95 := Bucket{Name: "search", Limit: 95, Window: time.Hour}
	mustAllow(t, b, cred2, charge(small, 100, search95, int64(1)))
	mustDeny(t, b, cred2, charge(small, 100, search95, int64(1)), "units")
	st := mustStatus(t, b, cred2, []Bucket{small, search95}, nil)
	if s := st.Buckets[1]; s.Used != 1 || s.Entries != 1 {
		t.Fatalf("search after a denial by units: used %d entries %d, want 1 and 1", s.Used, s.Entries)
	}
	// A cheaper call touching only units still fits.
	mustAllow(t, b, cred2, charge(small, 50))
}

func suiteDenialWritesNothing(t *testing.T, b Backend, cred string) {
	units := Bucket{Name: "units", Limit: 10, Window: time.Hour}
	daily := Bucket{Name: "daily", Limit: 100, Calendar: true}
	mustAllow(t, b, cred, charge(units, 4, daily, int64(4)))
	mustAllow(t, b, cred, charge(units, 6, daily, int64(6)))
	buckets := []Bucket{units, daily}
	before := mustStatus(t, b, cred, buckets, nil)
	for range 5 {
		mustDeny(t, b, cred, charge(units, 1, daily, int64(1)), "units")
		mustDeny(t, b, cred, charge(units, 10), "units")
	}
	after := mustStatus(t, b, cred, buckets, nil)
	if stateOf(before) != stateOf(after) {
		t.Fatalf("denials changed the state:\nbefore %s\nafter  %s", stateOf(before), stateOf(after))
	}
}

func suiteRetryAfter(t *testing.T, b Backend, cred string) {
	const window = 2 * time.Second
	units := Bucket{Name: "units", Limit: 3, Window: window}
	first := mustAllow(t, b, cred, charge(units, 1))
	time.Sleep(300 * time.Millisecond)
	second := mustAllow(t, b, cred, charge(units, 2))
	gap := second.Now.Sub(first.Now)

	d1 := mustDeny(t, b, cred, charge(units, 1), "units")
	got := time.Now()
	// A cost-1 call fits once the first entry expires, exactly window after it.
	approx(t, "RetryAfter(cost 1)", d1.RetryAfter, first.Now.Add(window).Sub(d1.Now), time.Millisecond)
	// A cost-3 call needs the second entry gone too.
	d3 := mustDeny(t, b, cred, charge(units, 3), "units")
	approx(t, "RetryAfter(3) - RetryAfter(1)", d3.RetryAfter-d1.RetryAfter, gap+d1.Now.Sub(d3.Now), time.Millisecond)
	// Computed, not guessed: it shrinks with time.
	time.Sleep(50 * time.Millisecond)
	d1b := mustDeny(t, b, cred, charge(units, 1), "units")
	approx(t, "RetryAfter 50ms later", d1b.RetryAfter, d1.RetryAfter-d1b.Now.Sub(d1.Now), time.Millisecond)

	// Still denied shortly before (the margin absorbs a loaded machine's
	// late wake-up).
	time.Sleep(time.Until(got.Add(d1.RetryAfter - 400*time.Millisecond)))
	mustDeny(t, b, cred, charge(units, 1), "units")
	time.Sleep(time.Until(got.Add(d1.RetryAfter + 2*time.Millisecond)))
	mustAllow(t, b, cred, charge(units, 1))
	mustDeny(t, b, cred, charge(units, 1), "units")
}

func suiteSlidingExpiry(t *testing.T, b Backend, cred string) {
	units := Bucket{Name: "units", Limit: 2, Window: time.Second}
	mustAllow(t, b, cred, charge(units, 1))
	mustAllow(t, b, cred, charge(units, 1))
	// A denied charge of 2 waits for both entries (however far apart a
	// loaded machine spaced them); then the window holds only what follows.
	d := mustDeny(t, b, cred, charge(units, 2), "units")
	time.Sleep(d.RetryAfter + 50*time.Millisecond)
	mustAllow(t, b, cred, charge(units, 2))
	mustDeny(t, b, cred, charge(units, 1), "units")
	st := mustStatus(t, b, cred, []Bucket{units}, nil)
	if bs := st.Buckets[0]; bs.Used != 2 || bs.Entries != 1 {
		t.Fatalf("after expiry: used %d entries %d, want 2 and 1", bs.Used, bs.Entries)
	}
}

// suiteBoundaryBurst is the fixed-window failure mode: a burst just before a
// wall-clock window boundary and another just after must not both pass.
func suiteBoundaryBurst(t *testing.T, b Backend, cred string) {
	const window = 2 * time.Second
	units := Bucket{Name: "units", Limit: 50, Window: window}
	boundary := time.Now().Truncate(window).Add(window)
	if time.Until(boundary) < 300*time.Millisecond {
		boundary = boundary.Add(window)
	}
	burst := func() (admitted int) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() {
				d, err := b.Reserve(testCtx(t), cred, "", charge(units, 1))
				if err != nil {
					t.Errorf("Reserve: %v", err)
					return
				}
				if d.Allowed {
					mu.Lock()
					admitted++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return admitted
	}
	time.Sleep(time.Until(boundary.Add(-150 * time.Millisecond)))
	before := burst()
	time.Sleep(time.Until(boundary.Add(10 * time.Millisecond)))
	after := burst()
	if before != 50 || after != 0 {
		t.Fatalf("admitted %d before and %d after the boundary, want 50 and 0 (limit 50 per %v)", before, after, window)
	}
}

func suiteMarkExhausted(t *testing.T, b Backend, cred string) {
	units := Bucket{Name: "units", Limit: 100, Window: time.Hour}
	mustAllow(t, b, cred, charge(units, 1))
	until := time.Now().Add(1500 * time.Millisecond)
	if err := b.MarkExhausted(testCtx(t), cred, Mark{Until: until}); err != nil {
		t.Fatalf("MarkExhausted: %v", err)
	}
	d := mustReserve(t, b, cred, charge(units, 1))
	if d.Allowed || !d.Exhausted || d.DeniedBucket != "" {
		t.Fatalf("after MarkExhausted: %+v, want denied, Exhausted, no DeniedBucket", d)
	}
	approx(t, "ExhaustedUntil", d.ExhaustedUntil.Sub(until), 0, time.Millisecond)
	approx(t, "RetryAfter", d.RetryAfter, until.Sub(d.Now), 2*time.Millisecond)
	if d.RetryAfter <= 0 || d.RetryAfter > 1500*time.Millisecond+time.Millisecond {
		t.Fatalf("RetryAfter = %v, want in (0, 1.5s]", d.RetryAfter)
	}
	st := mustStatus(t, b, cred, []Bucket{units}, nil)
	approx(t, "Status.ExhaustedUntil", st.ExhaustedUntil().Sub(until), 0, time.Millisecond)
	if bs := st.Buckets[0]; bs.Used != 1 {
		t.Fatalf("Used = %d while exhausted, want 1 (denials write nothing)", bs.Used)
	}
	time.Sleep(time.Until(until.Add(10 * time.Millisecond)))
	mustAllow(t, b, cred, charge(units, 1))
	if st := mustStatus(t, b, cred, []Bucket{units}, nil); !st.ExhaustedUntil().IsZero() {
		t.Fatalf("Status.ExhaustedUntil = %v after it passed, want zero", st.ExhaustedUntil())
	}
}

// suiteMarkSite: a call site's mark denies that call site only, says why in
// Status, only moves later, and ends at its until; the credential's mark
// denies every call site and wins a tie.
func suiteMarkSite(t *testing.T, b Backend, cred string) {
	ctx := testCtx(t)
	units := Bucket{Name: "units", Limit: 100, Window: time.Hour}
	until := time.Now().Add(1500 * time.Millisecond)
	why := "HTTP 429 RESOURCE_EXHAUSTED: limit Search Queries per day"
	if err := b.MarkExhausted(ctx, cred, Mark{Site: "search.list", Until: until, Why: why}); err != nil {
		t.Fatalf("MarkExhausted(search.list): %v", err)
	}
	if err := b.MarkExhausted(ctx, cred, Mark{Site: "search.list", Until: until.Add(-time.Second), Why: "earlier"}); err != nil {
		t.Fatalf("MarkExhausted(search.list, earlier): %v", err)
	}
	d, err := b.Reserve(ctx, cred, "search.list", charge(units, 1))
	if err != nil || d.Allowed || !d.Exhausted || !d.SiteExhausted || d.DeniedBucket != "" {
		t.Fatalf("search.list while marked: %+v, %v; want denied by its own mark", d, err)
	}
	approx(t, "ExhaustedUntil", d.ExhaustedUntil.Sub(until), 0, time.Millisecond)
	if d, err := b.Reserve(ctx, cred, "videos.list", charge(units, 1)); err != nil || !d.Allowed {
		t.Fatalf("videos.list while search.list is marked: %+v, %v; want allowed", d, err)
	}
	mustAllow(t, b, cred, charge(units, 1)) // no call site: the credential's mark only
	st := mustStatus(t, b, cred, []Bucket{units}, nil)
	if len(st.Marks) != 1 || st.Marks[0].Site != "search.list" || st.Marks[0].Why != why || !st.ExhaustedUntil().IsZero() {
		t.Fatalf("Status.Marks = %+v, want search.list's only, with why %q", st.Marks, why)
	}
	approx(t, "Marks[0].Until", st.Marks[0].Until.Sub(until), 0, time.Millisecond)

	if err := b.MarkExhausted(ctx, cred, Mark{Until: until, Why: "HTTP 403 quotaExceeded"}); err != nil {
		t.Fatalf("MarkExhausted(credential): %v", err)
	}
	for _, site := range []string{"search.list", "videos.list"} {
		d, err := b.Reserve(ctx, cred, site, charge(units, 1))
		if err != nil || d.Allowed || !d.Exhausted || d.SiteExhausted {
			t.Fatalf("%s while the credential is marked: %+v, %v; want denied by the credential's mark", site, d, err)
		}
	}
	st = mustStatus(t, b, cred, []Bucket{units}, nil)
	if len(st.Marks) != 2 || st.Marks[0].Site != "" || st.Marks[0].Why != "HTTP 403 quotaExceeded" || st.Marks[1].Site != "search.list" {
		t.Fatalf("Status.Marks = %+v, want the credential's then search.list's", st.Marks)
	}
	time.Sleep(time.Until(until.Add(10 * time.Millisecond)))
	if d, err := b.Reserve(ctx, cred, "search.list", charge(units, 1)); err != nil || !d.Allowed {
		t.Fatalf("search.list after its mark passed: %+v, %v; want allowed", d, err)
	}
	if st := mustStatus(t, b, cred, []Bucket{units}, nil); len(st.Marks) != 0 {
		t.Fatalf("Status.Marks = %+v after they passed, want none", st.Marks)
	}
}

func suiteReset(t *testing.T, b Backend, cred string) {
	units := Bucket{Name: "units", Limit: 3, Window: time.Hour}
	daily := Bucket{Name: "daily", Limit: 3, Calendar: true}
	mustAllow(t, b, cred, charge(units, 3, daily, int64(3)))
	if err := b.MarkExhausted(testCtx(t), cred, Mark{Until: time.Now().Add(time.Hour)}); err != nil {
		t.Fatalf("MarkExhausted: %v", err)
	}
	if err := b.Reset(testCtx(t), cred); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	st := mustStatus(t, b, cred, []Bucket{units, daily}, nil)
	for _, bs := range st.Buckets {
		if bs.Used != 0 || bs.Entries != 0 || bs.UsedToday != 0 || !bs.Oldest.IsZero() {
			t.Fatalf("after Reset: %+v, want empty", bs)
		}
	}
	if !st.ExhaustedUntil().IsZero() {
		t.Fatalf("after Reset: ExhaustedUntil = %v, want zero", st.ExhaustedUntil())
	}
	mustAllow(t, b, cred, charge(units, 3, daily, int64(3)))
	// Reset of an unknown credential is not an error.
	if err := b.Reset(testCtx(t), cred+":never-used"); err != nil {
		t.Fatalf("Reset(unknown): %v", err)
	}
}

func suiteStatusReadOnly(t *testing.T, b Backend, cred string) {
	const window = 3 * time.Second
	units := Bucket{Name: "units", Limit: 10, Window: window}
	buckets := []Bucket{units}
	maxCost := map[string]int64{"units": 5}

	empty := mustStatus(t, b, cred, buckets, maxCost)
	if bs := empty.Buckets[0]; bs.Used != 0 || bs.Remaining != 10 || bs.Entries != 0 || !bs.Oldest.IsZero() ||
		bs.RetryAfterOne != 0 || bs.RetryAfterMax != 0 || bs.UsedToday != 0 || bs.MaxCost != 5 {
		t.Fatalf("empty Status = %+v", bs)
	}
	first := mustAllow(t, b, cred, charge(units, 3))
	mustAllow(t, b, cred, charge(units, 4))

	st := mustStatus(t, b, cred, buckets, maxCost)
	bs := st.Buckets[0]
	if bs.Name != "units" || bs.Limit != 10 || bs.Used != 7 || bs.Remaining != 3 || bs.Entries != 2 || bs.MaxCost != 5 {
		t.Fatalf("Status = %+v, want units used 7 remaining 3 entries 2 max cost 5", bs)
	}
	approx(t, "Oldest", bs.Oldest.Sub(first.Now), 0, time.Millisecond)
	if bs.RetryAfterOne != 0 {
		t.Fatalf("RetryAfterOne = %v with 3 units left, want 0", bs.RetryAfterOne)
	}
	// A cost-5 call needs 2 more units: the oldest entry (3 units) must go.
	approx(t, "RetryAfterMax", bs.RetryAfterMax, bs.Oldest.Add(window).Sub(st.Now), time.Millisecond)
	if !nearMidnight(st.Now) && bs.UsedToday != 7 {
		t.Fatalf("UsedToday = %d, want 7", bs.UsedToday)
	}
	if st.Now.IsZero() || st.Now.Before(first.Now) {
		t.Fatalf("Status.Now = %v, want >= the decision's %v", st.Now, first.Now)
	}

	for range 30 {
		again := mustStatus(t, b, cred, buckets, maxCost)
		if stateOf(again) != stateOf(st) {
			t.Fatalf("Status changed the state:\nfirst %s\nlater %s", stateOf(st), stateOf(again))
		}
	}
	// Status does not admit: the 3 units left are still there.
	mustAllow(t, b, cred, charge(units, 3))
	lastAt := time.Now()
	full := mustStatus(t, b, cred, buckets, maxCost).Buckets[0]
	if full.Remaining != 0 || full.RetryAfterOne <= 0 || full.RetryAfterOne > full.RetryAfterMax {
		t.Fatalf("full bucket: %+v, want remaining 0 and 0 < RetryAfterOne <= RetryAfterMax", full)
	}
	// Status does not evict or extend: once the window has passed, it is empty.
	time.Sleep(time.Until(lastAt.Add(window + 50*time.Millisecond)))
	late := mustStatus(t, b, cred, buckets, maxCost).Buckets[0]
	if late.Used != 0 || late.Entries != 0 || !late.Oldest.IsZero() || late.RetryAfterOne != 0 {
		t.Fatalf("after the window: %+v, want empty", late)
	}
}

func suiteCalendar(t *testing.T, b Backend, cred string) {
	daily := Bucket{Name: "daily", Limit: 2, Calendar: true}
	mustAllow(t, b, cred, charge(daily, 1))
	mustAllow(t, b, cred, charge(daily, 1))
	d := mustDeny(t, b, cred, charge(daily, 1), "daily")
	approx(t, "calendar RetryAfter", d.RetryAfter, NextPacificMidnight(d.Now).Sub(d.Now), time.Millisecond)
	st := mustStatus(t, b, cred, []Bucket{daily}, map[string]int64{"daily": 1})
	bs := st.Buckets[0]
	approx(t, "calendar RetryAfterOne", bs.RetryAfterOne, NextPacificMidnight(st.Now).Sub(st.Now), time.Millisecond)
	if !nearMidnight(st.Now) && (bs.Used != 2 || bs.UsedToday != 2) {
		t.Fatalf("calendar Status = %+v, want used 2, used today 2", bs)
	}
}

// suiteCredentials checks that credentials do not share buckets.
func suiteCredentials(t *testing.T, b Backend, cred string) {
	units := Bucket{Name: "units", Limit: 1, Window: time.Hour}
	other := cred + ":other"
	t.Cleanup(func() { b.Reset(context.Background(), other) })
	mustAllow(t, b, cred, charge(units, 1))
	mustDeny(t, b, cred, charge(units, 1), "units")
	mustAllow(t, b, other, charge(units, 1))
	if err := b.MarkExhausted(testCtx(t), other, Mark{Until: time.Now().Add(time.Hour)}); err != nil {
		t.Fatalf("MarkExhausted: %v", err)
	}
	if d := mustReserve(t, b, cred, charge(units, 1)); d.Exhausted {
		t.Fatalf("marking %q exhausted exhausted %q", other, cred)
	}
}

func mustRefund(t *testing.T, b Backend, cred string, r Reservation) {
	t.Helper()
	if _, err := b.Refund(testCtx(t), cred, r); err != nil {
		t.Fatalf("Refund: %v", err)
	}
}

// suiteRefund: a refunded multi-bucket reservation leaves no trace in any
// bucket it charged; refunding again, or the zero Reservation, changes nothing.
func suiteRefund(t *testing.T, b Backend, cred string) {
	units := Bucket{Name: "units", Limit: 9500, Window: time.Hour}
	search := Bucket{Name: "search", Limit: 1, Window: time.Hour}
	daily := Bucket{Name: "daily", Limit: 200, Calendar: true}
	buckets := []Bucket{units, search, daily}
	empty := mustStatus(t, b, cred, buckets, nil)

	d := mustAllow(t, b, cred, charge(units, 100, search, int64(1), daily, int64(100)))
	if got := d.Reservation.Units(); got["units"] != 100 || got["search"] != 1 || got["daily"] != 100 || len(got) != 3 {
		t.Fatalf("Reservation.Units() = %v, want units 100, search 1, daily 100", got)
	}
	mustDeny(t, b, cred, charge(units, 100, search, int64(1)), "search")
	if denied := mustReserve(t, b, cred, charge(search, 1)); !denied.Reservation.IsZero() {
		t.Fatalf("a denial carries a Reservation %v", denied.Reservation.Units())
	}
	mustRefund(t, b, cred, d.Reservation)
	if got := mustStatus(t, b, cred, buckets, nil); stateOf(got) != stateOf(empty) {
		t.Fatalf("after the refund:\n got %s\nwant %s (as before the reservation)", stateOf(got), stateOf(empty))
	}
	// The capacity is back: the search bucket admits again, exactly once.
	again := mustAllow(t, b, cred, charge(units, 100, search, int64(1)))
	mustDeny(t, b, cred, charge(search, 1), "search")
	before := mustStatus(t, b, cred, buckets, nil)
	mustRefund(t, b, cred, d.Reservation) // already refunded: must not take "again"
	mustRefund(t, b, cred, Reservation{})
	if got := mustStatus(t, b, cred, buckets, nil); stateOf(got) != stateOf(before) {
		t.Fatalf("a second refund changed the state:\nbefore %s\nafter  %s", stateOf(before), stateOf(got))
	}
	if again.Reservation.IsZero() || !(Reservation{}).IsZero() {
		t.Fatalf("IsZero: admitted %v, zero %v", again.Reservation.IsZero(), (Reservation{}).IsZero())
	}
}

// suiteRefundNewestOnly: a refund removes its entry while it is the newest
// of its bucket, and only it; an entry with a later one after it stays,
// counted (the safe side), and Used, Entries, Oldest, Retry-After and
// admission stay exact.
func suiteRefundNewestOnly(t *testing.T, b Backend, cred string) {
	const window = 2 * time.Second
	units := Bucket{Name: "units", Limit: 10, Window: window}
	buckets := []Bucket{units}
	first := mustAllow(t, b, cred, charge(units, 2))
	time.Sleep(200 * time.Millisecond)
	mid := mustAllow(t, b, cred, charge(units, 3))
	last := mustAllow(t, b, cred, charge(units, 4))

	for _, r := range []struct {
		d    Decision
		want bool
	}{{mid, false}, {last, true}, {last, false}} { // mid is not the newest: it stays
		if got, err := b.Refund(testCtx(t), cred, r.d.Reservation); err != nil || got != r.want {
			t.Fatalf("Refund = %v, %v; want %v", got, err, r.want)
		}
	}
	bs := mustStatus(t, b, cred, buckets, map[string]int64{"units": 5}).Buckets[0]
	if bs.Used != 5 || bs.Entries != 2 || bs.Remaining != 5 {
		t.Fatalf("after refunding the newest entry: used %d entries %d remaining %d, want 5, 2, 5", bs.Used, bs.Entries, bs.Remaining)
	}
	approx(t, "Oldest", bs.Oldest.Sub(first.Now), 0, time.Millisecond)
	// Exactly the refunded 4 units came back: 5 fit, 6 do not.
	fill := mustAllow(t, b, cred, charge(units, 5))
	if fill.Remaining["units"] != 0 {
		t.Fatalf("Remaining = %d after filling, want 0", fill.Remaining["units"])
	}
	// A cost-2 call needs the first entry (2 units) gone; cost 3 the
	// second one as well.
	d := mustDeny(t, b, cred, charge(units, 2), "units")
	approx(t, "RetryAfter(2)", d.RetryAfter, first.Now.Add(window).Sub(d.Now), time.Millisecond)
	d = mustDeny(t, b, cred, charge(units, 3), "units")
	approx(t, "RetryAfter(3)", d.RetryAfter, mid.Now.Add(window).Sub(d.Now), time.Millisecond)
	if !nearMidnight(d.Now) {
		if bs := mustStatus(t, b, cred, buckets, nil).Buckets[0]; bs.UsedToday != 10 {
			t.Fatalf("UsedToday = %d, want 10", bs.UsedToday)
		}
	}

	// All or none: a reservation still the newest in one of its buckets but
	// not in the other keeps both entries.
	x, y := Bucket{Name: "x", Limit: 10, Window: time.Hour}, Bucket{Name: "y", Limit: 10, Window: time.Hour}
	both := mustAllow(t, b, cred, charge(x, 2, y, int64(3)))
	mustAllow(t, b, cred, charge(y, 1))
	mustRefund(t, b, cred, both.Reservation)
	if st := mustStatus(t, b, cred, []Bucket{x, y}, nil); st.Buckets[0].Used != 2 || st.Buckets[1].Used != 4 {
		t.Fatalf("after a refund newest in x only: used x %d y %d, want 2 and 4 (nothing refunded)", st.Buckets[0].Used, st.Buckets[1].Used)
	}
}

// suiteRefundConcurrent: 40 goroutines reserve, half of them refund at
// once, interleaved with the others' reservations; a refund whose entry is
// no longer the newest leaves it counted, so at least the units of the
// calls not refunded are counted and at most all, and the bucket then
// admits exactly the rest.
func suiteRefundConcurrent(t *testing.T, b Backend, cred string) {
	units := Bucket{Name: "units", Limit: 200, Window: time.Hour}
	search := Bucket{Name: "search", Limit: 40, Window: time.Hour}
	var wg sync.WaitGroup
	var mu sync.Mutex
	kept, all := int64(0), int64(0)
	for i := range 40 {
		all += int64(1 + i%4)
		wg.Go(func() {
			cost := int64(1 + i%4)
			d, err := b.Reserve(testCtx(t), cred, "", charge(units, cost, search, int64(1)))
			if err != nil || !d.Allowed {
				t.Errorf("Reserve %d: %+v, %v", i, d, err)
				return
			}
			if i%2 == 0 {
				if _, err := b.Refund(testCtx(t), cred, d.Reservation); err != nil {
					t.Errorf("Refund %d: %v", i, err)
				}
				return
			}
			mu.Lock()
			kept += cost
			mu.Unlock()
		})
	}
	wg.Wait()
	st := mustStatus(t, b, cred, []Bucket{units, search}, nil)
	u, s := st.Buckets[0], st.Buckets[1]
	if u.Used < kept || u.Used > all || u.Entries < 20 || s.Used != s.Entries || s.Used != u.Entries {
		t.Fatalf("after 40 reservations and 20 refunds: units used %d in %d entries, search %d in %d; want %d-%d units, as many entries in both",
			u.Used, u.Entries, s.Used, s.Entries, kept, all)
	}
	mustAllow(t, b, cred, charge(units, 200-u.Used))
	mustDeny(t, b, cred, charge(units, 1), "units")
}

// suiteShadow: a shadow bucket records every admitted call, never denies,
// and counts its would-be denials per call site (issue 41 item 3).
func suiteShadow(t *testing.T, b Backend, cred string) {
	ctx := testCtx(t)
	units := Bucket{Name: "units", Limit: 3, Window: time.Hour}
	tight := Bucket{Name: "tight", Limit: 2, Window: time.Hour, Shadow: true}
	reserve := func(site string, cs []bucketCharge, wantAllowed bool, wantShadow ...string) {
		t.Helper()
		d, err := b.Reserve(ctx, cred, site, cs)
		if err != nil || d.Allowed != wantAllowed || fmt.Sprint(d.ShadowDenied) != fmt.Sprint(wantShadow) {
			t.Fatalf("Reserve(%s, %v) = %+v, %v; want allowed %v, ShadowDenied %v", site, cs, d, err, wantAllowed, wantShadow)
		}
		if d.Allowed && d.Remaining[tight.Name] < 0 {
			t.Fatalf("Remaining[tight] = %d, want >= 0", d.Remaining[tight.Name])
		}
	}
	reserve("videos.list", charge(units, 1, tight, int64(1)), true)
	reserve("videos.list", charge(units, 1, tight, int64(1)), true)
	reserve("videos.list", charge(units, 1, tight, int64(1)), true, "tight") // over tight: admitted, counted
	reserve("videos.list", charge(units, 1, tight, int64(1)), false)         // denied by units: not counted
	reserve("search.list", charge(tight, 2), true, "tight")
	reserve("search.list", charge(tight, 2), true, "tight")
	st := mustStatus(t, b, cred, []Bucket{units, tight}, nil)
	if st.Buckets[0].ShadowDenials != nil {
		t.Errorf("units (enforced) ShadowDenials = %v, want nil", st.Buckets[0].ShadowDenials)
	}
	if got := st.Buckets[1]; got.Used != 7 || got.Remaining != 0 || fmt.Sprint(got.ShadowDenials) != "map[search.list:2 videos.list:1]" {
		t.Errorf("tight: used %d, remaining %d, ShadowDenials %v; want 7, 0, map[search.list:2 videos.list:1]", got.Used, got.Remaining, got.ShadowDenials)
	}
	if err := b.Reset(ctx, cred); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	if st := mustStatus(t, b, cred, []Bucket{units, tight}, nil); st.Buckets[1].ShadowDenials != nil || st.Buckets[1].Used != 0 {
		t.Errorf("after Reset: tight %+v, want empty", st.Buckets[1])
	}
}

// suiteMarkBoundedByBackendClock: a mark asked to last days (a caller whose clock runs days
// ahead computed "the next Pacific midnight") ends at the next Pacific midnight by the
// backend's clock (issue 40.7).
func suiteMarkBoundedByBackendClock(t *testing.T, b Backend, cred string) {
	units := Bucket{Name: "units", Limit: 100, Window: time.Hour}
	ahead := NextPacificMidnight(time.Now().Add(72 * time.Hour))
	for _, site := range []string{"", "videos.list"} {
		if err := b.MarkExhausted(testCtx(t), cred, Mark{Site: site, Until: ahead, Why: "per day"}); err != nil {
			t.Fatalf("MarkExhausted: %v", err)
		}
	}
	st := mustStatus(t, b, cred, []Bucket{units}, nil)
	want := NextPacificMidnight(st.Now)
	if len(st.Marks) != 2 {
		t.Fatalf("Marks = %+v, want 2", st.Marks)
	}
	for _, m := range st.Marks {
		if !m.Until.Equal(want) {
			t.Errorf("mark %q ends %v, want the next Pacific midnight by the backend's clock %v", m.Site, m.Until, want)
		}
	}
}

// suiteOutageReserve: holds count in every decision and in Status until released (their spent
// units then stay as entries) or expired; a hold takes only what fits beside the others.
func suiteOutageReserve(t *testing.T, b Backend, cred string) {
	ctx := testCtx(t)
	units := Bucket{Name: "units", Limit: 10, Window: time.Hour}
	day := Bucket{Name: "day", Limit: 10, Calendar: true}
	short := Bucket{Name: "short", Limit: 4, Window: time.Second}
	buckets := []Bucket{units, day, short}
	hold := func(id string, spent, want int64, wantHeld string) {
		t.Helper()
		hs := []holdCharge{{Bucket: units, Spent: spent, Want: want}, {Bucket: day, Spent: spent, Want: want}}
		if held, err := b.Hold(ctx, cred, id, hs, time.Hour); err != nil || fmt.Sprint(held) != wantHeld {
			t.Fatalf("Hold(%s, spent %d, want %d) = %v, %v; want %s", id, spent, want, held, err, wantHeld)
		}
	}
	status := func(want string) {
		t.Helper()
		var got []string
		for _, bs := range mustStatus(t, b, cred, buckets, nil).Buckets {
			got = append(got, fmt.Sprintf("%s used %d remaining %d held %v", bs.Name, bs.Used, bs.Remaining, bs.Held))
		}
		if strings.Join(got, "; ") != want {
			t.Fatalf("Status:\n got %s\nwant %s", strings.Join(got, "; "), want)
		}
	}
	mustAllow(t, b, cred, charge(units, 2, day, int64(2)))
	hold("a.example#1", 0, 5, "[5 5]")
	hold("b.example#1", 0, 5, "[3 3]") // only what fits beside a's
	status("units used 2 remaining 0 held map[a.example#1:5 b.example#1:3]; day used 2 remaining 0 held map[a.example#1:5 b.example#1:3]; short used 0 remaining 4 held map[]")
	mustDeny(t, b, cred, charge(units, 1), "units")
	mustDeny(t, b, cred, charge(day, 1), "day")
	hold("a.example#1", 4, 0, "[0 0]") // a spent 4 in the outage: counted now, its hold gone
	status("units used 6 remaining 1 held map[b.example#1:3]; day used 6 remaining 1 held map[b.example#1:3]; short used 0 remaining 4 held map[]")
	mustAllow(t, b, cred, charge(units, 1, day, int64(1)))
	mustDeny(t, b, cred, charge(units, 1), "units")
	if held, err := b.Hold(ctx, cred, "c#1", []holdCharge{{Bucket: short, Want: 3}}, 300*time.Millisecond); err != nil || fmt.Sprint(held) != "[3]" {
		t.Fatalf("Hold(short) = %v, %v; want [3]", held, err)
	}
	mustDeny(t, b, cred, charge(short, 2), "short")
	time.Sleep(1400 * time.Millisecond) // the hold ends 300 ms + the 1 s window after it was taken
	mustAllow(t, b, cred, charge(short, 4))
	if err := b.Reset(ctx, cred); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	status("units used 0 remaining 10 held map[]; day used 0 remaining 10 held map[]; short used 0 remaining 4 held map[]")
}
