package quota

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/trendfetch/trendfetch/internal/quota/redistest"
)

// Run lease tests (lease.go) against real backends: SQLite files in
// t.TempDir() and real redis-server processes; never mocks.

// leaseLimiter wraps b in a Limiter with one bucket (leases need no buckets).
// Holder returns this holder's description, as others see it.
func (l *runLease) Holder() string { return describeHolder(leaseHolderOf(l.token)) }

func leaseLimiter(t testing.TB, b Backend) *Limiter {
	t.Helper()
	l, err := New(b, []Bucket{{Name: "units", Limit: 10, Window: time.Hour}}, Costs{"videos.list": {{Bucket: "units", Units: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// runLeaseSuite is the lease behaviour every leaseLocker backend must pass.
// newBackend is called once per subtest and may return a shared backend:
// each subtest uses its own credential. Subtests run in parallel with real
// time and ttls of 300 ms to 600 ms.
func runLeaseSuite(t *testing.T, newBackend func(t *testing.T) Backend) {
	t.Helper()
	cases := []struct {
		name string
		run  func(t *testing.T, b Backend, cred string)
	}{
		{"HeldByAnother", leaseSuiteHeld},
		{"ReleaseThenAcquire", leaseSuiteRelease},
		{"ExpiresAfterTTL", leaseSuiteExpiry},
		{"RenewalKeepsItAlive", leaseSuiteRenewal},
		{"RenewByNonHolder", leaseSuiteRenewNonHolder},
		{"UnlockByNonHolder", leaseSuiteUnlockNonHolder},
		{"LostWhenStolenAfterExpiry", leaseSuiteLostStolen},
		{"LostWhenUnlockedUnderneath", leaseSuiteLostTaken},
		{"BadArguments", leaseSuiteBadArgs},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := newBackend(t)
			c.run(t, b, suiteCredential(t, b))
		})
	}
}

func mustAcquire(t *testing.T, l *Limiter, cred, region string, ttl time.Duration, holder string) *runLease {
	t.Helper()
	lease, err := l.AcquireLease(testCtx(t), cred, region, ttl, holder)
	if err != nil {
		t.Fatalf("AcquireLease(%s, %s) by %q: %v", cred, region, holder, err)
	}
	t.Cleanup(func() { lease.Release(context.Background()) })
	return lease
}

func mustBeHeld(t *testing.T, err error, cred, region, holder string, ttl time.Duration) *LeaseHeldError {
	t.Helper()
	var held *LeaseHeldError
	if !errors.As(err, &held) {
		t.Fatalf("err = %v, want a *LeaseHeldError", err)
	}
	if held.Credential != cred || held.Region != region || held.Holder != holder {
		t.Fatalf("LeaseHeldError = %+v, want credential %q, region %q, holder %q", held, cred, region, holder)
	}
	if held.Remaining <= 0 || held.Remaining > ttl {
		t.Fatalf("LeaseHeldError.Remaining = %v, want in (0, %v]", held.Remaining, ttl)
	}
	if errors.Is(err, ErrUnavailable) {
		t.Fatalf("a held lease is not a backend failure: %v", err)
	}
	return held
}

func mustTryLock(t *testing.T, lk leaseLocker, name leaseID, token string, ttl time.Duration, want bool) (string, time.Duration) {
	t.Helper()
	ok, holder, remaining, err := lk.TryLock(testCtx(t), name, token, ttl)
	if err != nil {
		t.Fatalf("TryLock(%v, %s): %v", name, token, err)
	}
	if ok != want {
		t.Fatalf("TryLock(%v, %s) = %v (holder %q, remaining %v), want %v", name, token, ok, holder, remaining, want)
	}
	return holder, remaining
}

func notLost(t *testing.T, lease *runLease) {
	t.Helper()
	select {
	case <-lease.Lost():
		t.Fatalf("lease lost: %v", lease.Err())
	default:
	}
	if err := lease.Err(); err != nil {
		t.Fatalf("Err() = %v while not lost", err)
	}
}

func waitLost(t *testing.T, lease *runLease, within time.Duration) {
	t.Helper()
	select {
	case <-lease.Lost():
	case <-time.After(within):
		t.Fatalf("Lost() not closed within %v", within)
	}
	if !errors.Is(lease.Err(), errLeaseLost) {
		t.Fatalf("Err() = %v, want errLeaseLost", lease.Err())
	}
}

// A second acquire fails with *LeaseHeldError naming the holder; another
// region or credential is independent.
func leaseSuiteHeld(t *testing.T, b Backend, cred string) {
	l := leaseLimiter(t, b)
	ttl := 5 * time.Second
	a := mustAcquire(t, l, cred, "US", ttl, "host-a pid 123")
	if a.Holder() != "host-a pid 123" || a.id != (leaseID{cred, "US"}) || a.ttl != ttl {
		t.Fatalf("lease = %q %v %v", a.Holder(), a.id, a.ttl)
	}
	_, err := l.AcquireLease(testCtx(t), cred, "US", ttl, "host-b pid 456")
	held := mustBeHeld(t, err, cred, "US", "host-a pid 123", ttl)
	want := fmt.Sprintf(`region US of credential %q is already being run by host-a pid 123 (lease expires in 5s)`, cred)
	if held.Error() != want {
		t.Errorf("message = %q, want %q", held.Error(), want)
	}
	mustAcquire(t, l, cred, "GB", ttl, "host-b pid 456")
	mustAcquire(t, l, cred+"-other", "US", ttl, "host-b pid 456")
	// The default holder is this host and pid.
	_, err = l.AcquireLease(testCtx(t), cred, "GB", ttl, "")
	mustBeHeld(t, err, cred, "GB", "host-b pid 456", ttl)
	d := mustAcquire(t, l, cred, "JP", ttl, "")
	if host, _ := os.Hostname(); !strings.HasPrefix(d.Holder(), host+" pid "+strconv.Itoa(os.Getpid())+" since ") {
		t.Errorf("default holder = %q, want this host and pid", d.Holder())
	}
	notLost(t, a)
}

// Release frees the lease at once; it is idempotent and a released lease
// is not reported lost.
func leaseSuiteRelease(t *testing.T, b Backend, cred string) {
	l := leaseLimiter(t, b)
	a := mustAcquire(t, l, cred, "US", time.Minute, "host-a pid 1")
	if err := a.Release(testCtx(t)); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := a.Release(testCtx(t)); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	bl := mustAcquire(t, l, cred, "US", time.Minute, "host-b pid 2")
	// Releasing a again must not free b's lease.
	if err := a.Release(testCtx(t)); err != nil {
		t.Fatalf("third Release: %v", err)
	}
	_, err := l.AcquireLease(testCtx(t), cred, "US", time.Minute, "host-c pid 3")
	mustBeHeld(t, err, cred, "US", "host-b pid 2", time.Minute)
	notLost(t, a)
	notLost(t, bl)
}

// Without renewal a lease expires after its ttl, and only then.
func leaseSuiteExpiry(t *testing.T, b Backend, cred string) {
	lk := b.(leaseLocker)
	name := leaseID{cred, "US"}
	// A ttl far above a loaded machine's scheduling delays: the checks at
	// ttl/3 must see the lease held.
	ttl := time.Second
	start := time.Now()
	if holder, rem := mustTryLock(t, lk, name, "tokA host-a pid 1", ttl, true); holder != "host-a pid 1" || rem != ttl {
		t.Fatalf("TryLock = holder %q, remaining %v; want own holder and ttl", holder, rem)
	}
	holder, rem := mustTryLock(t, lk, name, "tokB host-b pid 2", ttl, false)
	if holder != "host-a pid 1" || rem <= 0 || rem > ttl {
		t.Fatalf("held: holder %q, remaining %v", holder, rem)
	}
	// Re-taking with the same token extends it.
	mustTryLock(t, lk, name, "tokA host-a pid 1", ttl, true)
	for time.Since(start) < ttl/3 {
		time.Sleep(10 * time.Millisecond)
	}
	mustTryLock(t, lk, name, "tokB host-b pid 2", ttl, false)
	time.Sleep(ttl + 50*time.Millisecond)
	mustTryLock(t, lk, name, "tokB host-b pid 2", ttl, true)
	holder, _ = mustTryLock(t, lk, name, "tokA host-a pid 1", ttl, false)
	if holder != "host-b pid 2" {
		t.Fatalf("holder = %q, want host-b pid 2", holder)
	}
}

// Background renewal keeps a lease alive over several ttls.
func leaseSuiteRenewal(t *testing.T, b Backend, cred string) {
	l := leaseLimiter(t, b)
	lk := b.(leaseLocker)
	ttl := time.Second // renewals every ttl/3 must not miss a ttl on a loaded machine
	a := mustAcquire(t, l, cred, "US", ttl, "host-a pid 1")
	deadline := time.Now().Add(3 * ttl)
	for time.Now().Before(deadline) {
		holder, _ := mustTryLock(t, lk, leaseID{cred, "US"}, "tokB host-b pid 2", ttl, false)
		if holder != "host-a pid 1" {
			t.Fatalf("holder = %q", holder)
		}
		time.Sleep(ttl / 5)
	}
	notLost(t, a)
	if err := a.Release(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	mustTryLock(t, lk, leaseID{cred, "US"}, "tokB host-b pid 2", ttl, true)
	notLost(t, a)
}

// Renew succeeds only for the holder of an unexpired lease.
func leaseSuiteRenewNonHolder(t *testing.T, b Backend, cred string) {
	lk := b.(leaseLocker)
	ctx := testCtx(t)
	name := leaseID{cred, "US"}
	ttl := 300 * time.Millisecond
	if ok, err := lk.Renew(ctx, name, "tokA host-a", ttl); err != nil || ok {
		t.Fatalf("Renew of a lease never taken = %v, %v; want false", ok, err)
	}
	mustTryLock(t, lk, name, "tokA host-a", ttl, true)
	if ok, err := lk.Renew(ctx, name, "tokB host-b", ttl); err != nil || ok {
		t.Fatalf("Renew by a non-holder = %v, %v; want false", ok, err)
	}
	if ok, err := lk.Renew(ctx, name, "tokA host-a", ttl); err != nil || !ok {
		t.Fatalf("Renew by the holder = %v, %v; want true", ok, err)
	}
	time.Sleep(ttl + 50*time.Millisecond)
	if ok, err := lk.Renew(ctx, name, "tokA host-a", ttl); err != nil || ok {
		t.Fatalf("Renew after expiry = %v, %v; want false (lost)", ok, err)
	}
}

// Unlock by a non-holder leaves the lease alone.
func leaseSuiteUnlockNonHolder(t *testing.T, b Backend, cred string) {
	lk := b.(leaseLocker)
	ctx := testCtx(t)
	name := leaseID{cred, "US"}
	ttl := time.Minute
	if err := lk.Unlock(ctx, name, "tokA host-a"); err != nil {
		t.Fatalf("Unlock of a lease never taken: %v", err)
	}
	mustTryLock(t, lk, name, "tokA host-a", ttl, true)
	if err := lk.Unlock(ctx, name, "tokB host-b"); err != nil {
		t.Fatalf("Unlock by a non-holder: %v", err)
	}
	mustTryLock(t, lk, name, "tokB host-b", ttl, false)
	if err := lk.Unlock(ctx, name, "tokA host-a"); err != nil {
		t.Fatal(err)
	}
	mustTryLock(t, lk, name, "tokB host-b", ttl, true)
}

// A lease whose renewal came too late (here: paused past its ttl) and was
// taken by another holder meanwhile is lost at the next renewal; its
// Release leaves the new holder's lease alone.
func leaseSuiteLostStolen(t *testing.T, b Backend, cred string) {
	lk := b.(leaseLocker)
	ttl := 300 * time.Millisecond
	a, err := acquireLease(testCtx(t), lk, leaseID{cred, "US"}, ttl, 700*time.Millisecond, "host-a pid 1") // renews too late
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release(context.Background())
	time.Sleep(ttl + 50*time.Millisecond)
	mustTryLock(t, lk, leaseID{cred, "US"}, "tokB host-b pid 2", time.Minute, true)
	notLost(t, a)
	waitLost(t, a, 2*time.Second)
	if err := a.Release(testCtx(t)); err != nil {
		t.Fatalf("Release of a lost lease: %v", err)
	}
	holder, _ := mustTryLock(t, lk, leaseID{cred, "US"}, "tokC host-c", time.Minute, false)
	if holder != "host-b pid 2" {
		t.Fatalf("after the lost lease's Release the holder is %q, want host-b pid 2", holder)
	}
}

// A lease freed underneath its holder (here by its own token, as an
// operator clearing it would) and taken by another is lost at the next
// renewal (every ttl/3 with AcquireLease).
func leaseSuiteLostTaken(t *testing.T, b Backend, cred string) {
	l := leaseLimiter(t, b)
	lk := b.(leaseLocker)
	ttl := 600 * time.Millisecond
	a := mustAcquire(t, l, cred, "US", ttl, "host-a pid 1")
	if err := lk.Unlock(testCtx(t), a.id, a.token); err != nil {
		t.Fatal(err)
	}
	c := mustAcquire(t, l, cred, "US", ttl, "host-c pid 3")
	waitLost(t, a, ttl)
	notLost(t, c)
	time.Sleep(ttl) // c keeps renewing; a's renewal stopped
	_, err := l.AcquireLease(testCtx(t), cred, "US", ttl, "host-d pid 4")
	mustBeHeld(t, err, cred, "US", "host-c pid 3", ttl)
}

func leaseSuiteBadArgs(t *testing.T, b Backend, cred string) {
	l := leaseLimiter(t, b)
	ctx := testCtx(t)
	for _, c := range []struct {
		cred, region string
		ttl          time.Duration
	}{{"", "US", time.Second}, {cred, "", time.Second}, {cred, "U:S", time.Second}, {cred, "US", time.Millisecond}} {
		if lease, err := l.AcquireLease(ctx, c.cred, c.region, c.ttl, "h"); err == nil || errors.Is(err, ErrUnavailable) {
			if lease != nil {
				lease.Release(ctx)
			}
			t.Errorf("AcquireLease(%q, %q, %v) = %v, want an argument error", c.cred, c.region, c.ttl, err)
		}
	}
}

func TestSQLiteLeaseSuite(t *testing.T) {
	t.Parallel()
	runLeaseSuite(t, func(t *testing.T) Backend { return newTestSQLite(t) })
}

// One SQLite file shared by every subtest, as every cron job of a host shares it.
func TestSQLiteLeaseSuiteShared(t *testing.T) {
	t.Parallel()
	b := newTestSQLite(t)
	runLeaseSuite(t, func(t *testing.T) Backend { return b })
}

func TestRedisLeaseSuite(t *testing.T) {
	srv := redistest.Start(t)
	b := newTestRedis(t, srv)
	runLeaseSuite(t, func(t *testing.T) Backend { return b })
}

func TestRedisClusterLeaseSuite(t *testing.T) {
	skipIfShort(t, "starts a Redis Cluster")
	b := newTestRedisCluster(t, startCluster(t, 3))
	runLeaseSuite(t, func(t *testing.T) Backend { return b })
}

// The Redis layout: trendfetch:{<credential>}:lease:<region>, value = token
// (random id and holder), PX = ttl; Reset of the credential (usage) keeps it.
func TestRedisLeaseKey(t *testing.T) {
	srv := redistest.Start(t)
	b := newTestRedis(t, srv)
	l := leaseLimiter(t, b)
	a := mustAcquire(t, l, "keys", "US", 2*time.Minute, "host-a pid 7")
	key := "trendfetch:{keys}:lease:US"
	if got := srv.Do("GET", key); got != a.token || !strings.HasSuffix(got, " host-a pid 7") {
		t.Fatalf("GET %s = %q, want the token %q ending in the holder", key, got, a.token)
	}
	if pttl, _ := strconv.Atoi(srv.Do("PTTL", key)); pttl <= 110_000 || pttl > 120_000 {
		t.Fatalf("PTTL %s = %d ms, want about 120000", key, pttl)
	}
	if err := b.Reset(testCtx(t), "keys"); err != nil {
		t.Fatal(err)
	}
	if got := srv.Do("EXISTS", key); got != "1" {
		t.Fatalf("EXISTS after Reset = %s: a reset of usage must not free a running job's lease", got)
	}
	// A bad credential name is refused before Redis.
	if _, _, _, err := b.TryLock(testCtx(t), leaseID{"a}b", "US"}, "t", time.Second); err == nil || errors.Is(err, ErrUnavailable) {
		t.Fatalf("TryLock with credential a}b = %v, want a name error", err)
	}
}

// A dead Redis: AcquireLease fails fast with ErrUnavailable (the caller
// applies its policy), and a held lease whose renewals keep failing is
// reported lost before it can have expired.
func TestRedisLeaseUnavailable(t *testing.T) {
	srv := redistest.Start(t)
	b := newTestRedis(t, srv)
	l := leaseLimiter(t, b)
	ttl := 900 * time.Millisecond
	a := mustAcquire(t, l, "down", "US", ttl, "host-a pid 1")
	killed := time.Now()
	srv.Kill()
	waitLost(t, a, 2*ttl)
	if took := time.Since(killed); took > ttl {
		t.Errorf("lost after %v, want before the ttl %v", took, ttl)
	}
	if !errors.Is(a.Err(), ErrUnavailable) {
		t.Errorf("Err() = %v, want ErrUnavailable", a.Err())
	}
	start := time.Now()
	_, err := l.AcquireLease(context.Background(), "down", "GB", ttl, "host-a pid 1")
	if !errors.Is(err, ErrUnavailable) || time.Since(start) > time.Second {
		t.Fatalf("AcquireLease with Redis killed = %v after %v, want ErrUnavailable within 1s", err, time.Since(start))
	}
	if err := a.Release(context.Background()); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Release with Redis killed = %v, want ErrUnavailable", err)
	}
}

func TestSQLiteLeaseUnavailable(t *testing.T) {
	b, err := NewSQLite(filepath.Join(t.TempDir(), "q.db"), false)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	_, err = leaseLimiter(t, b).AcquireLease(context.Background(), "c", "US", time.Second, "h")
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("AcquireLease on a closed backend = %v, want ErrUnavailable", err)
	}
	lk := b.(leaseLocker)
	if _, err := lk.Renew(context.Background(), leaseID{"c", "US"}, "t", time.Second); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Renew on a closed backend = %v, want ErrUnavailable", err)
	}
	if err := lk.Unlock(context.Background(), leaseID{"c", "US"}, "t"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Unlock on a closed backend = %v, want ErrUnavailable", err)
	}
}

// The embedded backend decides with its clock: the lease is held until
// exactly expires_us and free from then on.
func TestSQLiteLeaseClock(t *testing.T) {
	clock := newFakeClock(time.Date(2026, 3, 8, 1, 59, 0, 0, time.UTC))
	b := WithClock(newTestSQLite(t), clock.Now)
	name := leaseID{"c", "US"}
	mustTryLock(t, b, name, "a host-a", 2*time.Minute, true)
	clock.Advance(2*time.Minute - time.Microsecond)
	if _, rem := mustTryLock(t, b, name, "b host-b", time.Minute, false); rem != time.Microsecond {
		t.Fatalf("remaining = %v, want 1µs", rem)
	}
	clock.Advance(time.Microsecond)
	mustTryLock(t, b, name, "b host-b", time.Minute, true)
	var holder string
	var exp int64
	if err := b.db.QueryRow(`SELECT holder, expires_us FROM leases WHERE name = ?`, name.name()).Scan(&holder, &exp); err != nil {
		t.Fatal(err)
	}
	if holder != "host-b" || exp != clock.Now().Add(time.Minute).UnixMicro() {
		t.Fatalf("row = %q, %d", holder, exp)
	}
	if err := b.Unlock(context.Background(), name, "b host-b"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := b.db.QueryRow(`SELECT count(*) FROM leases`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("rows after Unlock = %d, %v", n, err)
	}
}

func TestLeaseHeldErrorMessage(t *testing.T) {
	for _, c := range []struct {
		rem  time.Duration
		want string
	}{
		{90*time.Second + 300*time.Millisecond, `region US of credential "default" is already being run by host-a pid 123 (lease expires in 1m30s)`},
		{1234567 * time.Microsecond, `region US of credential "default" is already being run by host-a pid 123 (lease expires in 1s)`},
		{250500 * time.Microsecond, `region US of credential "default" is already being run by host-a pid 123 (lease expires in 251ms)`},
		{0, `region US of credential "default" is already being run by host-a pid 123`},
	} {
		e := &LeaseHeldError{Credential: "default", Region: "US", Holder: "host-a pid 123", Remaining: c.rem}
		if got := e.Error(); got != c.want {
			t.Errorf("Remaining %v: %q, want %q", c.rem, got, c.want)
		}
	}
}

// --- cross-process: a crashed holder's lease expires after its ttl ---------

// Child side, selected by QUOTA_TEST_HELPER=lease (see procs_test.go for the
// pattern) with QUOTA_TEST_BACKEND, QUOTA_TEST_CREDENTIAL and
// QUOTA_TEST_LEASE_TTL_MS: it takes the lease of region US with renewal,
// prints "HELD <holder>" and runs until killed (exit 3 if the lease is lost).
const envLeaseTTL = "QUOTA_TEST_LEASE_TTL_MS"

// envLeaseHolder is the helper's holder description ("": this process).
const envLeaseHolder = "QUOTA_TEST_LEASE_HOLDER"

func TestLeaseHelperProcess(t *testing.T) {
	if os.Getenv(envHelper) != "lease" {
		return
	}
	if err := leaseChild(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "lease helper:", err)
		os.Exit(1)
	}
	os.Exit(3)
}

func leaseChild(stdout io.Writer) error {
	ms, err := strconv.Atoi(os.Getenv(envLeaseTTL))
	if err != nil {
		return fmt.Errorf("%s: %w", envLeaseTTL, err)
	}
	b, err := openProcBackend(os.Getenv(envBackend))
	if err != nil {
		return err
	}
	defer b.Close()
	l, err := New(b, []Bucket{{Name: "units", Limit: 10, Window: time.Hour}}, nil)
	if err != nil {
		return err
	}
	lease, err := l.AcquireLease(context.Background(), os.Getenv(envCredential), "US", time.Duration(ms)*time.Millisecond, os.Getenv(envLeaseHolder))
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, "HELD "+lease.Holder())
	<-lease.Lost()
	return fmt.Errorf("lease lost: %w", lease.Err())
}

// runLeaseCrash: a child process holds the lease (renewing it past several
// ttls) and is killed with SIGKILL. As a holder of another host (foreign),
// the parent acquires only once the child's last renewal has expired,
// within ttl of the kill; as this host's process, the parent takes the
// lease over at once (the stale rule, lease.go staleHolder).
func runLeaseCrash(t *testing.T, backendSpec string, foreign bool) {
	t.Helper()
	b, err := openProcBackend(backendSpec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	l := leaseLimiter(t, b)
	cred := suiteCredential(t, b)
	const ttl = time.Second

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestLeaseHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(),
		envHelper+"=lease",
		envBackend+"="+backendSpec,
		envCredential+"="+cred,
		envLeaseTTL+"="+strconv.Itoa(int(ttl/time.Millisecond)),
	)
	if foreign {
		cmd.Env = append(cmd.Env, envLeaseHolder+"=other-host pid 1")
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HELD ") {
		cmd.Wait()
		t.Fatalf("helper: %q, %v; stderr:\n%s", line, err, stderr.String())
	}
	childHolder := strings.TrimSpace(strings.TrimPrefix(line, "HELD "))
	if !foreign && !strings.Contains(childHolder, " pid "+strconv.Itoa(cmd.Process.Pid)+" since ") {
		t.Fatalf("child holder %q does not name its pid %d", childHolder, cmd.Process.Pid)
	}

	// The child renews: its lease outlives several ttls.
	for range 3 {
		time.Sleep(ttl)
		_, err := l.AcquireLease(ctx, cred, "US", ttl, "parent")
		mustBeHeld(t, err, cred, "US", childHolder, ttl)
	}

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	killed := time.Now()
	if !foreign {
		lease, err := l.AcquireLease(ctx, cred, "US", ttl, "parent")
		if err != nil {
			t.Fatalf("after killing this host's holder: %v; want its lease taken over at once", err)
		}
		if lease.TookOver() != childHolder {
			t.Fatalf("took over %q, want %q", lease.TookOver(), childHolder)
		}
		lease.Release(ctx)
		return
	}
	_, err = l.AcquireLease(ctx, cred, "US", ttl, "parent")
	held := mustBeHeld(t, err, cred, "US", childHolder, ttl)
	expires := killed.Add(held.Remaining)

	var lease *runLease
	for lease == nil {
		if time.Since(killed) > ttl+time.Second {
			t.Fatalf("the killed child's lease still held %v after the kill (ttl %v)", time.Since(killed), ttl)
		}
		time.Sleep(10 * time.Millisecond)
		lease, err = l.AcquireLease(ctx, cred, "US", ttl, "parent")
		var h *LeaseHeldError
		if err != nil && !errors.As(err, &h) {
			t.Fatal(err)
		}
	}
	acquired := time.Now()
	defer lease.Release(context.Background())
	// Never before the child's lease expired (the clock is shared on one host;
	// 5 ms of slack for the rounding of PTTL to milliseconds).
	if acquired.Before(expires.Add(-5 * time.Millisecond)) {
		t.Fatalf("acquired %v after the kill, before the child's lease expired (%v after the kill)", acquired.Sub(killed), held.Remaining)
	}
	t.Logf("%s: child %q killed; its lease had %v left; parent acquired %v after the kill (ttl %v)",
		strings.SplitN(backendSpec, ":", 2)[0], childHolder, held.Remaining.Round(time.Millisecond), acquired.Sub(killed).Round(time.Millisecond), ttl)
}

func TestSQLiteLeaseCrashedHolder(t *testing.T) {
	skipIfShort(t, "multi-process test")
	t.Parallel()
	for _, foreign := range []bool{true, false} {
		runLeaseCrash(t, "sqlite:"+filepath.Join(t.TempDir(), "quota.db"), foreign)
	}
}

func TestRedisLeaseCrashedHolder(t *testing.T) {
	skipIfShort(t, "multi-process test")
	srv := redistest.Start(t)
	for _, foreign := range []bool{true, false} {
		runLeaseCrash(t, "redis:"+srv.URL(), foreign)
	}
}
