package quota

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Run leases (docs/design.md §5: two runs of the same region never overlap): a
// named lock with a time to live, kept in the quota backend so that every
// process and host sharing the limiter shares the locks (lease_sqlite.go,
// lease_redis.go). A crashed holder stops renewing and its lease expires
// ttl after the last renewal; a holder that is a process of this host that
// is gone is stale and taken over at once (lease_holder.go). Backend
// failures wrap ErrUnavailable and take nothing: the caller may run without
// a lease (fail-open) or give up.

// leaseLocker is the lease store of a backend (*sqliteBackend,
// *redisBackend). id names the lease; token is
// "<random id> <holder>", unique per acquisition, and the holder reported to
// others is the text after the first space (leaseHolderOf). ttl is rounded
// up to whole milliseconds.
type leaseLocker interface {
	// TryLock takes the lease for ttl if it is free, expired or already
	// held with token (then it is extended). It returns acquired = true with
	// the caller's own holder and remaining = ttl, or false with the
	// current holder and the time until its lease expires (0 if unknown).
	TryLock(ctx context.Context, id leaseID, token string, ttl time.Duration) (acquired bool, holder string, remaining time.Duration, err error)
	// Renew extends the lease to ttl from now if it is still held with
	// token and not expired; false means it was lost and is not re-taken.
	Renew(ctx context.Context, id leaseID, token string, ttl time.Duration) (bool, error)
	// Unlock frees the lease only if it is still held with token.
	Unlock(ctx context.Context, id leaseID, token string) error
	// Leases returns the unexpired leases of credential, by region.
	Leases(ctx context.Context, credential string) ([]LeaseInfo, error)
	// BreakLease frees lease id only if it is held by holder (as TryLock
	// or Leases reported it) and reports whether it did.
	BreakLease(ctx context.Context, id leaseID, holder string) (bool, error)
}

var (
	_ leaseLocker = (*sqliteBackend)(nil)
	_ leaseLocker = (*redisBackend)(nil)
)

// leaseID names the run lease of (credential, region). region never
// contains ':' (region codes never do).
type leaseID struct{ credential, region string }

// leaseHolderOf returns the holder of a token: the text after the first
// space, or the whole token when it has none.
func leaseHolderOf(token string) string {
	if _, h, ok := strings.Cut(token, " "); ok && h != "" {
		return h
	}
	return token
}

// leases returns the backend's lease store, or an error when it has none.
func (l *Limiter) leases() (leaseLocker, error) {
	if lk, ok := l.backend.(leaseLocker); ok {
		return lk, nil
	}
	return nil, fmt.Errorf("quota: backend %s does not support run leases", l.backend.Name())
}

// LeaseInfo is one held (unexpired) run lease.
type LeaseInfo struct {
	// Credential and Region name the lease.
	Credential, Region string
	// Holder describes the holder, e.g. "host-a pid 123 since 2026-11-23T07:00:00Z".
	Holder string
	// stored is the holder as the lease stores it, which BreakLease matches.
	stored string
	// Remaining is the time until the lease expires unless renewed (0 if unknown).
	Remaining time.Duration
}

// Leases returns the held run leases of credential, by region. Backend
// failures wrap ErrUnavailable.
func (l *Limiter) Leases(ctx context.Context, credential string) ([]LeaseInfo, error) {
	lk, err := l.leases()
	if err != nil {
		return nil, err
	}
	return lk.Leases(ctx, credential)
}

// BreakLease frees the run lease li (from Leases) if its holder still holds
// it and reports whether it did. Use it only when the holder is known to be
// gone: a live holder loses its lease at its next renewal and stops.
// Backend failures wrap ErrUnavailable.
func (l *Limiter) BreakLease(ctx context.Context, li LeaseInfo) (bool, error) {
	lk, err := l.leases()
	if err != nil {
		return false, err
	}
	if li.stored == "" {
		return false, errors.New("quota: break lease: empty holder")
	}
	return lk.BreakLease(ctx, leaseID{li.Credential, li.Region}, li.stored)
}

// LeaseHeldError is returned by AcquireLease when another holder has the
// lease (use errors.As). It is not a backend failure: the backend answered.
type LeaseHeldError struct {
	// Credential and Region name the lease.
	Credential, Region string
	// Holder describes the current holder, e.g. "host-a pid 123 since
	// 2026-11-23T07:00:00Z".
	Holder string
	// Remaining is the time until the holder's lease expires unless renewed
	// (0 if unknown).
	Remaining time.Duration
}

// Error implements error, e.g.
// `region US of credential "default" is already being run by host-a pid 123 (lease expires in 1m30s)`.
func (e *LeaseHeldError) Error() string {
	msg := fmt.Sprintf("region %s of credential %q is already being run by %s", e.Region, e.Credential, e.Holder)
	if e.Remaining > 0 {
		r := e.Remaining.Round(time.Millisecond)
		if e.Remaining >= time.Second {
			r = e.Remaining.Round(time.Second)
		}
		msg += fmt.Sprintf(" (lease expires in %s)", r)
	}
	return msg
}

// errLeaseLost is the cause reported by runLease.Err when a renewal found the
// lease expired or taken by another holder.
var errLeaseLost = errors.New("quota: run lease lost")

// runLease is a held run lease of (credential, region), renewed in the
// background until Release. It is safe for concurrent use.
type runLease struct {
	locker     leaseLocker
	id         leaseID
	token      string
	owner      string
	ttl, every time.Duration
	// tookOver describes the stale holder this lease replaced ("" if none).
	tookOver string

	stopCtx context.Context // cancelled by Release: stops the renewal, even mid-call
	stop    context.CancelFunc
	done    chan struct{} // closed when the renewal goroutine has returned
	lost    chan struct{} // closed when the lease is lost, after lostErr is set
	lostErr error

	releaseOnce sync.Once
	releaseErr  error
}

// AcquireLease takes the run lease of (credential, region) for ttl and renews
// it every ttl/3 until Release, which the caller must call; the run should
// stop when Lost closes. holder describes this run for others (no secrets);
// "" means this process (lease_holder.go). A stale holder's lease is taken
// over at once (TookOver says whose). Errors: *LeaseHeldError when another
// holder has an unexpired lease; ErrUnavailable wrapped when the backend
// cannot be reached (nothing is held); others for an empty credential or
// region, a region with ':', ttl < 3ms or a backend without leases.
func (l *Limiter) AcquireLease(ctx context.Context, credential, region string, ttl time.Duration, holder string) (*runLease, error) {
	lk, err := l.leases()
	if err != nil {
		return nil, err
	}
	if ttl < 3*time.Millisecond {
		return nil, fmt.Errorf("quota: lease ttl %s must be at least 3ms", ttl)
	}
	return acquireLease(ctx, lk, credential, region, ttl, ttl/3, holder)
}

// acquireLease is AcquireLease with the renewal period every (0: never renew,
// for tests).
func acquireLease(ctx context.Context, locker leaseLocker, credential, region string, ttl, every time.Duration, holder string) (*runLease, error) {
	if credential == "" {
		return nil, errors.New("quota: lease: empty credential name")
	}
	if region == "" || strings.ContainsRune(region, ':') {
		return nil, fmt.Errorf("quota: lease: region %q must be non-empty without ':'", region)
	}
	if holder == "" {
		holder = thisHolder(time.Now())
	}
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, fmt.Errorf("quota: lease token: %w", err)
	}
	lease := &runLease{
		locker: locker,
		id:     leaseID{credential, region},
		token:  hex.EncodeToString(id[:]) + " " + holder,
		owner:  holder,
		ttl:    ttl,
		every:  every,
		done:   make(chan struct{}),
		lost:   make(chan struct{}),
	}
	start := time.Now()
	ok, other, remaining, err := locker.TryLock(ctx, lease.id, lease.token, ttl)
	if err == nil && !ok && staleHolder(other) {
		if broke, berr := locker.BreakLease(ctx, lease.id, other); berr == nil && broke {
			lease.tookOver = describeHolder(other)
		}
		ok, other, remaining, err = locker.TryLock(ctx, lease.id, lease.token, ttl)
	}
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &LeaseHeldError{Credential: credential, Region: region, Holder: describeHolder(other), Remaining: remaining}
	}
	lease.stopCtx, lease.stop = context.WithCancel(context.Background())
	go lease.renew(start)
	return lease, nil
}

// renew extends the lease every l.every until Release; acquired is the
// local time just before the successful TryLock. The lease is lost when a
// renewal answers false, or when renewals keep failing until the next
// attempt would come after the lease may have expired.
func (l *runLease) renew(acquired time.Time) {
	defer close(l.done)
	if l.every <= 0 {
		return
	}
	t := time.NewTicker(l.every)
	defer t.Stop()
	lastOK := acquired // start of the last successful renewal: expiry >= lastOK + ttl
	for {
		select {
		case <-l.stopCtx.Done():
			return
		case <-t.C:
		}
		start := time.Now()
		ctx, cancel := context.WithTimeout(l.stopCtx, l.every)
		ok, err := l.locker.Renew(ctx, l.id, l.token, l.ttl)
		cancel()
		switch {
		case l.stopCtx.Err() != nil:
			return // released meanwhile: the outcome no longer matters
		case err == nil && ok:
			lastOK = start
			continue
		case err == nil:
			l.lostErr = fmt.Errorf("%w: region %s of credential %q expired or was taken by another run", errLeaseLost, l.id.region, l.id.credential)
		case time.Now().Add(l.every).Before(lastOK.Add(l.ttl)):
			continue // a failed renewal with time left: try again at the next tick
		default:
			l.lostErr = fmt.Errorf("%w: region %s of credential %q could not be renewed before its ttl %s: %w", errLeaseLost, l.id.region, l.id.credential, l.ttl, err)
		}
		close(l.lost)
		return
	}
}

// Lost returns a channel closed when the lease is lost (see renew): the run
// should stop, another run of the region may start. Release does not close it.
func (l *runLease) Lost() <-chan struct{} { return l.lost }

// Err returns why the lease was lost (wrapping errLeaseLost, and
// ErrUnavailable when renewals failed), or nil while it is not lost.
func (l *runLease) Err() error {
	select {
	case <-l.lost:
		return l.lostErr
	default:
		return nil
	}
}

// Holder returns this holder's description, as others see it.
func (l *runLease) Holder() string { return describeHolder(l.owner) }

// TookOver describes the stale holder (a process of this host that is gone)
// whose lease AcquireLease broke and took, or "" when the lease was free.
func (l *runLease) TookOver() string { return l.tookOver }

// Release stops the renewal and frees the lease if it is still ours. Later
// calls return the first call's result. A backend failure wraps
// ErrUnavailable; the lease then expires by itself after at most its ttl.
func (l *runLease) Release(ctx context.Context) error {
	l.releaseOnce.Do(func() {
		l.stop()
		<-l.done
		l.releaseErr = l.locker.Unlock(ctx, l.id, l.token)
	})
	return l.releaseErr
}
