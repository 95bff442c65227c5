package quota

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/trendfetch/trendfetch/internal/exitcode"
	"github.com/trendfetch/trendfetch/internal/proc"
)

// leaseLocker is the run lease store of a backend (two runs of a region never overlap:
// docs/design.md §5; docs/quota.md, "Run leases"). id names the lease; token is
// "<random id> <holder>", unique per acquisition (leaseHolderOf). ttl is rounded up to whole ms.
type leaseLocker interface {
	// TryLock takes the lease for ttl if it is free, expired or held with
	// token, and returns its holder and the time until it expires (0: unknown).
	TryLock(ctx context.Context, id leaseID, token string, ttl time.Duration) (acquired bool, holder string, remaining time.Duration, err error)
	// Renew extends the lease to ttl from now if still held with token.
	Renew(ctx context.Context, id leaseID, token string, ttl time.Duration) (bool, error)
	// Unlock frees the lease only if it is still held with token.
	Unlock(ctx context.Context, id leaseID, token string) error
	// Leases returns the unexpired leases of credential, by region.
	Leases(ctx context.Context, credential string) ([]LeaseInfo, error)
	// BreakLease frees lease id only if it is held by holder.
	BreakLease(ctx context.Context, id leaseID, holder string) (bool, error)
}

// leaseID names the run lease of (credential, region without ':').
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

// LeaseInfo is one unexpired run lease: its Holder for people, e.g. "host-a pid 123 since
// 2026-11-23T07:00:00Z", and the time Remaining until it expires unless renewed (0: unknown).
type LeaseInfo struct {
	Credential, Region, Holder string
	stored                     string // the holder as stored, which BreakLease matches
	Remaining                  time.Duration
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
// it, for a holder known to be gone. Backend failures wrap ErrUnavailable.
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
// lease (not a backend failure); fields as LeaseInfo's.
type LeaseHeldError struct {
	Credential, Region, Holder string
	Remaining                  time.Duration
}

// ExitCode is exitcode.Running: the region is being run elsewhere; nothing done.
func (e *LeaseHeldError) ExitCode() int { return exitcode.Running }

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

// errLeaseLost is wrapped by runLease.Err when the lease was lost.
var errLeaseLost = errors.New("quota: run lease lost")

// runLease is a held run lease of (credential, region), renewed in the
// background until Release. It is safe for concurrent use.
type runLease struct {
	locker     leaseLocker
	id         leaseID
	token      string // "<random id> <holder>"
	ttl, every time.Duration
	tookOver   string // the stale holder this lease replaced ("" if none)

	stopCtx context.Context // cancelled by Release: stops the renewal, even mid-call
	stop    context.CancelFunc
	done    chan struct{} // closed when the renewal goroutine has returned
	lost    chan struct{} // closed when the lease is lost, after lostErr is set
	lostErr error

	releaseOnce sync.Once
	releaseErr  error
}

// AcquireLease takes the run lease of (credential, region) for ttl, renewed every ttl/3 until
// Release; the run should stop when Lost closes. holder describes this run ("": this process); a
// stale holder's lease is taken over (TookOver). Errors: *LeaseHeldError, ErrUnavailable wrapped,
// bad arguments (ttl < 3ms, a region with ':') or a backend without leases.
func (l *Limiter) AcquireLease(ctx context.Context, credential, region string, ttl time.Duration, holder string) (*runLease, error) {
	lk, err := l.leases()
	if err != nil {
		return nil, err
	}
	if ttl < 3*time.Millisecond {
		return nil, fmt.Errorf("quota: lease ttl %s must be at least 3ms", ttl)
	}
	return acquireLease(ctx, lk, leaseID{credential, region}, ttl, ttl/3, holder)
}

// acquireLease is AcquireLease renewing every every (0: never, for tests).
func acquireLease(ctx context.Context, locker leaseLocker, id leaseID, ttl, every time.Duration, holder string) (*runLease, error) {
	credential, region := id.credential, id.region
	if credential == "" {
		return nil, errors.New("quota: lease: empty credential name")
	}
	if region == "" || strings.ContainsRune(region, ':') {
		return nil, fmt.Errorf("quota: lease: region %q must be non-empty without ':'", region)
	}
	if holder == "" {
		holder = thisHolder(time.Now())
	}
	var token [16]byte
	if _, err := rand.Read(token[:]); err != nil {
		return nil, fmt.Errorf("quota: lease token: %w", err)
	}
	lease := &runLease{locker: locker, id: id, token: hex.EncodeToString(token[:]) + " " + holder,
		ttl: ttl, every: every, done: make(chan struct{}), lost: make(chan struct{})}
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

// renew extends the lease every l.every from acquired (just before TryLock)
// until Release; lost when a renewal answers false or fails until it may have expired.
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
// should stop. Release does not close it.
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

// TookOver describes the stale holder whose lease AcquireLease took, or "".
func (l *runLease) TookOver() string { return l.tookOver }

// Release stops the renewal and frees the lease if it is still ours; later
// calls return the first call's result. Backend failures wrap ErrUnavailable.
func (l *runLease) Release(ctx context.Context) error {
	l.releaseOnce.Do(func() {
		l.stop()
		<-l.done
		l.releaseErr = l.locker.Unlock(ctx, l.id, l.token)
	})
	return l.releaseErr
}

// leaseHolder, stored as JSON (docs/quota.md, "Run leases"), identifies the
// process holding a run lease: host, pid, boot id, PID namespace and start (clock
// ticks after boot; "" and 0: unknown), and when it asked (for people only: clocks step).
type leaseHolder struct {
	Host       string    `json:"host"`
	PID        int       `json:"pid"`
	BootID     string    `json:"boot_id,omitempty"`
	PIDNS      string    `json:"pid_ns,omitempty"`
	StartTicks uint64    `json:"start_ticks,omitempty"`
	Since      time.Time `json:"since"`
}

// thisHolder returns the stored holder of this process asking at since.
func thisHolder(since time.Time) string {
	host, _ := os.Hostname()
	h := leaseHolder{Host: cmp.Or(host, "unknown-host"), PID: os.Getpid(), BootID: proc.BootID(), PIDNS: proc.PIDNamespace(),
		StartTicks: proc.StartTicks(os.Getpid()), Since: since.UTC().Truncate(time.Second)}
	b, _ := json.Marshal(h) // cannot fail: strings, integers and a time
	return string(b)
}

// parseHolder decodes a stored holder description; ok is false for one not written by thisHolder.
func parseHolder(desc string) (h leaseHolder, ok bool) {
	if json.Unmarshal([]byte(desc), &h) != nil || h.Host == "" || h.PID <= 0 {
		return leaseHolder{}, false
	}
	return h, true
}

// describeHolder is a stored holder description for people, e.g.
// "host-a pid 123 since 2026-11-23T07:00:00Z" (other descriptions as they are).
func describeHolder(desc string) string {
	h, ok := parseHolder(desc)
	if !ok {
		return desc
	}
	return fmt.Sprintf("%s pid %d since %s", h.Host, h.PID, h.Since.UTC().Format(time.RFC3339))
}

// staleHolder is restic's stale rule: desc names a process of this host, boot
// and PID namespace, not this one, that is gone (proc.Gone); unsure: not stale.
func staleHolder(desc string) bool {
	h, ok := parseHolder(desc)
	host, _ := os.Hostname()
	return ok && h.Host == host && h.BootID != "" && h.BootID == proc.BootID() && h.PIDNS != "" &&
		h.PIDNS == proc.PIDNamespace() && h.PID != os.Getpid() && proc.Gone(h.PID, h.StartTicks)
}
